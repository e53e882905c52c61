//! Inline interpreter code (`python -c`, `node -e`, `perl -e`), awk programs and
//! sed scripts that run programs, read the environment, write or name paths
//! outside the worktree.
//!
//! Hostile lines: classes `interpreter_code` and `here_string` of
//! `tests/fixtures/policy/hostile.txt`.

use super::*;

impl CommandPolicy {
    pub(crate) fn check_sed(&self, a: &Args<'_>, st: &LineState) -> Result<(), PolicyViolation> {
        let args = a.args;
        let mut scripts = Vec::new();
        let mut explicit = false;
        let mut i = 0;
        while i < args.len() {
            let x = &args[i];
            if x == "-e" || x == "--expression" {
                explicit = true;
                if let Some(s) = args.get(i + 1) {
                    scripts.push(s.clone());
                }
                i += 2;
                continue;
            }
            if let Some(s) = x.strip_prefix("--expression=") {
                explicit = true;
                scripts.push(s.to_string());
            }
            if x == "-f" || x == "--file" {
                explicit = true;
                i += 2;
                continue;
            }
            i += 1;
        }
        let ops = operand_indices(
            args,
            &["-e", "--expression", "-f", "--file", "-l", "--line-length"],
        );
        let files: Vec<usize> = if explicit {
            ops
        } else {
            if let Some(first) = ops.first() {
                scripts.push(args[*first].clone());
            }
            ops.into_iter().skip(1).collect()
        };
        for s in &scripts {
            if let Some(file) = sed_executes_or_writes(s)? {
                self.check_write(Some(&file), &file, st, "`sed w` file")?;
            }
        }
        if args
            .iter()
            .any(|x| x.starts_with("-i") || x == "--in-place" || x.starts_with("--in-place="))
        {
            for f in files {
                self.check_write(a.value(f, st).as_deref(), &args[f], st, "`sed -i` file")?;
            }
        }
        Ok(())
    }
}

/// The `-c`/`-e` code of an interpreter invocation, if any.
pub(crate) fn inline_code<'a>(base: &str, args: &'a [String]) -> Option<(&'static str, &'a str)> {
    let stem = super::version_stem(base);
    let (lang, flags): (&'static str, &[&str]) = match stem {
        "python" | "pypy" => ("python", &["-c"]),
        "node" | "nodejs" | "bun" | "deno" => ("js", &["-e", "--eval", "-p", "--print", "eval"]),
        "perl" => ("perl", &["-e", "-E"]),
        "ruby" => ("ruby", &["-e"]),
        "php" => ("php", &["-r"]),
        "lua" | "luajit" => ("lua", &["-e"]),
        "Rscript" => ("r", &["-e"]),
        "osascript" => ("applescript", &["-e"]),
        _ => return None,
    };
    for (i, x) in args.iter().enumerate() {
        if flags.contains(&x.as_str()) {
            return args.get(i + 1).map(|c| (lang, c.as_str()));
        }
        if let Some(code) = x
            .strip_prefix("--eval=")
            .or_else(|| x.strip_prefix("--print="))
        {
            return Some((lang, code));
        }
        // Clusters: `python -Ic CODE`, `perl -ne CODE`, `python -cCODE`.
        if x.starts_with('-') && !x.starts_with("--") && x.len() > 2 {
            let body = &x[1..];
            for f in flags
                .iter()
                .filter_map(|f| f.strip_prefix('-'))
                .filter(|f| f.len() == 1)
            {
                if body.ends_with(f) && body.chars().all(|c| c.is_ascii_alphabetic()) {
                    return args.get(i + 1).map(|c| (lang, c.as_str()));
                }
                if lang == "python" && body.starts_with(f) {
                    return Some((lang, &x[2..]));
                }
            }
        }
        if lang == "python" && !x.starts_with('-') {
            // `python script.py -c x`: the rest belongs to the script.
            return None;
        }
    }
    None
}

/// Refuses inline code that runs programs, reads the environment, deletes or
/// links files, or names paths outside the worktree.
pub(crate) fn check_inline_code(lang: &str, code: &str) -> Result<(), PolicyViolation> {
    let secret = [
        "environ",
        "getenv",
        "process.env",
        "ENV[",
        "ENV.",
        "$ENV",
        "$_ENV",
        "ENV.fetch",
        "Sys.getenv",
        "%ENV",
    ];
    if secret.iter().any(|s| code.contains(s)) {
        return refuse(
            codes::POLICY_SECRET_READ,
            "inline-code-env",
            format!("{lang} code reads the environment"),
        );
    }
    let common: &[&str] = &[
        "system", "exec", "spawn", "popen", "fork", "socket", "eval", "`", "unlink", "rmtree",
        "symlink", "chmod", "chown", "kill",
    ];
    let per_lang: &[&str] = match lang {
        "python" => &[
            "subprocess",
            "os.remove",
            "os.rmdir",
            "os.link",
            "os.rename",
            "os.replace",
            "shutil",
            "pty",
            "ctypes",
            "__import__",
            "importlib",
            "compile(",
            "expanduser",
            "Path.home",
            "builtins",
            "write_text",
            "write_bytes",
            "urllib",
            "http.client",
        ],
        "js" => &[
            "child_process",
            "process[",
            "globalThis",
            "global.",
            "constructor",
            "import(",
            "Function(",
            "process.binding",
            "Deno.",
            "Bun.",
            "homedir",
            "net.",
            "fetch(",
        ],
        "perl" | "ruby" | "php" => &[
            "open",
            "qx",
            "%x",
            "File.",
            "IO.",
            "Dir.",
            "Kernel",
            "shell_exec",
            "passthru",
            "proc_open",
            "file_put_contents",
            "require",
            "rm",
            "syscall",
        ],
        _ => &["os.", "io.", "do shell script", "system("],
    };
    if let Some(hit) = common.iter().chain(per_lang).find(|p| code.contains(*p)) {
        return refuse(
            codes::POLICY_INTERPRETER_CODE,
            "inline-code",
            format!("{lang} code uses `{hit}`"),
        );
    }
    if let Some(hit) = inline_code_regex(lang).and_then(|re| re.find(code)) {
        return refuse(
            codes::POLICY_INTERPRETER_CODE,
            "inline-code",
            format!("{lang} code uses `{}`", hit.as_str()),
        );
    }
    static LOOP: OnceLock<Option<Regex>> = OnceLock::new();
    let endless = LOOP
        .get_or_init(|| {
            Regex::new(r"while\s*\(?\s*(True|true|1)\s*\)?\s*[:{]|for\s*\(\s*;\s*;\s*\)|\bloop\s*\{|while\s+1\b").ok()
        })
        .as_ref();
    if endless.is_some_and(|re| re.is_match(code)) {
        return refuse(
            codes::POLICY_INFINITE_LOOP,
            "inline-code-loop",
            format!("{lang} code loops forever"),
        );
    }
    // Quoted literals that name places outside the worktree.
    for lit in quoted_literals(code) {
        let outside = lit.starts_with('~')
            || lit.split('/').any(|s| s == "..")
            || (lit.starts_with('/')
                && !["/tmp", "/dev/null"]
                    .iter()
                    .any(|p| paths::under(&paths::normalize_abs(lit), p)));
        if outside {
            return refuse(
                codes::POLICY_INTERPRETER_CODE,
                "inline-code-path",
                format!("{lang} code names `{lit}`, outside the worktree"),
            );
        }
    }
    Ok(())
}

/// Constructs a word list cannot express: modules that run programs or open
/// sockets, dynamic `require`, file writes and deletions, `open(…, "w")`.
pub(crate) fn inline_code_regex(lang: &str) -> Option<&'static Regex> {
    static JS: OnceLock<Option<Regex>> = OnceLock::new();
    static PY: OnceLock<Option<Regex>> = OnceLock::new();
    match lang {
        "js" => JS
            .get_or_init(|| {
                Regex::new(concat!(
                    r#"require\s*\(\s*['"`](node:)?(child_process|net|dgram|http|https|http2|tls|vm|worker_threads|cluster|inspector|os|v8|module|repl)['"`]"#,
                    r#"|require\s*\(\s*[^'"`\s]"#,
                    r"|\b(writeFile|appendFile|rm|rmdir|unlink|symlink|link|rename|chmod|chown|copyFile|cp|createWriteStream|truncate|openSync|open|mkdtemp|utimes)(Sync)?\s*\(",
                ))
                .ok()
            })
            .as_ref(),
        "python" => PY
            .get_or_init(|| {
                Regex::new(r#"open\s*\([^)]*,\s*(mode\s*=\s*)?['"][^'"]*[wax+]"#).ok()
            })
            .as_ref(),
        _ => None,
    }
}

pub(crate) fn quoted_literals(code: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(start) = rest.find(['\'', '"']) {
        let q = &rest[start..start + 1];
        let after = &rest[start + 1..];
        match after.find(q) {
            Some(end) => {
                out.push(&after[..end]);
                rest = &after[end + 1..];
            }
            None => break,
        }
    }
    out
}

pub(crate) fn check_awk(args: &[String]) -> Result<(), PolicyViolation> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(concat!(
            r#"system\s*\(|\|&?\s*getline|getline\s*<|print[f]?\b[^;{}]*[>|]|ENVIRON"#,
            r#"|@load|@include|PROCINFO\s*\[\s*"(environ|argv)""#,
        ))
        .ok()
    });
    let code = |what: &str| {
        refuse(
            codes::POLICY_INTERPRETER_CODE,
            "awk-program",
            format!("the awk program {what}"),
        )
    };
    // Programs given with `-e`/`--source`; without them (and without a program
    // file) the first operand is the program.
    let mut programs: Vec<&str> = Vec::new();
    let mut from_file = false;
    let mut operand = None;
    let mut i = 0;
    while i < args.len() {
        let x = args[i].as_str();
        let next = args.get(i + 1).map(String::as_str);
        let (name, inline) = match x.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v)),
            _ => (x, None),
        };
        let value = inline.or(next);
        let width = if inline.is_some() { 1 } else { 2 };
        match name {
            "--" => {
                operand = next;
                break;
            }
            "-e" | "--source" => {
                programs.extend(value);
                i += width;
                continue;
            }
            "-l" | "--load" => return code("loads a compiled extension (`-l`)"),
            "-f" | "--file" | "-E" | "--exec" | "-i" | "--include" => {
                if value.is_some_and(|f| matches!(f, "-" | "/dev/stdin" | "/dev/fd/0")) {
                    return refuse(
                        codes::POLICY_PIPE_TO_SHELL,
                        "awk-program-stdin",
                        "the awk program is read from stdin".into(),
                    );
                }
                from_file = true;
                i += width;
                continue;
            }
            "-v" | "-F" | "--assign" | "--field-separator" => {
                i += width;
                continue;
            }
            _ => {}
        }
        if x.starts_with("-l") && !x.starts_with("--") {
            return code("loads a compiled extension (`-l`)");
        }
        if x.starts_with("-f") && !x.starts_with("--") {
            from_file = true;
        } else if !x.starts_with('-') {
            operand = Some(x);
            break;
        }
        i += 1;
    }
    if programs.is_empty() && !from_file {
        programs.extend(operand);
    }
    if programs
        .iter()
        .any(|p| re.as_ref().is_none_or(|re| re.is_match(p)))
    {
        return code("runs commands, redirects output, loads extensions or reads the environment");
    }
    Ok(())
}

/// `Err` when a sed script executes (`e` command, `s///e`); `Ok(Some(file))` for
/// the first `w FILE` it writes.
pub(crate) fn sed_executes_or_writes(script: &str) -> Result<Option<String>, PolicyViolation> {
    let chars: Vec<char> = script.chars().collect();
    let exec = || {
        refuse(
            codes::POLICY_INTERPRETER_CODE,
            "sed-execute",
            format!("the sed script `{script}` executes commands"),
        )
    };
    let mut written = None;
    let mut i = 0;
    let mut at_command = true;
    while i < chars.len() {
        let c = chars[i];
        if at_command {
            match c {
                ' ' | '\t' | '\n' | ';' | '{' | '}' | '!' | ',' | '$' | '0'..='9' => {}
                '/' | '\\' => {
                    // An address regex: skip to its end.
                    let d = if c == '\\' {
                        chars.get(i + 1).copied().unwrap_or('/')
                    } else {
                        '/'
                    };
                    let mut j = if c == '\\' { i + 2 } else { i + 1 };
                    while j < chars.len() && chars[j] != d {
                        if chars[j] == '\\' {
                            j += 1;
                        }
                        j += 1;
                    }
                    i = j;
                }
                's' | 'y' => {
                    let Some(&d) = chars.get(i + 1) else { break };
                    let mut j = i + 2;
                    let mut seen = 0;
                    while j < chars.len() && seen < 2 {
                        if chars[j] == '\\' {
                            j += 1;
                        } else if chars[j] == d {
                            seen += 1;
                        }
                        j += 1;
                    }
                    let mut flags = String::new();
                    while j < chars.len() && chars[j].is_ascii_alphanumeric() {
                        flags.push(chars[j]);
                        if chars[j] == 'w' {
                            break;
                        }
                        j += 1;
                    }
                    if c == 's' && flags.contains('e') {
                        return exec().map(|_| None);
                    }
                    if c == 's' && flags.ends_with('w') {
                        let file: String =
                            chars[j + 1..].iter().collect::<String>().trim().to_string();
                        written.get_or_insert(file);
                        break;
                    }
                    i = j;
                    at_command = false;
                    continue;
                }
                'e' => return exec().map(|_| None),
                'w' | 'W' => {
                    let file: String = chars[i + 1..]
                        .iter()
                        .take_while(|&&ch| ch != '\n' && ch != ';')
                        .collect::<String>()
                        .trim()
                        .to_string();
                    written.get_or_insert(file);
                    break;
                }
                _ => at_command = false,
            }
        } else if c == ';' || c == '\n' || c == '{' || c == '}' {
            at_command = true;
        }
        i += 1;
    }
    Ok(written)
}

impl CommandPolicy {
    /// `node -r /tmp/x.js`, `node --import data:…`, `php -d auto_prepend_file=…`:
    /// code loaded before the program, from a file or inline.
    pub(crate) fn check_preload_options(
        &self,
        base: &str,
        args: &[String],
        st: &LineState,
    ) -> Result<(), PolicyViolation> {
        let preload_opts: &[&str] = match base {
            "node" | "nodejs" | "bun" | "deno" | "tsx" | "ts-node" => &[
                "-r",
                "--require",
                "--import",
                "--loader",
                "--experimental-loader",
                "--preload",
            ],
            "ruby" => &["-r", "-I"],
            "php" => &["-d"],
            _ => &[],
        };
        for (i, a) in args.iter().enumerate() {
            let (name, inline) = match a.split_once('=') {
                Some((n, v)) if n.starts_with("--") => (n, Some(v)),
                _ => (a.as_str(), None),
            };
            if !preload_opts.contains(&name) {
                continue;
            }
            let Some(value) = inline.or_else(|| args.get(i + 1).map(String::as_str)) else {
                continue;
            };
            let value = match base {
                "php" => match value.split_once('=') {
                    Some((k, v))
                        if k.contains("prepend")
                            || k.contains("append")
                            || k.contains("extension") =>
                    {
                        v
                    }
                    _ => continue,
                },
                _ => value,
            };
            if value.starts_with("data:")
                || value.starts_with("http:")
                || value.starts_with("https:")
            {
                return Err(PolicyViolation::new(
                    codes::POLICY_INTERPRETER_CODE,
                    format!("`{base} {name}` loads code given inline or from the network"),
                )
                .with_rule("preload-option"));
            }
            self.check_preload(&format!("{base} {name}"), value, st)?;
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
                (
                    "gawk --source='BEGIN { system(\"id\") }' f",
                    POLICY_INTERPRETER_CODE,
                ),
                (
                    "awk 'BEGIN { \"date\" |& getline d }'",
                    POLICY_INTERPRETER_CODE,
                ),
                ("gawk -l fork 'BEGIN { }'", POLICY_INTERPRETER_CODE),
                ("awk -f - data.txt", POLICY_PIPE_TO_SHELL),
                (
                    "python -c \"import os; os.system(\x27id\x27)\"",
                    POLICY_INTERPRETER_CODE,
                ),
                (
                    "node -e \"require(\x27child_process\x27).execSync(\x27id\x27)\"",
                    POLICY_INTERPRETER_CODE,
                ),
                ("perl -e \x27print $ENV{HOME}\x27", POLICY_SECRET_READ),
                ("sed -n \x271e id\x27 notes.txt", POLICY_INTERPRETER_CODE),
                (
                    "awk \x27{ print > \"/srv/out\" }\x27 log.txt",
                    POLICY_INTERPRETER_CODE,
                ),
                ("python3 -c \"while True: pass\"", POLICY_INFINITE_LOOP),
            ],
            &[
                "gawk -e '{ n++ } END { print n }' log.txt",
                "awk -f tools/count.awk data.txt",
                "python -c \"print(1 + 1)\"",
                "node -e \"console.log(JSON.stringify({a: 1}))\"",
                "sed -i s/foo/bar/g src/app.py",
                "awk -F, \x27{ s += $2 } END { print s }\x27 data.csv",
            ],
        );
    }
}
