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

/// A pinned version the registry does not serve, in the words of the real
/// tools (captured from pnpm 10, yarn 1.22, npm 10, pip 23 and uv against the
/// npm registry and PyPI with `left-pad@9.9.9`; the tarball 404 from `npm ci`
/// against a registry that lacks the file): package and version are read out;
/// a missing package or an unmatched range is not a pin.
#[test]
fn unavailable_pins_are_read_from_every_installer() {
    use dandori_env::classify::unavailable_pin;
    let pin = |p: &str, v: &str| Some((p.to_string(), v.to_string()));
    let cases = [
        (
            " ERR_PNPM_NO_MATCHING_VERSION  No matching version found for left-pad@9.9.9 while fetching it from https://registry.npmjs.org/",
            pin("left-pad", "9.9.9"),
        ),
        (
            "error Couldn't find any versions for \"left-pad\" that matches \"9.9.9\"",
            pin("left-pad", "9.9.9"),
        ),
        (
            "npm error notarget No matching version found for left-pad@9.9.9.",
            pin("left-pad", "9.9.9"),
        ),
        (
            "ERROR: Could not find a version that satisfies the requirement left-pad==9.9.9 (from versions: 0.0.3)\nERROR: No matching distribution found for left-pad==9.9.9",
            pin("left-pad", "9.9.9"),
        ),
        (
            "  × No solution found when resolving dependencies:\n  ╰─▶ Because there is no version of demo-lib==9.9.9 and you require demo-lib==9.9.9, we can conclude that your requirements are unsatisfiable.",
            pin("demo-lib", "9.9.9"),
        ),
        (
            "npm error 404 Not Found - GET https://registry.npmjs.org/top-sites/-/top-sites-1.1.225.tgz - Not found",
            pin("top-sites", "1.1.225"),
        ),
        (
            "npm error 404 Not Found - GET https://registry.npmjs.org/@scope%2fpkg/-/pkg-2.0.1.tgz",
            pin("@scope/pkg", "2.0.1"),
        ),
        (
            "npm ERR! 404 Not Found - GET https://registry.npmjs.org/nope",
            None,
        ),
        (
            "npm error notarget No matching version found for left-pad@^9.0.0.",
            None,
        ),
        ("ERROR: No matching distribution found for reqests", None),
    ];
    for (text, want) in &cases {
        assert_eq!(&unavailable_pin(text), want, "{text}");
    }
    let o = CommandOutcome {
        stderr_tail: cases[0].0.to_string(),
        ..outcome(Some(1), None, false, "")
    };
    assert_eq!(classify(&o), ErrorKind::PackageUnavailable);
    assert_eq!(ErrorKind::PackageUnavailable.class(), ErrorClass::Fatal);
}
