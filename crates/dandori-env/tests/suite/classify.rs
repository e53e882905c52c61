use dandori_env::classify::{ErrorClass, ErrorKind, classify};
use dandori_exec::CommandOutcome;
use pretty_assertions::assert_eq;

fn outcome(
    exit: Option<i32>,
    signal: Option<i32>,
    timed_out: bool,
    stderr: &str,
) -> CommandOutcome {
    CommandOutcome {
        command: "x".into(),
        exit_code: exit,
        signal,
        timed_out,
        duration_ms: 1,
        stdout_tail: String::new(),
        stderr_tail: stderr.into(),
        stdout_log: None,
        stderr_log: None,
        limits_applied: vec![],
    }
}

#[test]
fn failures_are_classified_per_seed_9_1() {
    let cases: Vec<(CommandOutcome, ErrorKind, ErrorClass)> = vec![
        (
            outcome(
                Some(1),
                None,
                false,
                "curl: (6) Could not resolve host: pypi.org",
            ),
            ErrorKind::NetworkError,
            ErrorClass::Retryable,
        ),
        (
            outcome(Some(1), None, false, "npm ERR! code ETIMEDOUT"),
            ErrorKind::NetworkError,
            ErrorClass::Retryable,
        ),
        (
            outcome(
                Some(1),
                None,
                false,
                "Could not transfer artifact x from/to central: Unknown host repo.maven.apache.org",
            ),
            ErrorKind::NetworkError,
            ErrorClass::Retryable,
        ),
        (
            outcome(Some(1), None, false, "HTTP error 503 Service Unavailable"),
            ErrorKind::TemporaryServerError,
            ErrorClass::Retryable,
        ),
        (
            outcome(
                Some(1),
                None,
                false,
                "Blocking waiting for file lock on package cache",
            ),
            ErrorKind::LockContention,
            ErrorClass::Retryable,
        ),
        (
            outcome(
                Some(1),
                None,
                false,
                "ERROR: No matching distribution found for reqests",
            ),
            ErrorKind::PackageNotFound,
            ErrorClass::Fixable,
        ),
        (
            outcome(
                Some(1),
                None,
                false,
                "npm ERR! 404 Not Found - GET https://registry.npmjs.org/nope",
            ),
            ErrorKind::PackageNotFound,
            ErrorClass::Fixable,
        ),
        (
            outcome(
                Some(1),
                None,
                false,
                "ERROR: ResolutionImpossible: conflicting dependencies",
            ),
            ErrorKind::VersionConflict,
            ErrorClass::Fixable,
        ),
        (
            outcome(Some(1), None, false, "npm ERR! code ERESOLVE"),
            ErrorKind::VersionConflict,
            ErrorClass::Fixable,
        ),
        (
            outcome(
                Some(1),
                None,
                false,
                "yaml.scanner.ScannerError: mapping values are not allowed here",
            ),
            ErrorKind::ConfigSyntaxError,
            ErrorClass::Fixable,
        ),
        (
            outcome(
                Some(1),
                None,
                false,
                "npm ERR! `npm ci` can only install packages when your package.json and package-lock.json are in sync",
            ),
            ErrorKind::LockfileOutOfSync,
            ErrorClass::Fixable,
        ),
        (
            outcome(Some(2), None, false, "something odd"),
            ErrorKind::CommandFailed,
            ErrorClass::Fixable,
        ),
        (
            outcome(
                Some(1),
                None,
                false,
                "OSError: [Errno 28] No space left on device",
            ),
            ErrorKind::DiskFull,
            ErrorClass::Fatal,
        ),
        (
            outcome(Some(1), None, false, "MemoryError"),
            ErrorKind::OutOfMemory,
            ErrorClass::Fatal,
        ),
        (
            outcome(None, Some(9), false, ""),
            ErrorKind::OutOfMemory,
            ErrorClass::Fatal,
        ),
        (
            outcome(None, Some(25), false, ""),
            ErrorKind::DiskFull,
            ErrorClass::Fatal,
        ),
        (
            outcome(
                Some(1),
                None,
                false,
                "mkdir: cannot create directory '/opt/x': Permission denied",
            ),
            ErrorKind::PermissionDenied,
            ErrorClass::Fatal,
        ),
        (
            outcome(Some(127), None, false, "sh: 1: gradle: not found"),
            ErrorKind::ToolMissing,
            ErrorClass::Fatal,
        ),
        (
            outcome(None, Some(9), true, ""),
            ErrorKind::CommandTimeout,
            ErrorClass::Fatal,
        ),
    ];
    let got: Vec<(ErrorKind, ErrorClass)> = cases
        .iter()
        .map(|(o, _, _)| (classify(o), classify(o).class()))
        .collect();
    let want: Vec<(ErrorKind, ErrorClass)> = cases.iter().map(|(_, k, c)| (*k, *c)).collect();
    assert_eq!(got, want);
    assert_eq!(ErrorKind::RegistryUnreachable.class(), ErrorClass::Fatal);
}
