//! Error classification of seed 002 §9.1: every failed setup command gets an
//! [`ErrorKind`], and every kind one [`ErrorClass`] (retryable → exponential
//! backoff, fixable → command regeneration, fatal → stop with the reason).

use dandori_exec::CommandOutcome;
use serde::{Deserialize, Serialize};

/// What went wrong (names used in `common_errors` of the statistics, §10.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ErrorKind {
    /// DNS failure, connection refused/reset, network timeout.
    NetworkError,
    /// HTTP 5xx / 429 from a registry.
    TemporaryServerError,
    /// Another package-manager process holds a lock.
    LockContention,
    /// The registry stayed unreachable after the bounded retries.
    RegistryUnreachable,
    /// Dependency versions cannot be satisfied together.
    VersionConflict,
    /// A package or version does not exist.
    PackageNotFound,
    /// The registry does not serve a version the project pins exactly (an HTTP
    /// 404 for `name@1.2.3`, no `name==1.2.3`): the install is blocked, not fixable
    /// by another command.
    PackageUnavailable,
    /// A manifest does not parse (YAML, JSON, TOML).
    ConfigSyntaxError,
    /// `npm ci` / `--frozen-lockfile`: the lock file disagrees with the manifest.
    LockfileOutOfSync,
    /// The pinned runtime version is not installed.
    RuntimeUnavailable,
    /// A non-zero exit that matched no known pattern.
    CommandFailed,
    /// The command policy refused the command.
    PolicyViolation,
    /// The command's program is not installed.
    ToolMissing,
    /// No space left (or `RLIMIT_FSIZE` hit).
    DiskFull,
    /// Out of memory (or killed, or `RLIMIT_DATA` / `RLIMIT_CPU` hit).
    OutOfMemory,
    /// Needs root or other permissions the run does not have.
    PermissionDenied,
    /// `command_timeout_seconds` elapsed.
    CommandTimeout,
    /// The command could not be started at all.
    SpawnFailed,
}

/// Seed 002 §9.1.1 / §9.1.2 / §9.1.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    Retryable,
    Fixable,
    Fatal,
}

impl ErrorKind {
    /// The retry decision: exhaustive, so a new kind forces a choice.
    pub fn class(self) -> ErrorClass {
        match self {
            ErrorKind::NetworkError
            | ErrorKind::TemporaryServerError
            | ErrorKind::LockContention => ErrorClass::Retryable,
            ErrorKind::VersionConflict
            | ErrorKind::PackageNotFound
            | ErrorKind::ConfigSyntaxError
            | ErrorKind::LockfileOutOfSync
            | ErrorKind::RuntimeUnavailable
            | ErrorKind::CommandFailed
            | ErrorKind::PolicyViolation => ErrorClass::Fixable,
            ErrorKind::RegistryUnreachable
            | ErrorKind::PackageUnavailable
            | ErrorKind::ToolMissing
            | ErrorKind::DiskFull
            | ErrorKind::OutOfMemory
            | ErrorKind::PermissionDenied
            | ErrorKind::CommandTimeout
            | ErrorKind::SpawnFailed => ErrorClass::Fatal,
        }
    }

    /// What the kind means, for the regeneration prompt's error analysis.
    pub fn describe(self) -> &'static str {
        match self {
            ErrorKind::NetworkError => {
                "a network error (DNS, connection refused or reset, timeout)"
            }
            ErrorKind::TemporaryServerError => {
                "the registry answered with a temporary server error (HTTP 5xx / 429)"
            }
            ErrorKind::LockContention => "another package-manager process holds a lock",
            ErrorKind::RegistryUnreachable => {
                "the package registry stayed unreachable after the retries"
            }
            ErrorKind::VersionConflict => "dependency versions cannot be satisfied together",
            ErrorKind::PackageNotFound => "a package or version does not exist in the registry",
            ErrorKind::PackageUnavailable => {
                "the registry does not serve a version the project pins exactly"
            }
            ErrorKind::ConfigSyntaxError => "a manifest or configuration file does not parse",
            ErrorKind::LockfileOutOfSync => "the lock file disagrees with the manifest",
            ErrorKind::RuntimeUnavailable => "the pinned language runtime version is not installed",
            ErrorKind::CommandFailed => {
                "the command exited non-zero with no recognised error pattern"
            }
            ErrorKind::PolicyViolation => {
                "dandori's command policy refused the command before it ran"
            }
            ErrorKind::ToolMissing => "the command's program is not installed",
            ErrorKind::DiskFull => "no space left on the device",
            ErrorKind::OutOfMemory => "the command ran out of memory or was killed",
            ErrorKind::PermissionDenied => "the command needs permissions the run does not have",
            ErrorKind::CommandTimeout => "the command exceeded command_timeout_seconds",
            ErrorKind::SpawnFailed => "the command could not be started",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::NetworkError => "NetworkError",
            ErrorKind::TemporaryServerError => "TemporaryServerError",
            ErrorKind::LockContention => "LockContention",
            ErrorKind::RegistryUnreachable => "RegistryUnreachable",
            ErrorKind::VersionConflict => "VersionConflict",
            ErrorKind::PackageNotFound => "PackageNotFound",
            ErrorKind::PackageUnavailable => "PackageUnavailable",
            ErrorKind::ConfigSyntaxError => "ConfigSyntaxError",
            ErrorKind::LockfileOutOfSync => "LockfileOutOfSync",
            ErrorKind::RuntimeUnavailable => "RuntimeUnavailable",
            ErrorKind::CommandFailed => "CommandFailed",
            ErrorKind::PolicyViolation => "PolicyViolation",
            ErrorKind::ToolMissing => "ToolMissing",
            ErrorKind::DiskFull => "DiskFull",
            ErrorKind::OutOfMemory => "OutOfMemory",
            ErrorKind::PermissionDenied => "PermissionDenied",
            ErrorKind::CommandTimeout => "CommandTimeout",
            ErrorKind::SpawnFailed => "SpawnFailed",
        }
    }
}

const DISK: &[&str] = &[
    "no space left on device",
    "enospc",
    "disk quota exceeded",
    "file too large",
];
const MEMORY: &[&str] = &[
    "cannot allocate memory",
    "memoryerror",
    "out of memory",
    "heap out of memory",
    "java.lang.outofmemoryerror",
    "enomem",
];
const NETWORK: &[&str] = &[
    "could not resolve host",
    "temporary failure in name resolution",
    "name or service not known",
    "network is unreachable",
    "connection refused",
    "connection reset",
    "connection timed out",
    "timed out while",
    "read timed out",
    "etimedout",
    "econnreset",
    "econnrefused",
    "enotfound",
    "eai_again",
    "getaddrinfo",
    "failed to establish a new connection",
    "unknownhostexception",
    "unknown host",
    "could not transfer artifact",
    "dial tcp",
    "no route to host",
    "failed to fetch",
    "network error",
    "error sending request",
    "failed to download",
    "socket hang up",
];
const SERVER: &[&str] = &[
    "503 service unavailable",
    "502 bad gateway",
    "504 gateway",
    "500 internal server error",
    "429 too many requests",
    "status code 503",
    "status code 502",
    "http error 503",
    "e503",
    "e502",
];
const LOCK: &[&str] = &[
    "could not get lock",
    "waiting for cache lock",
    "blocking waiting for file lock",
    "ebusy",
    "another process is using",
    "lock file is held",
    "unable to acquire lock",
];
const LOCKFILE: &[&str] = &[
    "can only install packages when your package.json and package-lock.json",
    "missing from lock file",
    "lockfile needs to be updated",
    "frozen-lockfile",
    "the lockfile would have been modified",
    "err_pnpm_outdated_lockfile",
    "poetry.lock is not consistent",
    "pyproject.toml changed significantly since poetry.lock",
    "lock file is not up to date",
];
const NOT_FOUND: &[&str] = &[
    "no matching distribution found",
    "could not find a version that satisfies",
    "e404",
    "404 not found",
    "packagenotfounderror",
    "packagesnotfounderror",
    "not in this registry",
    "no matching version found",
    "is not in the npm registry",
    "was not found in the package registry",
    "could not find artifact",
    "unknown revision",
];
const CONFLICT: &[&str] = &[
    "resolutionimpossible",
    "conflicting dependencies",
    "eresolve",
    "version solving failed",
    "no solution found when resolving",
    "unsatisfiableerror",
    "incompatible",
    "dependency conflict",
];
const SYNTAX: &[&str] = &[
    "yaml.scanner",
    "yaml.parser",
    "jsondecodeerror",
    "ejsonparse",
    "toml parse error",
    "invalid requirement",
    "failed to parse",
    "could not parse",
    "unexpected token",
    "non-parseable pom",
    "malformed",
];
const RUNTIME: &[&str] = &[
    "no interpreter found",
    "requested python version",
    "unsupported engine",
    "ebadengine",
    "toolchain not available",
];
const PERMISSION: &[&str] = &[
    "permission denied",
    "eacces",
    "operation not permitted",
    "eperm",
    "must be run as root",
];

fn any(hay: &str, needles: &[&str]) -> bool {
    needles.iter().any(|n| hay.contains(n))
}

/// Classifies a failed command from its exit, signal and output tails.
pub fn classify(outcome: &CommandOutcome) -> ErrorKind {
    if outcome.timed_out {
        return ErrorKind::CommandTimeout;
    }
    let text = format!("{}\n{}", outcome.stdout_tail, outcome.stderr_tail).to_ascii_lowercase();
    match outcome.signal {
        // SIGXFSZ: RLIMIT_FSIZE.
        Some(25) => return ErrorKind::DiskFull,
        // SIGKILL without our timeout (OOM killer), SIGXCPU (RLIMIT_CPU).
        Some(9) | Some(24) => return ErrorKind::OutOfMemory,
        _ => {}
    }
    if any(&text, DISK) {
        ErrorKind::DiskFull
    } else if any(&text, MEMORY) {
        ErrorKind::OutOfMemory
    } else if any(&text, LOCKFILE) {
        ErrorKind::LockfileOutOfSync
    } else if any(&text, NETWORK) {
        ErrorKind::NetworkError
    } else if any(&text, SERVER) {
        ErrorKind::TemporaryServerError
    } else if any(&text, LOCK) {
        ErrorKind::LockContention
    } else if unavailable_pin(&format!("{}\n{}", outcome.stdout_tail, outcome.stderr_tail))
        .is_some()
    {
        ErrorKind::PackageUnavailable
    } else if any(&text, NOT_FOUND) {
        ErrorKind::PackageNotFound
    } else if any(&text, CONFLICT) {
        ErrorKind::VersionConflict
    } else if any(&text, RUNTIME) {
        ErrorKind::RuntimeUnavailable
    } else if any(&text, SYNTAX) {
        ErrorKind::ConfigSyntaxError
    } else if outcome.exit_code == Some(127) || text.contains("command not found") {
        ErrorKind::ToolMissing
    } else if any(&text, PERMISSION) {
        ErrorKind::PermissionDenied
    } else {
        ErrorKind::CommandFailed
    }
}

/// A package version the project pins exactly and the registry does not serve,
/// read from an installer's output: `(package, version)`.
///
/// npm (`404 Not Found - GET …/name/-/name-1.2.3.tgz`, `'name@1.2.3' is not in
/// this registry`, `No matching version found for name@1.2.3`), pnpm
/// (`ERR_PNPM_NO_MATCHING_VERSION`, `ERR_PNPM_FETCH_404`), yarn 1 (`Couldn't find
/// any versions for "name" that matches "1.2.3"`, a tarball's 404), pip (`No
/// matching distribution found for name==1.2.3`) and uv (`there is no version of
/// name==1.2.3`, a locked file's 404). Ranges (`^1.2`, `>=1`) are not pins: no
/// release matching a range is a resolution problem, not a missing release.
pub fn unavailable_pin(output: &str) -> Option<(String, String)> {
    const PATTERNS: &[&str] = &[
        // npm, pnpm: "No matching version found for name@1.2.3".
        r"(?i)no matching version found for (@?[A-Za-z0-9._\-/]+?)@v?(\d[0-9A-Za-z.+\-]*?)[.,]?(?:\s|$)",
        // npm: "'name@1.2.3' is not in this registry".
        r"(?i)'(@?[A-Za-z0-9._\-/]+?)@v?(\d[0-9A-Za-z.+\-]*)' is not in (?:this|the npm) registry",
        // yarn 1.
        r#"(?i)couldn't find any versions for "(@?[A-Za-z0-9._\-/]+)" that match(?:es)? "v?(\d[0-9A-Za-z.+\-]*)""#,
        // pip.
        r"(?i)no matching distribution found for ([A-Za-z0-9._\-]+)\s*===?\s*(\d[0-9A-Za-z.+!\-]*)",
        // uv.
        r"(?i)there is no version of ([A-Za-z0-9._\-]+)\s*===?\s*(\d[0-9A-Za-z.+!\-]*)",
        // uv (a locked file): "Failed to download `name==1.2.3`" with a 404 below.
        r"(?is)failed to (?:download|fetch) `([A-Za-z0-9._\-]+)==(\d[0-9A-Za-z.+!\-]*)`.*404",
    ];
    for p in PATTERNS {
        if let Ok(re) = regex::Regex::new(p)
            && let Some(c) = re.captures(output)
        {
            let version = c[2].trim_end_matches(['.', ',']).to_string();
            return Some((c[1].to_string(), version));
        }
    }
    // A tarball's 404 (npm, pnpm, yarn): `…/name/-/name-1.2.3.tgz` or
    // `…/@scope/name/-/name-1.2.3.tgz`.
    let tarball = regex::Regex::new(
        r"(?i)(?:404[^\n]*?https?://\S+?/((?:@[^/\s]+/)?[^/\s]+)/-/[^/\s]+?-(\d[0-9A-Za-z.+\-]*?)\.tgz|https?://\S+?/((?:@[^/\s]+/)?[^/\s]+)/-/[^/\s]+?-(\d[0-9A-Za-z.+\-]*?)\.tgz[^\n]*404)",
    )
    .ok()?;
    let c = tarball.captures(output)?;
    let name = c.get(1).or_else(|| c.get(3))?.as_str().to_string();
    let version = c.get(2).or_else(|| c.get(4))?.as_str().to_string();
    Some((name.replace("%2f", "/").replace("%2F", "/"), version))
}
