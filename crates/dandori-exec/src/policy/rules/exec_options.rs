//! Options whose value is a command line the tool runs (`tar --to-command`,
//! `rsync -e`, `ssh -o ProxyCommand=…`, `cargo --config target.x.runner=…`,
//! `make SHELL=…`, `vim -c ':!…'`).
//!
//! Hostile lines: class `exec_options` of `tests/fixtures/policy/hostile.txt`.

/// The linker rustc's codegen option at `tokens[i]` names: `-Clinker=X`, or `-C`
/// followed by `linker=X` (argv words, or the words of `RUSTFLAGS`).
pub(crate) fn linker_at<S: AsRef<str>>(tokens: &[S], i: usize) -> Option<&str> {
    let t = tokens.get(i)?.as_ref();
    t.strip_prefix("-Clinker=").or_else(|| {
        (t == "-C")
            .then(|| {
                tokens
                    .get(i + 1)
                    .and_then(|n| n.as_ref().strip_prefix("linker="))
            })
            .flatten()
    })
}

/// Options whose value is a command line the tool runs (`tar --to-command`,
/// `tar -I`, `--checkpoint-action=exec=…`, `zip -TT`, `rsync -e`, `ssh -o
/// ProxyCommand=…`, `man -P`, `vim -c ':!…'`): `(option, command)` pairs.
pub(crate) fn exec_option_values(base: &str, args: &[String]) -> Vec<(String, String)> {
    let opts: &[&str] = match base {
        "tar" | "gtar" | "bsdtar" => &[
            "--to-command",
            "--use-compress-program",
            "-I",
            "--info-script",
            "--new-volume-script",
            "-F",
            "--rsh-command",
            "--rmt-command",
        ],
        "zip" => &["-TT", "--unzip-command"],
        "rsync" => &["-e", "--rsh", "--rsync-path"],
        "man" => &["-P", "--pager", "-H", "--html"],
        "go" => &["-toolexec", "-exec", "-vettool"],
        "npm" | "pnpm" | "yarn" => &[
            "--script-shell",
            "--shell",
            "--git",
            "--editor",
            "--browser",
        ],
        "sort" => &["--compress-program"],
        _ => &[],
    };
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with('-') => (n, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        if opts.contains(&name)
            && let Some(v) = inline.or_else(|| args.get(i + 1).cloned())
        {
            out.push((name.to_string(), v));
        }
        // `cargo --config 'target.x.runner="…"'`, `rustc -C linker=…`, `make
        // SHELL=…`, `java -XX:OnError=…`: settings whose value is a program.
        if base == "cargo"
            && (a == "--config" || a.starts_with("--config="))
            && let Some(kv) = a
                .strip_prefix("--config=")
                .map(str::to_string)
                .or_else(|| args.get(i + 1).cloned())
            && let Some((k, v)) = kv.split_once('=')
            && [
                "runner",
                "linker",
                "rustc-wrapper",
                "rustc-workspace-wrapper",
                "rustc",
                "rustdoc",
            ]
            .iter()
            .any(|p| k.trim().ends_with(p))
        {
            out.push((
                format!("--config {}", k.trim()),
                v.trim().trim_matches('"').to_string(),
            ));
        }
        if matches!(base, "rustc" | "cargo")
            && let Some(v) = linker_at(args, i)
        {
            out.push(("-C linker".into(), v.to_string()));
        }
        if matches!(base, "make" | "gmake")
            && let Some((k, v)) = a.split_once('=')
            && matches!(
                k,
                "SHELL" | "MAKE" | "CC" | "CXX" | "LD" | "AR" | "CPP" | "FC"
            )
        {
            out.push((k.to_string(), v.to_string()));
        }
        // `cmake -DCMAKE_C_COMPILER_LAUNCHER=…`: cache variables that name a
        // program the build runs (`;` separates its arguments).
        if base == "cmake"
            && let Some(def) = (a == "-D")
                .then(|| args.get(i + 1).map(String::as_str))
                .flatten()
                .or_else(|| a.strip_prefix("-D"))
            && let Some((key, value)) = def.split_once('=')
        {
            let var = key.split(':').next().unwrap_or(key);
            let program = [
                "_LAUNCHER",
                "_COMPILER",
                "_CLANG_TIDY",
                "_CPPCHECK",
                "_CPPLINT",
                "_INCLUDE_WHAT_YOU_USE",
            ]
            .iter()
            .any(|s| var.ends_with(s))
                || matches!(
                    var,
                    "CMAKE_LINKER"
                        | "CMAKE_MAKE_PROGRAM"
                        | "CMAKE_CROSSCOMPILING_EMULATOR"
                        | "CMAKE_AR"
                        | "CMAKE_RANLIB"
                );
            if program {
                out.push((format!("-D{var}"), value.replace(';', " ")));
            }
        }
        if base == "java"
            && let Some(v) = a
                .strip_prefix("-XX:OnError=")
                .or_else(|| a.strip_prefix("-XX:OnOutOfMemoryError="))
        {
            out.push(("-XX:OnError".into(), v.to_string()));
        }
        if matches!(base, "tar" | "gtar" | "bsdtar")
            && let Some(v) = a.strip_prefix("--checkpoint-action=exec=")
        {
            out.push(("--checkpoint-action".into(), v.to_string()));
        }
        if base == "ssh" {
            let o = if a == "-o" {
                args.get(i + 1).map(String::as_str)
            } else {
                a.strip_prefix("-o")
            };
            if let Some((k, v)) = o.and_then(|o| o.split_once(['=', ' '])) {
                let k = k.to_ascii_lowercase();
                if k == "proxycommand" || k == "localcommand" || k == "knownhostscommand" {
                    out.push((format!("-o {k}"), v.to_string()));
                }
            }
        }
        if matches!(base, "vim" | "vi" | "nvim" | "ex" | "view")
            && let Some(c) = (a == "-c" || a == "--cmd")
                .then(|| args.get(i + 1))
                .flatten()
                .map(String::as_str)
                .or_else(|| a.strip_prefix('+'))
            && let Some(cmd) = c.trim_start_matches(':').strip_prefix('!')
        {
            out.push(("-c :!".into(), cmd.to_string()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::class_test;
    use crate::policy::codes::*;

    #[test]
    fn hostile_refused_legitimate_allowed() {
        class_test::check(
            &[
                (
                    "tar xf a.tar --to-command=\x27sh -c id\x27",
                    POLICY_PIPE_TO_SHELL,
                ),
                ("rsync -e \x27sh -c id\x27 a b", POLICY_PIPE_TO_SHELL),
                ("make SHELL=/tmp/sh test", POLICY_PIPE_TO_SHELL),
                (
                    "cargo --config \x27target.x86_64-unknown-linux-gnu.runner=\"sh\"\x27 test",
                    POLICY_PIPE_TO_SHELL,
                ),
            ],
            &[
                "make -j4 CXX=g++",
                "make CC=gcc all",
                "cargo --config profile.dev.opt-level=1 build",
            ],
        );
    }
}
