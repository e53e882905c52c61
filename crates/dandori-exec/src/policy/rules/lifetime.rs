//! What outlives the run or never ends: persistence (schedulers, user-wide
//! installs and config), endless loops and output, background helpers, and the
//! builtins that dump the environment.
//!
//! Hostile lines: classes `persistence` and `loops_background` of
//! `tests/fixtures/policy/hostile.txt`.

use super::*;

/// Files and directories below `~` that run code at login, at shell start or on a
/// schedule, or configure tools for every later run.
pub(crate) const HOME_PERSISTENCE: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".cshrc",
    ".tcshrc",
    ".kshrc",
    ".inputrc",
    ".xinitrc",
    ".xprofile",
    ".gitconfig",
    ".config",
    ".local",
    ".pam_environment",
    ".ssh",
    ".cargo",
    ".rustup",
    ".npm",
    ".pip",
    ".condarc",
    ".vimrc",
    ".emacs",
    ".emacs.d",
    "Library/LaunchAgents",
];

impl CommandPolicy {
    /// Persistence, secret dumps, loops and background helpers by program name.
    pub(crate) fn check_lifetime(
        &self,
        base: &str,
        args: &[String],
    ) -> Result<(), PolicyViolation> {
        let has = |flags: &[&str]| args.iter().any(|x| flags.contains(&x.as_str()));
        let sub = args
            .iter()
            .find(|x| !x.starts_with('-'))
            .map(String::as_str)
            .unwrap_or("");
        match base {
            "printenv" => refuse(
                codes::POLICY_SECRET_READ,
                "env-dump",
                "`printenv` prints the environment, secrets included".into(),
            ),
            "env" => refuse(
                codes::POLICY_SECRET_READ,
                "env-dump",
                "`env` without a command prints the environment".into(),
            ),
            "export" | "declare" | "typeset" | "readonly"
                if args.is_empty()
                    || args
                        .iter()
                        .all(|x| x.starts_with('-') && (x.contains('p') || x.contains('x'))) =>
            {
                refuse(
                    codes::POLICY_SECRET_READ,
                    "env-dump",
                    format!("`{base}` without names lists the environment"),
                )
            }
            "set" if args.is_empty() => refuse(
                codes::POLICY_SECRET_READ,
                "env-dump",
                "`set` lists every variable".into(),
            ),
            "compgen" if has(&["-v", "-e", "-A"]) => refuse(
                codes::POLICY_SECRET_READ,
                "env-dump",
                "`compgen` lists variables".into(),
            ),
            "yes" => refuse(
                codes::POLICY_INFINITE_LOOP,
                "endless-output",
                "`yes` never ends".into(),
            ),
            "watch" => refuse(
                codes::POLICY_INFINITE_LOOP,
                "endless-loop",
                "`watch` repeats forever".into(),
            ),
            "sleep" if args.iter().any(|x| x.starts_with("inf")) => refuse(
                codes::POLICY_INFINITE_LOOP,
                "endless-sleep",
                "`sleep infinity` never ends".into(),
            ),
            "tail"
                if args.iter().any(|x| {
                    x == "-f"
                        || x == "-F"
                        || x.starts_with("--follow")
                        || (x.starts_with('-') && !x.starts_with("--") && x.contains(['f', 'F']))
                }) =>
            {
                refuse(
                    codes::POLICY_INFINITE_LOOP,
                    "endless-follow",
                    "`tail -f` never ends".into(),
                )
            }
            "disown" | "screen" | "tmux" | "daemonize" | "start-stop-daemon" | "bg" => refuse(
                codes::POLICY_BACKGROUND_PROCESS,
                "background",
                format!("`{base}` keeps a process running after the command"),
            ),
            "crontab" | "at" | "batch" | "launchctl" | "update-rc.d" | "chkconfig" => refuse(
                codes::POLICY_PERSISTENCE,
                "scheduler",
                format!("`{base}` schedules work that outlives the run"),
            ),
            "pip" | "pip3" if has(&["--user"]) || matches!(sub, "config") => refuse(
                codes::POLICY_PERSISTENCE,
                "pip-user",
                "`pip --user` / `pip config` change the user's installation".into(),
            ),
            "uv" if sub == "tool" && args.iter().any(|x| x == "install") || has(&["--user"]) => {
                refuse(
                    codes::POLICY_PERSISTENCE,
                    "uv-tool-install",
                    "`uv tool install` installs for the user".into(),
                )
            }
            "npm" | "pnpm" | "yarn" | "bun"
                if has(&["-g", "--global", "--location=global"])
                    || args
                        .windows(2)
                        .any(|w| w[0] == "--location" && w[1] == "global")
                    || sub == "global"
                    || (matches!(sub, "config" | "set") && !has(&["--location=project"]))
                    || (sub == "link" && args.len() == 1) =>
            {
                refuse(
                    codes::POLICY_PERSISTENCE,
                    "npm-global",
                    format!("`{base}` global install or config changes the user's installation"),
                )
            }
            "cargo"
                if sub == "install"
                    && !args
                        .iter()
                        .any(|x| x == "--root" || x.starts_with("--root=")) =>
            {
                refuse(
                    codes::POLICY_PERSISTENCE,
                    "cargo-install",
                    "`cargo install` writes to ~/.cargo/bin (use --root inside the worktree)"
                        .into(),
                )
            }
            "go" if sub == "install" || (sub == "env" && has(&["-w", "-u"])) => refuse(
                codes::POLICY_PERSISTENCE,
                "go-install",
                "`go install` / `go env -w` change the user's Go installation".into(),
            ),
            "rustup"
                if matches!(
                    sub,
                    "default"
                        | "update"
                        | "install"
                        | "uninstall"
                        | "self"
                        | "set"
                        | "override"
                        | "component"
                        | "target"
                ) || (sub == "toolchain"
                    && args
                        .iter()
                        .any(|x| matches!(x.as_str(), "install" | "uninstall" | "link"))) =>
            {
                refuse(
                    codes::POLICY_PERSISTENCE,
                    "rustup-global",
                    format!("`rustup {sub}` changes the machine's toolchains"),
                )
            }
            "conda" | "mamba" | "micromamba" if matches!(sub, "init" | "config") => refuse(
                codes::POLICY_PERSISTENCE,
                "conda-init",
                format!("`{base} {sub}` changes shell start-up or user config"),
            ),
            "corepack" if matches!(sub, "enable" | "disable" | "install") => refuse(
                codes::POLICY_PERSISTENCE,
                "corepack-enable",
                "`corepack enable` writes shims next to node".into(),
            ),
            _ => Ok(()),
        }
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
                ("crontab -l", POLICY_PERSISTENCE),
                ("pip install --user black", POLICY_PERSISTENCE),
                ("npm install -g typescript", POLICY_PERSISTENCE),
                ("cargo install ripgrep", POLICY_PERSISTENCE),
                ("yes | head -n 3", POLICY_INFINITE_LOOP),
                ("tmux new -d make watch", POLICY_BACKGROUND_PROCESS),
            ],
            &[
                "pip install -r requirements.txt",
                "cargo install --root .tools cargo-nextest",
                "npm install --save-dev eslint",
                "sleep 2",
                "tail -n 50 build.log",
            ],
        );
    }
}
