//! Reason codes of command-policy rejections (seed 002 §11.1). Every code is
//! documented in `docs/environment.md`; they are public contract.

/// The command line is empty (or only comments).
pub const POLICY_EMPTY_COMMAND: &str = "POLICY_EMPTY_COMMAND";
/// The line cannot be split as a shell would (unterminated quote, unbalanced
/// parenthesis, control character, a redirection without a target).
pub const POLICY_PARSE_ERROR: &str = "POLICY_PARSE_ERROR";
/// Valid shell, but a construct the policy does not accept (here-documents).
pub const POLICY_UNSUPPORTED_SYNTAX: &str = "POLICY_UNSUPPORTED_SYNTAX";
/// The line is longer than `MAX_LINE_LEN`.
pub const POLICY_TOO_LONG: &str = "POLICY_TOO_LONG";
/// The executable is not on the allowlist.
pub const POLICY_NOT_ALLOWED: &str = "POLICY_NOT_ALLOWED";
/// `sudo`, `su`, `doas`, `pkexec`, setuid bits and other privilege escalation.
pub const POLICY_PRIVILEGE_ESCALATION: &str = "POLICY_PRIVILEGE_ESCALATION";
/// A read or write of a system location: `/etc`, `/sys`, `/proc/sys`, `/boot`,
/// devices other than `/dev/null`-like ones, `/root`, the docker socket.
pub const POLICY_SYSTEM_PATH: &str = "POLICY_SYSTEM_PATH";
/// Access to credential stores: `~/.ssh`, `~/.aws`, `~/.gnupg`, `.netrc`, …
pub const POLICY_CREDENTIAL_ACCESS: &str = "POLICY_CREDENTIAL_ACCESS";
/// Network configuration tools: `ip`, `ifconfig`, `iptables`, `route`, `nmcli`, …
pub const POLICY_NETWORK_CONFIG: &str = "POLICY_NETWORK_CONFIG";
/// System control: `shutdown`, `reboot`, `systemctl`, `mount`, `mkfs`, `sysctl`, …
pub const POLICY_SYSTEM_CONTROL: &str = "POLICY_SYSTEM_CONTROL";
/// Output piped into a shell or interpreter (`curl … | sh`), or a shell fed with a
/// command substitution (`sh -c "$(curl …)"`).
pub const POLICY_PIPE_TO_SHELL: &str = "POLICY_PIPE_TO_SHELL";
/// Recursive deletion of `/`, `~`, `..`, `.`, `*` or a top-level directory.
pub const POLICY_DESTRUCTIVE_DELETE: &str = "POLICY_DESTRUCTIVE_DELETE";
/// `chmod 777 /`, recursive `chmod`/`chown` of absolute or home paths.
pub const POLICY_DANGEROUS_PERMISSIONS: &str = "POLICY_DANGEROUS_PERMISSIONS";
/// A shell function that calls itself (`:(){ :|:& };:`).
pub const POLICY_FORK_BOMB: &str = "POLICY_FORK_BOMB";
/// Any other shell function definition.
pub const POLICY_SHELL_FUNCTION: &str = "POLICY_SHELL_FUNCTION";
/// Metacharacter abuse: consecutive or dangling operators (`;;`, `&& &&`, a
/// trailing `|`), an empty command between operators.
pub const POLICY_OPERATOR_ABUSE: &str = "POLICY_OPERATOR_ABUSE";
/// A command sent to the background (`&`, `nohup`, `setsid`, `disown`,
/// `screen`, `tmux`): it would outlive its check.
pub const POLICY_BACKGROUND_PROCESS: &str = "POLICY_BACKGROUND_PROCESS";
/// The program name itself is computed at run time (`$CMD`, `$(…)`), or the
/// program is a script the line itself wrote (`echo … > run.sh && sh run.sh`).
pub const POLICY_DYNAMIC_COMMAND: &str = "POLICY_DYNAMIC_COMMAND";
/// `eval`, `source`, `.`: code the policy cannot see.
pub const POLICY_EVAL: &str = "POLICY_EVAL";
/// Loader or shell start-up variables (`LD_PRELOAD`, `BASH_ENV`, `IFS`, …).
pub const POLICY_DANGEROUS_ENV: &str = "POLICY_DANGEROUS_ENV";
/// A configured `forbidden_patterns` regex matched a simple command.
pub const POLICY_FORBIDDEN_PATTERN: &str = "POLICY_FORBIDDEN_PATTERN";
/// Command substitutions nested deeper than the policy follows.
pub const POLICY_TOO_DEEP: &str = "POLICY_TOO_DEEP";

/// A path outside the worktree in a read or write position: `..` that climbs out,
/// the home directory, an absolute path outside the worktree and the temp dirs
/// (writes), `cd` out of the worktree followed by a write.
pub const POLICY_OUTSIDE_WORKTREE: &str = "POLICY_OUTSIDE_WORKTREE";
/// An expansion the policy cannot resolve (`${X:-/}`, `$(…)`, an unknown
/// variable, arguments read by `xargs`) in a destructive or write position.
pub const POLICY_UNRESOLVED_EXPANSION: &str = "POLICY_UNRESOLVED_EXPANSION";
/// A git option, config key or environment variable that makes git run a program
/// (`-c core.pager=…`, `alias.x=!…`, `core.fsmonitor`, `core.sshCommand`,
/// `core.hooksPath`, `filter.*`, `diff.external`, `GIT_SSH_COMMAND`, `--upload-pack`).
pub const POLICY_GIT_EXEC_OPTION: &str = "POLICY_GIT_EXEC_OPTION";
/// A write into `.git/` (hooks, config) or a deletion of it, or a change to what
/// the repository shares with every worktree: deleting, moving or overwriting
/// branches and tags, `update-ref`, expiring the reflog, pruning objects,
/// dropping stashes, removing worktrees, changing remotes.
pub const POLICY_GIT_INTERNALS: &str = "POLICY_GIT_INTERNALS";
/// A read of secrets: environment dumps (`env`, `printenv`, `export -p`, `set`,
/// `declare -x`), `/proc/*/environ`, secret-named variables (`$OPENAI_API_KEY`).
pub const POLICY_SECRET_READ: &str = "POLICY_SECRET_READ";
/// Changes that outlive the run: shell start-up files, `crontab`, `at`,
/// `pip install --user`, `npm -g`, `git config --global`, `cargo install`,
/// `rustup default`.
pub const POLICY_PERSISTENCE: &str = "POLICY_PERSISTENCE";
/// A symbolic or hard link to a path outside the worktree (`ln -s / r`).
pub const POLICY_LINK_OUTSIDE: &str = "POLICY_LINK_OUTSIDE";
/// Inline interpreter code (`python -c`, `node -e`, `perl -e`, `awk`, `sed e`)
/// that runs programs, reads the environment, deletes files or names paths
/// outside the worktree; code a build tool evaluates from its arguments (`make
/// --eval`, `$(shell …)` in a make argument, cmake scripts from outside the
/// worktree).
pub const POLICY_INTERPRETER_CODE: &str = "POLICY_INTERPRETER_CODE";
/// A loop or command that never ends: `while true`, `until false`, `for ((;;))`,
/// `yes`, `watch`, `sleep infinity`, `tail -f`.
pub const POLICY_INFINITE_LOOP: &str = "POLICY_INFINITE_LOOP";
/// A write to a machine elsewhere that cannot be taken back: `git push`,
/// publishing a package (`npm publish`, `cargo publish`, `twine upload`, …), an
/// HTTP upload or POST/PUT/PATCH/DELETE to a host other than this machine.
pub const POLICY_REMOTE_WRITE: &str = "POLICY_REMOTE_WRITE";
/// Code from an address that is not the package registry: an install from a URL
/// or a VCS (`pip install git+https://…`, `npm install https://…/x.tgz`), another
/// index (`--index-url`, `--registry`), a remote module run in place (`go run
/// host/mod@v`, `bun run https://…`), or a file this line downloaded and then runs.
pub const POLICY_REMOTE_CODE: &str = "POLICY_REMOTE_CODE";
/// A server listening on every interface (`0.0.0.0`, `::`), or `http.server`
/// without a loopback `--bind`: it would serve the worktree (and whatever the
/// step wrote) to the network.
pub const POLICY_LISTEN_ALL_INTERFACES: &str = "POLICY_LISTEN_ALL_INTERFACES";

/// Every code, for documentation checks.
pub const ALL: &[&str] = &[
    POLICY_EMPTY_COMMAND,
    POLICY_PARSE_ERROR,
    POLICY_UNSUPPORTED_SYNTAX,
    POLICY_TOO_LONG,
    POLICY_NOT_ALLOWED,
    POLICY_PRIVILEGE_ESCALATION,
    POLICY_SYSTEM_PATH,
    POLICY_CREDENTIAL_ACCESS,
    POLICY_NETWORK_CONFIG,
    POLICY_SYSTEM_CONTROL,
    POLICY_PIPE_TO_SHELL,
    POLICY_DESTRUCTIVE_DELETE,
    POLICY_DANGEROUS_PERMISSIONS,
    POLICY_FORK_BOMB,
    POLICY_SHELL_FUNCTION,
    POLICY_OPERATOR_ABUSE,
    POLICY_BACKGROUND_PROCESS,
    POLICY_DYNAMIC_COMMAND,
    POLICY_EVAL,
    POLICY_DANGEROUS_ENV,
    POLICY_FORBIDDEN_PATTERN,
    POLICY_TOO_DEEP,
    POLICY_OUTSIDE_WORKTREE,
    POLICY_UNRESOLVED_EXPANSION,
    POLICY_GIT_EXEC_OPTION,
    POLICY_GIT_INTERNALS,
    POLICY_SECRET_READ,
    POLICY_PERSISTENCE,
    POLICY_LINK_OUTSIDE,
    POLICY_INTERPRETER_CODE,
    POLICY_INFINITE_LOOP,
    POLICY_REMOTE_WRITE,
    POLICY_REMOTE_CODE,
    POLICY_LISTEN_ALL_INTERFACES,
];
