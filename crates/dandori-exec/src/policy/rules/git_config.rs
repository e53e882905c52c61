//! git config keys and environment variables: the ones that make git run a
//! program are refused, and only settings known to be harmless may be set.
//!
//! Hostile lines: class `git_exec` of `tests/fixtures/policy/hostile.txt`.

use super::*;

/// Config keys that make git run a program (lower-cased comparison).
pub(crate) fn check_git_key(key: &str) -> Result<(), PolicyViolation> {
    let k = key.to_ascii_lowercase();
    let exact = [
        "core.pager",
        "core.editor",
        "core.sshcommand",
        "core.fsmonitor",
        "core.hookspath",
        "core.askpass",
        "core.gitproxy",
        "core.alternaterefscommand",
        "core.worktree",
        "core.attributesfile",
        "core.excludesfile",
        "sequence.editor",
        "diff.external",
        "gpg.program",
        "credential.helper",
        "uploadpack.packobjectshook",
        "receive.procreceiverefs",
        "include.path",
        "web.browser",
        "protocol.allow",
        "ssh.variant",
        "http.proxy",
        "core.sshcommandoptions",
        "merge.tool",
        "diff.tool",
        "instaweb.httpd",
        "sendemail.smtpserver",
    ];
    let prefixes = [
        "alias.",
        "filter.",
        "includeif.",
        "pager.",
        "url.",
        "protocol.",
    ];
    let suffixes = [
        ".cmd",
        ".command",
        ".program",
        ".driver",
        ".textconv",
        ".helper",
        ".hook",
        ".editor",
        ".pager",
        ".sshcommand",
        ".uploadpack",
        ".receivepack",
        ".proxy",
        ".path",
        ".update",
    ];
    if exact.contains(&k.as_str())
        || prefixes.iter().any(|p| k.starts_with(p))
        || suffixes.iter().any(|s| k.ends_with(s))
    {
        return refuse(
            codes::POLICY_GIT_EXEC_OPTION,
            "git-exec-config",
            format!("git config `{key}` can make git run a program"),
        );
    }
    // Everything else must be a setting known to change only presentation,
    // identity, line endings or performance: git has hundreds of keys, and new
    // ones that run programs or write elsewhere appear with its releases
    // (`gpg.ssh.defaultKeyCommand`, `interactive.diffFilter`, `trace2.*Target`,
    // `init.templateDir`, `safe.directory`).
    if !SAFE_GIT_KEY_PREFIXES.iter().any(|p| k.starts_with(p))
        && !SAFE_GIT_KEYS.contains(&k.as_str())
    {
        return refuse(
            codes::POLICY_GIT_EXEC_OPTION,
            "git-config-key",
            format!(
                "git config `{key}` is not among the settings a command may change (identity, colours, line endings, diff and merge presentation, performance)"
            ),
        );
    }
    Ok(())
}

/// Git config sections whose every key is safe for a command to set.
pub(crate) const SAFE_GIT_KEY_PREFIXES: &[&str] = &[
    "user.",
    "author.",
    "committer.",
    "color.",
    "advice.",
    "i18n.",
    "log.",
    "status.",
    "column.",
    "rerere.",
    "blame.",
    "grep.",
    "pretty.",
];

/// Single git config keys that are safe for a command to set.
pub(crate) const SAFE_GIT_KEYS: &[&str] = &[
    "init.defaultbranch",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.filemode",
    "core.ignorecase",
    "core.quotepath",
    "core.whitespace",
    "core.precomposeunicode",
    "core.longpaths",
    "core.symlinks",
    "core.abbrev",
    "core.compression",
    "core.bigfilethreshold",
    "core.untrackedcache",
    "core.preloadindex",
    "core.splitindex",
    "core.commitgraph",
    "core.checkstat",
    "core.trustctime",
    "commit.gpgsign",
    "commit.verbose",
    "commit.cleanup",
    "commit.status",
    "tag.gpgsign",
    "tag.sort",
    "merge.conflictstyle",
    "merge.ff",
    "merge.renames",
    "merge.renamelimit",
    "merge.stat",
    "diff.renames",
    "diff.renamelimit",
    "diff.algorithm",
    "diff.noprefix",
    "diff.mnemonicprefix",
    "diff.colormoved",
    "diff.context",
    "diff.interhunkcontext",
    "diff.indentheuristic",
    "diff.statgraphwidth",
    "diff.submodule",
    "diff.ignoresubmodules",
    "pull.rebase",
    "pull.ff",
    "rebase.autosquash",
    "rebase.autostash",
    "rebase.stat",
    "gc.auto",
    "gc.autodetach",
    "fetch.prune",
    "fetch.parallel",
    "submodule.recurse",
    "submodule.fetchjobs",
    "protocol.version",
    "http.version",
    "http.postbuffer",
    "http.lowspeedlimit",
    "http.lowspeedtime",
    "pack.threads",
    "index.version",
    "index.threads",
    "feature.manyfiles",
    "checkout.workers",
    "checkout.defaultremote",
    "apply.whitespace",
    "am.threeway",
    "branch.sort",
    "help.autocorrect",
    "format.pretty",
    "versionsort.suffix",
];

/// Environment variables git reads that are safe to set.
pub(crate) const SAFE_GIT_ENV: &[&str] = &[
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
    "GIT_TERMINAL_PROMPT",
    "GIT_PAGER_IN_USE",
    "GIT_FLUSH",
    "GIT_TRACE",
];

pub(crate) fn check_git_env(name: &str) -> Result<(), PolicyViolation> {
    if name.starts_with("GIT_") && !SAFE_GIT_ENV.contains(&name) {
        return refuse(
            codes::POLICY_GIT_EXEC_OPTION,
            "git-env",
            format!("setting `{name}` changes what git runs or where it looks"),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::class_test;
    use crate::policy::codes::*;

    #[test]
    fn hostile_refused_legitimate_allowed() {
        class_test::check(
            &[
                ("git -c core.pager=less log", POLICY_GIT_EXEC_OPTION),
                ("git -c diff.md.textconv=cat diff", POLICY_GIT_EXEC_OPTION),
                ("git config alias.st \x27!sh\x27", POLICY_GIT_EXEC_OPTION),
                ("git -c init.templateDir=t init x", POLICY_GIT_EXEC_OPTION),
                ("GIT_SSH_COMMAND=ssh git fetch", POLICY_GIT_EXEC_OPTION),
            ],
            &[
                "git -c color.ui=never log -1",
                "git -c core.autocrlf=false diff",
                "GIT_AUTHOR_NAME=bot git commit -m x",
                "git config user.email ci@example.invalid",
            ],
        );
    }
}
