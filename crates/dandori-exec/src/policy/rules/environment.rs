//! Variable assignments (`NAME=value cmd`, `export`, `env NAME=value`): loader
//! and shell start-up variables, search paths, preload options, variables whose
//! value is a program, and registry or toolchain configuration.
//!
//! Hostile lines: classes `search_path`, `program_env` and `resolver` of
//! `tests/fixtures/policy/hostile.txt`.

use super::*;

/// Variables that choose where programs and modules are loaded from.
pub(crate) const SEARCH_PATHS: &[&str] = &[
    "PATH",
    "PYTHONPATH",
    "NODE_PATH",
    "PERL5LIB",
    "RUBYLIB",
    "CLASSPATH",
    "GOPATH",
];

pub(crate) const DANGEROUS_ENV: &[&str] = &[
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    "IFS",
    "SHELLOPTS",
    "PS4",
    "GCONV_PATH",
    "NODE_OPTIONS_PRELOAD",
];

/// Variables whose value is a command line a tool runs for itself (a pager, an
/// editor, a compiler, a wrapper): the value is checked as a command of its own.
pub(crate) const PROGRAM_ENV: &[&str] = &[
    "PAGER",
    "MANPAGER",
    "EDITOR",
    "VISUAL",
    "SSH_ASKPASS",
    "SUDO_ASKPASS",
    "BROWSER",
    "LESSOPEN",
    "LESSCLOSE",
    "CC",
    "CXX",
    "CPP",
    "LD",
    "AR",
    "FC",
    "CONFIG_SHELL",
    "MAKESHELL",
    "RUSTC",
    "RUSTDOC",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
];

/// Variables that make an interpreter load code before the program it runs: every
/// path in them must be inside the worktree.
pub(crate) const PRELOAD_ENV: &[&str] = &[
    "NODE_OPTIONS",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "RUBYOPT",
    "PERL5OPT",
    "PYTHONSTARTUP",
    "PYTHONHOME",
    "PYTHONUSERBASE",
];

pub(crate) fn check_assignment(name: &str) -> Result<(), PolicyViolation> {
    if DANGEROUS_ENV.contains(&name) || name.starts_with("DYLD_") {
        return Err(PolicyViolation::new(
            codes::POLICY_DANGEROUS_ENV,
            format!("setting `{name}` is refused"),
        ));
    }
    check_git_env(name)
}

impl CommandPolicy {
    /// One variable assignment (`NAME=value cmd`, `export`, `env NAME=value`):
    /// loader and shell start-up variables are refused, search paths and preload
    /// options must not reach outside the worktree, and a variable whose value is
    /// a command line (`PAGER`, `EDITOR`, `CC`, `RUSTC_WRAPPER`, npm's
    /// `script-shell`, …) is checked as that command.
    pub(crate) fn check_env(
        &self,
        name: &str,
        value: &str,
        st: &LineState,
        depth: usize,
    ) -> Result<(), PolicyViolation> {
        check_assignment(name)?;
        self.check_search_path(name, value, st)?;
        let lower = name.to_ascii_lowercase();
        let npm = lower
            .strip_prefix("npm_config_")
            .map(|k| k.replace('-', "_"));
        let cargo_program = name.starts_with("CARGO_")
            && ["_LINKER", "_RUNNER", "_WRAPPER", "_RUSTC", "_RUSTDOC"]
                .iter()
                .any(|s| name.ends_with(s));
        let program_valued = PROGRAM_ENV.contains(&name)
            || cargo_program
            || npm.as_deref().is_some_and(|k| {
                matches!(
                    k,
                    "script_shell" | "shell" | "editor" | "browser" | "git" | "viewer" | "call"
                )
            });
        let upper = name.to_ascii_uppercase();
        let registry = matches!(
            upper.as_str(),
            "PIP_INDEX_URL"
                | "PIP_EXTRA_INDEX_URL"
                | "PIP_FIND_LINKS"
                | "PIP_TRUSTED_HOST"
                | "UV_INDEX_URL"
                | "UV_EXTRA_INDEX_URL"
                | "UV_DEFAULT_INDEX"
                | "UV_INDEX"
                | "UV_FIND_LINKS"
                | "GOPROXY"
                | "GOPRIVATE"
                | "GONOPROXY"
                | "YARN_NPM_REGISTRY_SERVER"
                | "YARN_REGISTRY"
                | "BUNDLE_MIRROR__ALL"
                | "CONDA_CHANNELS"
        ) || npm.as_deref() == Some("registry")
            || upper.starts_with("CARGO_REGISTRIES_")
            || upper.starts_with("CARGO_SOURCE_")
            || upper.starts_with("BUNDLE_MIRROR__");
        if registry
            && (upper.ends_with("TRUSTED_HOST")
                || value
                    .split([',', ' ', '|'])
                    .any(|u| u.contains("://") && !is_loopback_url(u) && !u.starts_with("file://")))
        {
            return Err(PolicyViolation::new(
                codes::POLICY_REMOTE_CODE,
                format!(
                    "`{name}` points the package manager at `{value}`, not its configured registry"
                ),
            )
            .with_rule("remote-code"));
        }
        // Config files and checks that decide where packages come from and
        // whether they are verified.
        let config_file = matches!(
            upper.as_str(),
            "PIP_CONFIG_FILE"
                | "UV_CONFIG_FILE"
                | "MAKEFILES"
                | "GONOSUMDB"
                | "GONOSUMCHECK"
                | "GOINSECURE"
                | "GOTOOLCHAIN"
                | "RUSTUP_TOOLCHAIN"
                | "GOROOT"
                | "CARGO_HOME"
                | "RUSTUP_HOME"
                | "GIT_CONFIG_GLOBAL"
        ) || (upper == "GOSUMDB" && value.trim() == "off")
            || matches!(
                npm.as_deref(),
                Some("userconfig" | "globalconfig" | "global" | "prefix" | "location")
            );
        if config_file {
            return Err(PolicyViolation::new(
                codes::POLICY_DANGEROUS_ENV,
                format!("setting `{name}` changes where tools, packages or their checks come from"),
            )
            .with_rule("tool-config-env"));
        }
        if matches!(
            upper.as_str(),
            "RUSTFLAGS" | "CARGO_ENCODED_RUSTFLAGS" | "RUSTDOCFLAGS"
        ) {
            let tokens: Vec<&str> = value.split(['\u{1f}', ' ']).collect();
            for i in 0..tokens.len() {
                if let Some(l) = linker_at(&tokens, i) {
                    self.check_command_value(
                        &format!("`{name}` linker"),
                        l,
                        depth,
                        codes::POLICY_DANGEROUS_ENV,
                        "program-env",
                    )?;
                }
            }
        }
        if upper == "GOFLAGS"
            && ["-toolexec", "-exec", "-vettool", "-insecure", "-overlay"]
                .iter()
                .any(|f| value.contains(f))
        {
            return Err(PolicyViolation::new(
                codes::POLICY_DANGEROUS_ENV,
                format!("`GOFLAGS={value}` makes go run another program or skip its checks"),
            )
            .with_rule("program-env"));
        }
        if upper == "PYTHONBREAKPOINT"
            && !value.is_empty()
            && value != "0"
            && !value.starts_with("pdb")
        {
            return Err(PolicyViolation::new(
                codes::POLICY_DANGEROUS_ENV,
                format!("`PYTHONBREAKPOINT={value}` makes `breakpoint()` call it"),
            )
            .with_rule("program-env"));
        }
        if matches!(upper.as_str(), "MAKEFLAGS" | "MFLAGS" | "GNUMAKEFLAGS") {
            self.check_makeflags(name, value, depth)?;
        }
        if PRELOAD_ENV.contains(&name) || npm.as_deref() == Some("node_options") {
            self.check_preload(name, value, st)?;
        }
        if !program_valued {
            return Ok(());
        }
        self.check_command_value(
            &format!("`{name}`"),
            value,
            depth,
            codes::POLICY_DANGEROUS_ENV,
            "program-env",
        )
    }

    /// A value that a tool runs as a command line (a variable such as `PAGER`, an
    /// option such as `tar --to-command`): a shell, interpreter or wrapper there is
    /// refused with `code`; anything else is checked as the command it is.
    pub(crate) fn check_command_value(
        &self,
        what: &str,
        value: &str,
        depth: usize,
        code: &'static str,
        rule: &str,
    ) -> Result<(), PolicyViolation> {
        let command = value
            .trim()
            .trim_start_matches('|')
            .replace("%s", "")
            .trim()
            .to_string();
        if command.is_empty() {
            return Ok(());
        }
        let words = shell_words::split(&command).unwrap_or_default();
        let first = words.first().map(|w| basename(w)).unwrap_or("");
        let stem = version_stem(first);
        if SHELLS.contains(&first)
            || INTERPRETERS.contains(&stem)
            || EVAL.contains(&first)
            || WRAPPERS.contains(&first)
            || first.contains('$')
        {
            return Err(PolicyViolation::new(
                code,
                format!("{what} makes the tool run `{command}`, a shell, interpreter or computed program"),
            )
            .with_rule(rule));
        }
        match self.check_depth(&command, depth + 1) {
            Ok(_) => Ok(()),
            // A helper program missing from the allowlist (`PAGER=less`, `tar -I
            // zstd`, `make CC=clang`) runs only as the allowed tool's helper; a
            // path outside the places programs are installed is refused.
            Err(v) if v.code == codes::POLICY_NOT_ALLOWED => {
                let program = words.first().map(String::as_str).unwrap_or("");
                if program.contains('/') && !self.installed_place(program) {
                    Err(PolicyViolation::new(
                        code,
                        format!("{what} runs `{program}`, from outside the places programs are installed"),
                    )
                    .with_rule(rule))
                } else {
                    Ok(())
                }
            }
            Err(v) => Err(PolicyViolation::new(
                v.code,
                format!("{what} runs `{command}`: {}", v.message),
            )
            .with_rule(rule)),
        }
    }

    /// Preload options (`NODE_OPTIONS=--require …`, `-javaagent:…`, `RUBYOPT`,
    /// `PYTHONSTARTUP`): a path in them that is not inside the worktree would load
    /// code from somewhere anyone can write.
    pub(crate) fn check_preload(
        &self,
        name: &str,
        value: &str,
        st: &LineState,
    ) -> Result<(), PolicyViolation> {
        for token in value.split_whitespace() {
            // `--require=/x`, `-javaagent:/x.jar=opts`, or the value of the option
            // before (`--require /x`); `-Dname=value` is a property, not code.
            let body = if token.starts_with("-D") {
                continue;
            } else if token.starts_with('-') {
                match token.find(['=', ':']) {
                    Some(i) => &token[i + 1..],
                    // `-r/x.rb`, `-I/dir`: a short option with its value attached.
                    None if !token.starts_with("--") && token.len() > 2 => &token[2..],
                    None => continue,
                }
            } else {
                token
            };
            let path = body.split('=').next().unwrap_or(body);
            if path.starts_with('-') || !(path.contains('/') || path.starts_with('~')) {
                continue;
            }
            if path.contains('$') {
                return Err(PolicyViolation::new(
                    codes::POLICY_DANGEROUS_ENV,
                    format!("`{name}` loads `{path}`, which the policy cannot resolve"),
                )
                .with_rule("preload-env"));
            }
            if !matches!(paths::classify(path, st, &self.roots), paths::Place::Inside) {
                return Err(PolicyViolation::new(
                    codes::POLICY_DANGEROUS_ENV,
                    format!("`{name}` loads `{path}` from outside the worktree"),
                )
                .with_rule("preload-env"));
            }
        }
        Ok(())
    }

    /// A search path (`PATH`, `PYTHONPATH`, …) that takes programs or modules from
    /// the temp dirs or from above the worktree: anything written there earlier
    /// would run in place of the real tool.
    pub(crate) fn check_search_path(
        &self,
        name: &str,
        value: &str,
        st: &LineState,
    ) -> Result<(), PolicyViolation> {
        if !SEARCH_PATHS.contains(&name) {
            return Ok(());
        }
        for entry in value.split(':').filter(|d| !d.is_empty()) {
            // The variable's own value (`$PATH`) keeps its entries; `$HOME` and
            // `$PWD` are known; any other expansion could be anything.
            if [format!("${name}"), format!("${{{name}}}")].contains(&entry.to_string()) {
                continue;
            }
            let dir = ["$HOME", "${HOME}"]
                .iter()
                .find_map(|h| entry.strip_prefix(h).map(|r| format!("~{r}")))
                .or_else(|| {
                    ["$PWD", "${PWD}"]
                        .iter()
                        .find_map(|p| entry.strip_prefix(p).map(|r| format!(".{r}")))
                })
                .unwrap_or_else(|| entry.to_string());
            // Inside the worktree, or where programs are installed (a system
            // prefix, a toolchain directory of the home): anything else (`/tmp`,
            // `/var/x`, `/srv/x`, `~/x`, `..`) decides which program runs.
            if dir.contains('$') {
                return Err(PolicyViolation::new(
                    codes::POLICY_DANGEROUS_ENV,
                    format!(
                        "`{name}` takes `{entry}` first, a directory the policy cannot resolve"
                    ),
                )
                .with_rule("search-path"));
            }
            let place = paths::classify(&dir, st, &self.roots);
            let installed = self.installed_place(&format!("{}/x", dir.trim_end_matches('/')));
            if !matches!(place, paths::Place::Inside) && !installed {
                return Err(PolicyViolation::new(
                    codes::POLICY_DANGEROUS_ENV,
                    format!("`{name}` takes `{entry}` first, a directory outside the worktree and the places programs are installed"),
                )
                .with_rule("search-path"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::class_test;
    use crate::policy::codes::*;

    #[test]
    fn hostile_refused_legitimate_allowed() {
        class_test::check(
            &[
                ("PATH=/var/opt/tools:$PATH make", POLICY_DANGEROUS_ENV),
                ("export PATH=$HOME/bin:$PATH; pytest", POLICY_DANGEROUS_ENV),
                ("PATH=$EXTRA:$PATH pytest", POLICY_DANGEROUS_ENV),
                ("MAKEFLAGS=--eval=x make", POLICY_DANGEROUS_ENV),
                ("LD_PRELOAD=./hook.so pytest", POLICY_DANGEROUS_ENV),
                ("PYTHONPATH=../shared pytest", POLICY_DANGEROUS_ENV),
                ("PAGER=\"sh -c id\" git log", POLICY_DANGEROUS_ENV),
                (
                    "NODE_OPTIONS=--require=/opt/x/hook.js npm test",
                    POLICY_DANGEROUS_ENV,
                ),
                (
                    "PIP_INDEX_URL=https://pkgs.example.invalid/simple pip install x",
                    POLICY_REMOTE_CODE,
                ),
                (
                    "GOFLAGS=-toolexec=/bin/sh go build ./...",
                    POLICY_DANGEROUS_ENV,
                ),
            ],
            &[
                "PATH=/usr/lib/jvm/bin:$PATH mvn -q test",
                "PATH=$PWD/.venv/bin:$PATH pytest",
                "export PATH=~/.cargo/bin:$PATH; cargo test",
                "RUST_LOG=debug cargo test",
                "PYTHONPATH=src:tests pytest -q",
                "CC=clang make",
                "NODE_ENV=production npm run build",
            ],
        );
    }
}
