//! git: options, config keys and environment variables that make git run a
//! program, subcommands that run commands or write to another machine, and
//! changes to what the repository shares with every worktree.
//!
//! Hostile lines: classes `git_exec` and `git_refs` of
//! `tests/fixtures/policy/hostile.txt`.

use super::*;

impl CommandPolicy {
    /// git: options and config keys that execute programs, global config, and the
    /// subcommands that run commands.
    pub(crate) fn check_git(
        &self,
        a: &Args<'_>,
        depth: usize,
        st: &mut LineState,
    ) -> Result<(), PolicyViolation> {
        let args = a.args;
        let mut i = 0;
        // Global options before the subcommand.
        while i < args.len() && args[i].starts_with('-') {
            let x = args[i].as_str();
            if x == "-c" || x == "--config-env" {
                if let Some(kv) = args.get(i + 1) {
                    check_git_key(kv.split('=').next().unwrap_or(kv))?;
                }
                i += 2;
                continue;
            }
            if let Some(kv) = x
                .strip_prefix("-c")
                .or_else(|| x.strip_prefix("--config-env="))
            {
                check_git_key(kv.split('=').next().unwrap_or(kv))?;
            }
            if x.starts_with("--exec-path=") || x == "--exec-path" && i + 1 < args.len() {
                return refuse(
                    codes::POLICY_GIT_EXEC_OPTION,
                    "git-exec-path",
                    "`git --exec-path` chooses the programs git runs".into(),
                );
            }
            if matches!(
                x,
                "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix"
            ) {
                if x != "--namespace" && x != "--super-prefix" {
                    let v = a.value(i + 1, st);
                    if i + 1 < args.len() {
                        self.check_git_dir(v.as_deref(), &args[i + 1], st)?;
                    }
                }
                i += 2;
                continue;
            }
            if let Some(v) = x
                .strip_prefix("--git-dir=")
                .or_else(|| x.strip_prefix("--work-tree="))
            {
                self.check_git_dir(Some(v), v, st)?;
            }
            i += 1;
        }
        let Some(sub) = args.get(i).map(String::as_str) else {
            return Ok(());
        };
        let rest = &args[i + 1..];
        for (j, x) in rest.iter().enumerate() {
            let lower = x.to_ascii_lowercase();
            if lower.starts_with("ext::") || lower.contains("::ext::") || lower.starts_with("fd::")
            {
                return refuse(
                    codes::POLICY_GIT_EXEC_OPTION,
                    "git-ext-transport",
                    format!("`{x}` makes git run a program as transport"),
                );
            }
            let exec_opt = [
                "--upload-pack",
                "--receive-pack",
                "--exec",
                "--template",
                "--extcmd",
                "--tool",
                "--config",
                "--ssh-command",
            ];
            let name = x.split('=').next().unwrap_or(x);
            if exec_opt.contains(&name) && !(sub == "rebase" && name == "--exec") {
                if name == "--config" {
                    if let Some(kv) = x
                        .split_once('=')
                        .map(|(_, v)| v.to_string())
                        .or_else(|| rest.get(j + 1).cloned())
                    {
                        check_git_key(kv.split('=').next().unwrap_or(&kv))?;
                    }
                    continue;
                }
                return refuse(
                    codes::POLICY_GIT_EXEC_OPTION,
                    "git-exec-option",
                    format!("`git {sub} {name}` runs a program"),
                );
            }
            // `-c KEY=VALUE`, `-cKEY=VALUE`, `-qc KEY=VALUE`, `-u PROGRAM`: short
            // options alone, glued to their value or at the end of a cluster.
            if matches!(sub, "clone" | "submodule") && x.starts_with('-') && !x.starts_with("--") {
                for (k, c) in x.char_indices().skip(1) {
                    match c {
                        'c' => {
                            let glued = &x[k + 1..];
                            let kv = if glued.is_empty() {
                                rest.get(j + 1).map(String::as_str)
                            } else {
                                Some(glued)
                            };
                            if let Some(kv) = kv {
                                check_git_key(kv.split('=').next().unwrap_or(kv))?;
                            }
                            break;
                        }
                        'u' => {
                            return refuse(
                                codes::POLICY_GIT_EXEC_OPTION,
                                "git-exec-option",
                                format!("`git {sub} -u` runs a program"),
                            );
                        }
                        // Options whose value follows: the rest is that value.
                        'o' | 'b' | 'j' => break,
                        _ => {}
                    }
                }
            }
        }
        match sub {
            "config" => {
                if rest
                    .iter()
                    .any(|x| matches!(x.as_str(), "--global" | "--system"))
                {
                    return refuse(
                        codes::POLICY_PERSISTENCE,
                        "git-config-global",
                        "`git config --global/--system` changes config outside the repository"
                            .into(),
                    );
                }
                if let Some(p) = rest.iter().position(|x| x == "-f" || x == "--file") {
                    let v = a.value(i + 2 + p, st);
                    self.check_write(
                        v.as_deref(),
                        rest.get(p + 1).map(String::as_str).unwrap_or(""),
                        st,
                        "`git config --file`",
                    )?;
                }
                let reading = rest.iter().any(|x| {
                    matches!(
                        x.as_str(),
                        "--get"
                            | "--get-all"
                            | "--get-regexp"
                            | "-l"
                            | "--list"
                            | "get"
                            | "list"
                            | "--show-origin"
                    )
                });
                let keys: Vec<&String> = rest.iter().filter(|x| !x.starts_with('-')).collect();
                let key = match keys.first().map(|s| s.as_str()) {
                    Some(
                        "set" | "unset" | "get" | "list" | "edit" | "rename-section"
                        | "remove-section",
                    ) => keys.get(1),
                    _ => keys.first(),
                };
                if rest
                    .iter()
                    .any(|x| x == "-e" || x == "--edit" || x == "edit")
                {
                    return refuse(
                        codes::POLICY_GIT_EXEC_OPTION,
                        "git-config-edit",
                        "`git config --edit` starts an editor".into(),
                    );
                }
                if !reading && let Some(k) = key {
                    check_git_key(k)?;
                }
                let dump = rest.iter().any(|x| {
                    matches!(
                        x.as_str(),
                        "-l" | "--list" | "list" | "--get-regexp" | "--show-origin"
                    )
                });
                let secret_key = key.is_some_and(|k| {
                    let k = k.to_ascii_lowercase();
                    k.ends_with(".extraheader")
                        || k.starts_with("credential")
                        || k.starts_with("http.")
                        || k.starts_with("url.")
                        || (k.starts_with("remote.") && k.ends_with(".url"))
                });
                if dump || (reading && secret_key) {
                    return refuse(
                        codes::POLICY_SECRET_READ,
                        "git-config-read",
                        "reading git's config dumps or its URL/credential keys can print tokens"
                            .into(),
                    );
                }
                Ok(())
            }
            "push" => refuse(
                codes::POLICY_REMOTE_WRITE,
                "remote-write",
                "`git push` writes to a remote repository".into(),
            ),
            "lfs" | "svn" | "p4"
                if rest.first().is_some_and(|x| {
                    matches!(
                        (sub, x.as_str()),
                        ("lfs", "push") | ("svn", "dcommit") | ("p4", "submit")
                    )
                }) =>
            {
                refuse(
                    codes::POLICY_REMOTE_WRITE,
                    "remote-write",
                    format!("`git {sub} {}` writes to a remote repository", rest[0]),
                )
            }
            "credential" | "credential-store" | "credential-cache" => refuse(
                codes::POLICY_SECRET_READ,
                "git-credential",
                "`git credential` reads stored credentials".into(),
            ),
            "filter-branch" | "daemon" | "instaweb" | "difftool" | "mergetool" | "send-email"
            | "web--browse" => refuse(
                codes::POLICY_GIT_EXEC_OPTION,
                "git-exec-subcommand",
                format!("`git {sub}` runs programs of its own"),
            ),
            "submodule" if rest.iter().any(|x| x == "foreach") => {
                let p = rest.iter().position(|x| x == "foreach").unwrap_or(0);
                let script = rest[p + 1..]
                    .iter()
                    .filter(|x| !x.starts_with("--"))
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" ");
                self.check_depth(&script, depth + 1).map(|_| ())
            }
            "bisect" if rest.first().is_some_and(|x| x == "run") => {
                if rest.len() > 1 {
                    self.check_program_line(&rest[1..], depth)
                } else {
                    Ok(())
                }
            }
            "rebase" => {
                for (j, x) in rest.iter().enumerate() {
                    let script = if x == "-x" || x == "--exec" {
                        rest.get(j + 1).cloned()
                    } else {
                        x.strip_prefix("--exec=").map(str::to_string)
                    };
                    if let Some(s) = script {
                        self.check_depth(&s, depth + 1)?;
                    }
                }
                Ok(())
            }
            "branch" | "tag" | "checkout" | "switch" | "update-ref" | "symbolic-ref" | "reflog"
            | "gc" | "prune" | "stash" | "worktree" | "remote" | "notes" | "replace" | "fetch"
            | "pull" => {
                if matches!(sub, "fetch" | "pull" | "remote") {
                    remote_url(sub, rest)?;
                }
                match shared_ref_change(sub, rest) {
                    Some(what) => refuse(
                        codes::POLICY_GIT_INTERNALS,
                        "git-refs",
                        format!("`git {sub}` {what}"),
                    ),
                    None => Ok(()),
                }
            }
            "clone" | "init"
                if rest.iter().any(|x| {
                    x.starts_with("--template") || x.starts_with("--separate-git-dir")
                }) =>
            {
                refuse(
                    codes::POLICY_GIT_EXEC_OPTION,
                    "git-exec-option",
                    format!("`git {sub} --template/--separate-git-dir` installs hooks or a git directory elsewhere"),
                )
            }
            "clone" | "ls-remote" | "archive" | "submodule" => remote_url(sub, rest),
            "maintenance" if matches!(rest.first().map(String::as_str), Some("start" | "register")) => {
                refuse(
                    codes::POLICY_PERSISTENCE,
                    "git-maintenance",
                    "`git maintenance start/register` schedules jobs that outlive the run".into(),
                )
            }
            "lfs"
                if rest.first().is_some_and(|x| x == "install" || x == "uninstall")
                    && !rest.iter().any(|x| x == "--local" || x == "--worktree") =>
            {
                refuse(
                    codes::POLICY_PERSISTENCE,
                    "git-config-global",
                    "`git lfs install` without --local changes the user's or the system's git config".into(),
                )
            }
            "apply"
                if rest.iter().any(|x| {
                    x == "--unsafe-paths"
                        || x.strip_prefix("--directory=")
                            .is_some_and(|d| d.starts_with('/') || d.starts_with('~') || d.split('/').any(|c| c == ".."))
                }) =>
            {
                refuse(
                    codes::POLICY_OUTSIDE_WORKTREE,
                    "write-outside",
                    "`git apply --unsafe-paths/--directory` writes outside the worktree".into(),
                )
            }
            "grep" if rest.iter().any(|x| x.starts_with("-O") || x.starts_with("--open-files-in-pager")) => {
                refuse(
                    codes::POLICY_GIT_EXEC_OPTION,
                    "git-exec-option",
                    "`git grep -O` opens the files with a program".into(),
                )
            }
            "help" if rest.iter().any(|x| x == "-w" || x == "--web" || x == "-i" || x == "--info") => {
                refuse(
                    codes::POLICY_GIT_EXEC_OPTION,
                    "git-exec-subcommand",
                    "`git help --web/--info` starts a browser or viewer".into(),
                )
            }
            "imap-send" | "request-pull" => refuse(
                codes::POLICY_REMOTE_WRITE,
                "remote-write",
                format!("`git {sub}` sends to another machine"),
            ),
            "var" if rest.iter().any(|x| x == "-l") => refuse(
                codes::POLICY_SECRET_READ,
                "git-config-read",
                "`git var -l` prints every config value, tokens included".into(),
            ),
            "clean"
                if rest.iter().any(|x| {
                    x.starts_with('-') && !x.starts_with("--") && x.contains('x') && x.contains('f')
                }) && rest.iter().any(|x| x.contains('d')) =>
            {
                Ok(())
            }
            _ => Ok(()),
        }
    }

    pub(crate) fn check_git_dir(
        &self,
        value: Option<&str>,
        shown: &str,
        st: &LineState,
    ) -> Result<(), PolicyViolation> {
        match value.map(|v| paths::classify(v, st, &self.roots)) {
            Some(Place::Inside) => Ok(()),
            _ => refuse(
                codes::POLICY_OUTSIDE_WORKTREE,
                "git-dir-outside",
                format!("git pointed at `{shown}`, outside the worktree"),
            ),
        }
    }
}

/// Network git subcommands given an explicit URL (not a configured remote, not
/// this machine): code and history from outside the repository.
pub(crate) fn remote_url(sub: &str, rest: &[String]) -> Result<(), PolicyViolation> {
    let url = rest.iter().find(|x| {
        let x = x.strip_prefix("--remote=").unwrap_or(x);
        let scp_like = !x.contains("://")
            && x.split_once(':')
                .is_some_and(|(h, _)| h.contains('@') || h.contains('.'))
            && !x.starts_with('-')
            && !x.starts_with('.')
            && !x.starts_with('/');
        (x.contains("://") && !x.starts_with("file://") && !is_loopback(url_host(x))) || scp_like
    });
    match url {
        Some(u) => refuse(
            codes::POLICY_REMOTE_CODE,
            "remote-code",
            format!("`git {sub}` of `{u}` brings code from outside the repository"),
        ),
        None => Ok(()),
    }
}

/// What a git subcommand would change in the refs, objects or settings that the
/// user's repository shares with every worktree (branches, tags, the stash, the
/// reflog, remotes, other worktrees), if anything: a step works on its own
/// detached checkout and never needs to.
pub(crate) fn shared_ref_change(sub: &str, rest: &[String]) -> Option<&'static str> {
    let plain: Vec<&str> = rest
        .iter()
        .map(String::as_str)
        .filter(|x| !x.starts_with('-'))
        .collect();
    // A short option, alone or in a cluster (`-Df`), or one of the long names.
    let flag = |short: &str, long: &[&str]| {
        rest.iter().any(|x| {
            long.contains(&x.split('=').next().unwrap_or(x))
                || (x.starts_with('-')
                    && !x.starts_with("--")
                    && x[1..].chars().any(|c| short.contains(c)))
        })
    };
    match sub {
        "branch" if flag("dDfmMC", &["--delete", "--force", "--move", "--copy"]) => {
            Some("deletes, moves or overwrites a branch")
        }
        "tag" if flag("df", &["--delete", "--force"]) => Some("deletes or moves a tag"),
        "checkout" | "switch" if flag("BC", &["--force-create"]) => {
            Some("resets an existing branch")
        }
        "update-ref" => Some("writes refs directly"),
        "symbolic-ref" if plain.len() > 1 || flag("d", &["--delete"]) => {
            Some("rewrites a symbolic ref")
        }
        "reflog" if matches!(plain.first(), Some(&("expire" | "delete"))) => {
            Some("erases the reflog, the record that recovers lost commits")
        }
        "gc" if rest.iter().any(|x| x.starts_with("--prune")) => Some("prunes unreachable objects"),
        "prune" => Some("deletes unreachable objects"),
        "stash" if matches!(plain.first(), Some(&("drop" | "clear"))) => {
            Some("drops stashed changes, which every worktree shares")
        }
        "worktree" if matches!(plain.first(), Some(&("remove" | "prune" | "move"))) => {
            Some("changes worktrees other than this one")
        }
        "notes"
            if matches!(
                plain.first(),
                Some(&("add" | "append" | "copy" | "edit" | "merge" | "remove" | "prune"))
            ) =>
        {
            Some("writes notes refs, which every worktree shares")
        }
        "replace" if !rest.iter().any(|x| x == "-l" || x == "--list") => {
            Some("replaces objects for every worktree")
        }
        // `git fetch . HEAD:main`, `+refs/heads/*:refs/heads/*`: a refspec that
        // writes local branches or tags.
        "fetch" | "pull"
            if plain.iter().skip(1).any(|r| {
                r.split_once(':').is_some_and(|(_, dst)| {
                    let dst = dst.trim_start_matches('+');
                    !dst.is_empty() && !dst.starts_with("refs/remotes/")
                })
            }) =>
        {
            Some("writes local branches or tags through a refspec")
        }
        "remote"
            if matches!(
                plain.first(),
                Some(
                    &("add" | "set-url" | "rename" | "remove" | "rm" | "set-head" | "set-branches")
                )
            ) =>
        {
            Some("changes the repository's remotes")
        }
        _ => None,
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
                ("git push origin HEAD", POLICY_REMOTE_WRITE),
                ("git branch -D main", POLICY_GIT_INTERNALS),
                ("git --git-dir=/srv/repo/.git log", POLICY_OUTSIDE_WORKTREE),
                (
                    "git clone https://example.invalid/x.git",
                    POLICY_REMOTE_CODE,
                ),
                (
                    "git rebase -x \x27sudo id\x27 HEAD~2",
                    POLICY_PRIVILEGE_ESCALATION,
                ),
                ("git config --global user.name x", POLICY_PERSISTENCE),
                (
                    "git clone -ccore.fsmonitor=id . copy",
                    POLICY_GIT_EXEC_OPTION,
                ),
                (
                    "git clone -qc core.hooksPath=hooks . copy",
                    POLICY_GIT_EXEC_OPTION,
                ),
                ("git clone -u/tmp/x . copy", POLICY_GIT_EXEC_OPTION),
            ],
            &[
                "git status --short",
                "git diff --stat HEAD~1",
                "git log --oneline -n 20",
                "git stash list",
                "git clone -q -b main . copy",
                "git clone -ccore.autocrlf=false . copy",
                "git add -A && git commit -m wip",
            ],
        );
    }
}
