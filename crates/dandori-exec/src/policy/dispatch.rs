//! Walks a checked line: every simple command, through command substitutions,
//! reserved words and wrappers, goes to the rule classes of `rules/`.

use super::parser::parse;
use super::paths::LineState;
use super::rules::*;
use super::*;

/// How deep command substitutions are followed.
pub(crate) const MAX_DEPTH: usize = 4;

/// Shell reserved words that open or continue a compound command: the command
/// after them is checked as if it stood alone.
pub(crate) const KEYWORDS: &[&str] = &["if", "then", "else", "elif", "do", "!", "{", "time"];

/// Reserved words that close a compound command.
pub(crate) const CLOSERS: &[&str] = &["fi", "done", "}", "esac"];

impl CommandPolicy {
    pub(crate) fn check_depth(
        &self,
        line: &str,
        depth: usize,
    ) -> Result<ParsedCommand, PolicyViolation> {
        if depth > MAX_DEPTH {
            return Err(PolicyViolation::new(
                codes::POLICY_TOO_DEEP,
                format!("command substitutions nested deeper than {MAX_DEPTH}"),
            ));
        }
        if line.len() > MAX_LINE_LEN {
            return Err(PolicyViolation::new(
                codes::POLICY_TOO_LONG,
                format!(
                    "command line of {} bytes exceeds {MAX_LINE_LEN}",
                    line.len()
                ),
            ));
        }
        let tokens = lexer::lex(line)?;
        let parsed = parse(line, tokens)?;
        if parsed.commands.is_empty() {
            return Err(PolicyViolation::new(
                codes::POLICY_EMPTY_COMMAND,
                "empty command line",
            ));
        }
        let pipelines_into_shell = parsed
            .commands
            .iter()
            .any(|c| c.pipe_position > 0 && reads_code_from_stdin(c));
        if pipelines_into_shell {
            return Err(PolicyViolation::new(
                codes::POLICY_PIPE_TO_SHELL,
                format!("`{line}` pipes output into a shell or interpreter"),
            ));
        }
        // A program missing from the allowlist is only "needs approval": keep
        // checking the rest of the line, a later refusal wins.
        let mut not_allowed = None;
        let mut st = LineState::new();
        st.home = self.home.clone();
        for cmd in &parsed.commands {
            match self.check_simple(cmd, depth, &mut st) {
                Ok(()) => {}
                Err(v) if v.code == codes::POLICY_NOT_ALLOWED => {
                    not_allowed.get_or_insert(v);
                }
                Err(v) => return Err(v),
            }
        }
        match not_allowed {
            Some(v) => Err(v),
            None => Ok(parsed),
        }
    }

    pub(crate) fn check_simple(
        &self,
        cmd: &SimpleCommand,
        depth: usize,
        st: &mut LineState,
    ) -> Result<(), PolicyViolation> {
        if SHELLS.contains(&basename(&cmd.program))
            && cmd
                .words
                .iter()
                .skip(1)
                .any(|w| !w.substitutions.is_empty())
        {
            return Err(PolicyViolation::new(
                codes::POLICY_PIPE_TO_SHELL,
                format!(
                    "`{}` is fed with the output of a command substitution",
                    cmd.program
                ),
            ));
        }
        let mut sub_not_allowed: Option<PolicyViolation> = None;
        for w in cmd
            .words
            .iter()
            .chain(&cmd.other_words)
            .chain(cmd.redirections.iter().map(|r| &r.word))
        {
            if w.expands && w.text.contains("${!") {
                return Err(PolicyViolation::new(
                    codes::POLICY_SECRET_READ,
                    format!("`{}`: indirect expansion can read any variable", w.text),
                )
                .with_rule("indirect-expansion"));
            }
            for name in referenced_vars(&w.text) {
                if is_secret_name(name) {
                    return Err(PolicyViolation::new(
                        codes::POLICY_SECRET_READ,
                        format!("`${name}` holds a secret"),
                    )
                    .with_rule("secret-variable"));
                }
            }
            for sub in &w.substitutions {
                match self.check_depth(sub, depth + 1) {
                    Ok(_) => {}
                    // A program missing from the allowlist inside a substitution
                    // must not hide what the command itself does (`eval "$(…)"`).
                    Err(v) if v.code == codes::POLICY_NOT_ALLOWED => {
                        sub_not_allowed.get_or_insert(v);
                    }
                    Err(v) => {
                        let rule = v.rule.clone();
                        return Err(PolicyViolation::new(
                            v.code,
                            format!("in command substitution `{sub}`: {}", v.message),
                        )
                        .with_rule(&rule));
                    }
                }
            }
        }
        let assignment_words: Vec<&Word> = cmd
            .other_words
            .iter()
            .filter(|w| w.text.split_once('=').is_some_and(|(n, _)| is_name(n)))
            .collect();
        for (k, (name, value)) in cmd.assignments.iter().enumerate() {
            self.check_env(name, value, st, depth)?;
            check_path_like(value)?;
            if cmd.program.is_empty() {
                let resolved = assignment_words.get(k).and_then(|w| {
                    let mut v = (*w).clone();
                    v.text = value.clone();
                    paths::resolve(&v, st)
                });
                st.vars.insert(name.clone(), resolved);
            }
        }
        let effective = effective_program(cmd);
        let effective = effective.as_str();
        for r in &cmd.redirections {
            check_path_like(&r.target)?;
            let value = paths::resolve(&r.word, st);
            match r.operator.trim_start_matches(|c: char| c.is_ascii_digit()) {
                ">" | ">>" | ">|" | "&>" | "&>>" | "<>" => {
                    self.check_write(value.as_deref(), &r.target, st, "redirection target")?;
                    st.written
                        .insert(r.target.trim_start_matches("./").to_string());
                    if matches!(effective, "curl" | "wget") {
                        st.fetched
                            .insert(r.target.trim_start_matches("./").to_string());
                    }
                }
                "<<<" => {
                    // A here-string is stdin: for a shell or an interpreter, code.
                    let stem = version_stem(effective);
                    if SHELLS.contains(&effective) {
                        self.check_depth(&r.target, depth + 1)?;
                    } else if INTERPRETERS.contains(&stem) || EVAL.contains(&effective) {
                        check_inline_code(effective, &r.target)?;
                    }
                }
                ">&" | "<&" => {
                    if !r.target.chars().all(|c| c.is_ascii_digit() || c == '-') {
                        self.check_write(value.as_deref(), &r.target, st, "redirection target")?;
                    }
                }
                _ => self.check_read(value.as_deref(), st)?,
            }
        }
        if cmd.program.is_empty() {
            return sub_not_allowed.map_or(Ok(()), Err);
        }
        let joined = std::iter::once(cmd.program.as_str())
            .chain(cmd.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        for (pat, re) in &self.forbidden {
            if re.is_match(&joined) {
                return Err(PolicyViolation::new(
                    codes::POLICY_FORBIDDEN_PATTERN,
                    format!("`{joined}` matches the forbidden pattern `{pat}`"),
                ));
            }
        }
        // Brace expansion or escapes in the program name (`{rm,-rf,/}`, `$'\x72m'`)
        // hide the program from anyone reading the line.
        let obfuscated = |t: &str| {
            (t.contains('{') && t.contains(',') && t.contains('}'))
                || t.contains("$'")
                || t.contains("\\x")
        };
        if cmd.words.first().is_some_and(|w| {
            (w.expands && !w.text.starts_with('~'))
                || obfuscated(&w.text)
                || obfuscated(&cmd.program)
        }) {
            return Err(PolicyViolation::new(
                codes::POLICY_DYNAMIC_COMMAND,
                format!(
                    "the program `{}` is computed when the line runs",
                    cmd.program
                ),
            ));
        }
        self.check_program(
            &cmd.program,
            &cmd.args,
            cmd.words.get(1..).unwrap_or(&[]),
            depth,
            st,
            false,
        )?;
        sub_not_allowed.map_or(Ok(()), Err)
    }

    /// Checks one program with its arguments. `stdin_args`: more arguments come
    /// from stdin at run time (`xargs`).
    pub(crate) fn check_program(
        &self,
        program: &str,
        args: &[String],
        arg_words: &[Word],
        depth: usize,
        st: &mut LineState,
        stdin_args: bool,
    ) -> Result<(), PolicyViolation> {
        let base = basename(program);
        let refuse = |code: &'static str, what: &str| {
            Err(PolicyViolation::new(
                code,
                format!("`{base}` is refused: {what}"),
            ))
        };
        if matches!(base, "while" | "until") && program == base {
            let cond: Vec<&str> = args.iter().map(String::as_str).collect();
            let endless = matches!(
                (base, cond.as_slice()),
                (
                    "while",
                    ["true" | ":"] | ["[" | "test", "1", ..] | ["sleep", ..]
                ) | ("until", ["false"] | ["!", "true"])
            );
            if endless {
                return Err(PolicyViolation::new(
                    codes::POLICY_INFINITE_LOOP,
                    format!("`{base} {}` never ends", cond.join(" ")),
                )
                .with_rule("endless-loop"));
            }
        }
        // Reserved words: the command after them is what runs.
        if (KEYWORDS.contains(&base) || matches!(base, "while" | "until")) && program == base {
            return match args.first() {
                Some(next) => self.check_program(
                    next,
                    &args[1..],
                    arg_words.get(1..).unwrap_or(&[]),
                    depth,
                    st,
                    stdin_args,
                ),
                None => Ok(()),
            };
        }
        if CLOSERS.contains(&base) && program == base {
            return Ok(());
        }
        match base {
            "for" | "select" => {
                if let Some(var) = args.first() {
                    st.vars.insert(var.clone(), None);
                }
                return Ok(());
            }
            "case" | "coproc" => {
                return Err(PolicyViolation::new(
                    codes::POLICY_UNSUPPORTED_SYNTAX,
                    format!("`{base}` is not accepted by the policy"),
                ));
            }
            "export" | "readonly" | "local" | "declare" | "typeset" if !args.is_empty() => {
                let nameref = args
                    .iter()
                    .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('n'));
                for a in args.iter().filter(|a| !a.starts_with('-')) {
                    // `declare -n r=OPENAI_API_KEY`: `$r` would read the secret.
                    if nameref
                        && let Some((_, target)) = a.split_once('=')
                        && is_secret_name(target)
                    {
                        return Err(PolicyViolation::new(
                            codes::POLICY_SECRET_READ,
                            format!(
                                "`{base} -n` makes a name for `{target}`, which holds a secret"
                            ),
                        )
                        .with_rule("secret-variable"));
                    }
                    if let Some((name, value)) = a.split_once('=')
                        && is_name(name)
                    {
                        self.check_env(name, value, st, depth)?;
                        let w = arg_words.iter().find(|w| w.text == *a).map(|w| Word {
                            text: value.to_string(),
                            ..w.clone()
                        });
                        let resolved = w.and_then(|w| paths::resolve(&w, st));
                        st.vars.insert(name.to_string(), resolved);
                    }
                }
            }
            "read" | "mapfile" | "readarray" => {
                for a in args.iter().filter(|a| !a.starts_with('-')) {
                    st.vars.insert(a.clone(), None);
                }
            }
            // Builtins that assign or unset a variable behind the policy's back:
            // the variable is unknown from here on.
            "printf" => {
                if let Some(i) = args.iter().position(|a| a == "-v")
                    && let Some(name) = args.get(i + 1)
                {
                    st.vars.insert(name.clone(), None);
                }
            }
            "unset" | "getopts" => {
                for a in args.iter().filter(|a| !a.starts_with('-') && is_name(a)) {
                    st.vars.insert(a.clone(), None);
                }
            }
            _ => {}
        }
        if PRIVILEGE.contains(&base) {
            return refuse(codes::POLICY_PRIVILEGE_ESCALATION, "privilege escalation");
        }
        if NETWORK.contains(&base) {
            return refuse(codes::POLICY_NETWORK_CONFIG, "network configuration");
        }
        if SYSTEM.contains(&base) || base.starts_with("mkfs") {
            return refuse(codes::POLICY_SYSTEM_CONTROL, "system control");
        }
        if EVAL.contains(&base) {
            return refuse(codes::POLICY_EVAL, "it runs code the policy cannot see");
        }
        if base == "env"
            && let Some(expanded) = env_split_string(args)
        {
            // `env -S 'pytest -q'` is `env pytest -q`: judged as what it runs.
            if depth >= MAX_DEPTH {
                return Err(PolicyViolation::new(
                    codes::POLICY_TOO_DEEP,
                    format!("`env -S` nested deeper than {MAX_DEPTH}"),
                ));
            }
            return self.check_program(program, &expanded?, &[], depth + 1, st, stdin_args);
        }
        if WRAPPERS.contains(&base) {
            // Check the program the wrapper runs as if it stood alone.
            let inner = wrapped_command(base, args);
            for (k, a) in args[..inner.unwrap_or(args.len())].iter().enumerate() {
                if let Some((name, value)) = a.split_once('=')
                    && is_name(name)
                {
                    self.check_env(name, value, st, depth)?;
                } else if base == "env"
                    && (a == "-C"
                        || a == "--chdir"
                        || a.starts_with("--chdir=")
                        || (a.starts_with("-C") && a.len() > 2))
                {
                    let v = a
                        .strip_prefix("--chdir=")
                        .or_else(|| a.strip_prefix("-C").filter(|v| !v.is_empty()))
                        .map(str::to_string)
                        .or_else(|| args.get(k + 1).cloned());
                    if let Some(v) = v
                        && !matches!(paths::classify(&v, st, &self.roots), paths::Place::Inside)
                    {
                        return Err(PolicyViolation::new(
                            codes::POLICY_OUTSIDE_WORKTREE,
                            format!("`env -C {v}` runs outside the worktree"),
                        ));
                    }
                }
                check_path_like(a)?;
            }
            let Some(i) = inner else {
                return match base {
                    "env" => self.check_lifetime("env", args),
                    _ => Ok(()),
                };
            };
            self.check_program(
                &args[i],
                &args[i + 1..],
                arg_words.get(i + 1..).unwrap_or(&[]),
                depth,
                st,
                stdin_args || base == "xargs",
            )?;
            if BACKGROUND_WRAPPERS.contains(&base) {
                return Err(PolicyViolation::new(
                    codes::POLICY_BACKGROUND_PROCESS,
                    format!("`{base}` detaches `{}` from the command", args[i]),
                )
                .with_rule("background-wrapper"));
            }
            return Ok(());
        }
        self.check_lifetime(base, args)?;
        let stem = version_stem(base);
        let runs_code = SHELLS.contains(&base) || INTERPRETERS.contains(&stem);
        let script = runs_code
            .then(|| args.iter().find(|a| !a.starts_with('-')))
            .flatten();
        if program.contains('/')
            && !program.starts_with('/')
            && matches!(
                paths::classify(program, st, &self.roots),
                paths::Place::Escapes
            )
        {
            return Err(PolicyViolation::new(
                codes::POLICY_OUTSIDE_WORKTREE,
                format!("`{program}` climbs out of the worktree"),
            )
            .with_rule("run-outside"));
        }
        if runs_code
            && arg_words
                .iter()
                .any(|w| !w.substitutions.is_empty() && w.text.starts_with("<("))
        {
            return Err(PolicyViolation::new(
                codes::POLICY_PIPE_TO_SHELL,
                format!("`{base}` runs the output of a process substitution"),
            )
            .with_rule("pipe-to-shell"));
        }
        let sourced = matches!(base, "." | "source")
            .then(|| args.first())
            .flatten();
        for run in std::iter::once(program).chain(script.or(sourced).map(String::as_str)) {
            check_written_run(run, st)?;
            if st.fetched.contains(run.trim_start_matches("./")) {
                return Err(PolicyViolation::new(
                    codes::POLICY_REMOTE_CODE,
                    format!("`{run}` was downloaded earlier in this line and would run"),
                )
                .with_rule("download-run"));
            }
        }
        if matches!(base, "curl" | "wget") {
            st.fetched.extend(downloads(base, args));
        }
        check_remote_write(base, args)?;
        check_remote_code(base, args)?;
        check_listen(stem, args)?;
        check_makefile(base, args)?;
        self.check_build_tool(base, args, st, depth)?;
        record_writes(base, args, st);
        if stdin_args && (SHELLS.contains(&base) || INTERPRETERS.contains(&base) || base == "git") {
            return Err(PolicyViolation::new(
                codes::POLICY_UNRESOLVED_EXPANSION,
                format!("`{base}` would run with arguments read from stdin (xargs)"),
            )
            .with_rule("xargs-program"));
        }
        if SHELLS.contains(&base) {
            if arg_words.iter().any(|w| !w.substitutions.is_empty()) {
                return refuse(
                    codes::POLICY_PIPE_TO_SHELL,
                    "a shell fed with the output of a command substitution",
                );
            }
            // `-c`, also in clusters: `bash -lc`, `sh -ec`.
            if let Some(pos) = args.iter().position(|a| {
                a == "-c"
                    || (a.starts_with('-')
                        && !a.starts_with("--")
                        && a.ends_with('c')
                        && a[1..].chars().all(|c| c.is_ascii_alphabetic()))
            }) && let Some(script) = args.get(pos + 1)
            {
                self.check_depth(script, depth + 1)?;
            }
        }
        for (option, value) in exec_option_values(base, args) {
            self.check_command_value(
                &format!("`{base} {option}`"),
                &value,
                depth,
                codes::POLICY_PIPE_TO_SHELL,
                "exec-option",
            )?;
        }
        check_tool_env_dump(base, args)?;
        check_sent_substitution(base, args, arg_words)?;
        self.check_preload_options(base, args, st)?;
        self.check_command_line_options(base, args, depth)?;
        if let Some((lang, code)) = inline_code(base, args) {
            check_inline_code(lang, code)?;
        }
        // `python -m pip …` is pip.
        if stem == "python"
            && let Some(m) = args.iter().position(|a| a == "-m")
            && let Some(module) = args.get(m + 1)
            && matches!(module.as_str(), "pip" | "pip3")
        {
            self.check_lifetime("pip", &args[m + 2..])?;
        }
        if stem == "python"
            && let Some(m) = args.iter().position(|a| a == "-m")
            && let Some(module) = args.get(m + 1)
        {
            check_remote_write(module, &args[m + 2..])?;
            check_remote_code(module, &args[m + 2..])?;
        }
        if let Some(i) = self.runner_target(base, args, depth)? {
            let target = package_program(&args[i]);
            // The package's program, as if it stood alone.
            let mut words: Vec<Word> = arg_words.get(i + 1..).unwrap_or(&[]).to_vec();
            words.truncate(args.len() - i - 1);
            let inner_args = &args[i + 1..];
            return self.check_program(&target, inner_args, &words, depth, st, stdin_args);
        }
        if base == "git" {
            self.check_git(
                &Args {
                    args,
                    words: arg_words,
                },
                depth,
                st,
            )?;
        }
        if base == "find" {
            self.check_find(args, arg_words, depth, st)?;
        }
        for a in args {
            check_path_like(a)?;
        }
        match base {
            "rm" => check_rm(args)?,
            "chmod" | "chown" | "chgrp" => check_permissions(base, args)?,
            _ => {}
        }
        if is_deleter(base) && base != "rm" {
            let mut with_r = vec!["-r".to_string()];
            with_r.extend(args.iter().cloned());
            check_rm(&with_r)?;
        }
        self.check_effects(
            base,
            &Args {
                args,
                words: arg_words,
            },
            st,
            stdin_args,
        )?;
        let local_http =
            is_local_http(base, args) && (!program.contains('/') || self.installed_place(program));
        if !self.is_allowed(program, base) && !local_http {
            return refuse(
                codes::POLICY_NOT_ALLOWED,
                "not on the allowlist (planning.environment_setup.security.allowed_commands)",
            );
        }
        Ok(())
    }
}

/// A command at `pipe_position > 0` that would execute what it reads.
pub(crate) fn reads_code_from_stdin(cmd: &SimpleCommand) -> bool {
    let base = basename(&cmd.program);
    // `… | env -S 'sh -s'`: the words of the split string are env's arguments;
    // one that cannot be split is taken for a shell.
    let split = (base == "env")
        .then(|| env_split_string(&cmd.args))
        .flatten()
        .map(|r| r.unwrap_or_else(|_| vec!["sh".to_string()]));
    let all_args: &[String] = split.as_deref().unwrap_or(&cmd.args);
    let mut program = base;
    let mut args: &[String] = all_args;
    if WRAPPERS.contains(&base) || PRIVILEGE.contains(&base) {
        let inner = if PRIVILEGE.contains(&base) {
            all_args.iter().position(|a| !a.starts_with('-'))
        } else {
            wrapped_command(base, all_args)
        };
        if let Some(i) = inner {
            program = basename(&all_args[i]);
            args = &all_args[i + 1..];
        }
    }
    let stem = version_stem(program);
    if SHELLS.contains(&program) || EVAL.contains(&program) {
        // `… | sh`, `… | bash -s`; `… | sh -c 'script'` still runs stdin-fed code
        // only if the script reads it, which it may: refuse as well.
        return true;
    }
    if INTERPRETERS.contains(&program) || INTERPRETERS.contains(&stem) {
        return args.is_empty() || args.iter().all(|a| a == "-" || a == "-s" || a == "-u");
    }
    false
}
