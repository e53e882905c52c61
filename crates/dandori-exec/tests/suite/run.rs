use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use dandori_exec::run::base_env;
use dandori_exec::{CommandPolicy, CommandSpec, ExecError, ResourceLimits, run_command};
use dandori_trace::Masker;

fn sh(line: &str, cwd: &std::path::Path) -> CommandSpec {
    CommandSpec::shell(CommandPolicy::default().check(line).unwrap(), cwd)
}

#[test]
fn captures_exit_code_tails_and_logs() {
    let dir = tempfile::tempdir().unwrap();
    let spec = sh("echo out; echo err >&2; false", dir.path()).logs(&dir.path().join("logs"), "c1");
    let o = run_command(&spec).unwrap();
    assert_eq!(o.exit_code, Some(1));
    assert!(!o.success());
    assert_eq!(o.stdout_tail, "out\n");
    assert_eq!(o.stderr_tail, "err\n");
    let log = std::fs::read_to_string(dir.path().join("logs/c1.stdout.log")).unwrap();
    assert_eq!(log, "out\n");
}

#[test]
fn environment_is_explicit_and_stdin_is_null() {
    let dir = tempfile::tempdir().unwrap();
    let mut env = BTreeMap::new();
    env.insert("PATH".to_string(), "/usr/bin:/bin".to_string());
    env.insert("ONLY_THIS".to_string(), "1".to_string());
    let spec =
        CommandSpec::program("sh", ["-c", "env | sort; cat; echo done"], dir.path()).env(env);
    let o = run_command(&spec).unwrap();
    assert!(o.success(), "{o:?}");
    assert!(o.stdout_tail.contains("ONLY_THIS=1"));
    assert!(!o.stdout_tail.contains("HOME="), "{}", o.stdout_tail);
    assert!(o.stdout_tail.ends_with("done\n"));
}

#[test]
fn timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("survived");
    // A grandchild that would write the marker after 2 s.
    let script = format!("(sleep 2; touch {}) & sleep 30", marker.display());
    let spec = CommandSpec::program("sh", ["-c", script.as_str()], dir.path())
        .timeout(Duration::from_millis(300));
    let t = Instant::now();
    let o = run_command(&spec).unwrap();
    assert!(o.timed_out);
    assert_eq!(o.signal, Some(9));
    assert!(t.elapsed() < Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(2500));
    assert!(!marker.exists(), "grandchild outlived the timeout");
}

#[test]
fn stragglers_are_killed_when_the_command_ends() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("survived");
    let script = format!(
        "(sleep 1; touch {}) >/dev/null 2>&1 & echo started",
        marker.display()
    );
    let o = run_command(&CommandSpec::program(
        "sh",
        ["-c", script.as_str()],
        dir.path(),
    ))
    .unwrap();
    assert!(o.success());
    std::thread::sleep(Duration::from_millis(1500));
    assert!(!marker.exists());
}

#[test]
fn missing_program_and_cwd_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let err =
        run_command(&CommandSpec::program("no-such-tool-xyz", ["a"], dir.path())).unwrap_err();
    assert!(matches!(err, ExecError::ProgramNotFound { .. }), "{err}");
    assert!(err.to_string().contains("no-such-tool-xyz"));
    let err = run_command(&CommandSpec::program(
        "true",
        Vec::<String>::new(),
        dir.path().join("nope"),
    ))
    .unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");
}

#[test]
fn resource_limits_are_in_force() {
    let dir = tempfile::tempdir().unwrap();
    let limits = ResourceLimits {
        memory_bytes: Some(512 << 20),
        cpu_seconds: Some(60),
        file_size_bytes: Some(1 << 20),
        open_files: Some(64),
    };
    let spec = CommandSpec::program("sh", ["-c", "ulimit -d; ulimit -t; ulimit -n"], dir.path())
        .limits(limits);
    let o = run_command(&spec).unwrap();
    assert!(o.success(), "{o:?}");
    assert_eq!(o.stdout_tail, "524288\n60\n64\n");
    assert_eq!(o.limits_applied.len(), 4);
    // Writing past RLIMIT_FSIZE fails.
    let spec = CommandSpec::program("sh", ["-c", "head -c 2000000 /dev/zero > big"], dir.path())
        .limits(ResourceLimits {
            file_size_bytes: Some(1 << 20),
            ..ResourceLimits::default()
        });
    let o = run_command(&spec).unwrap();
    assert!(!o.success());
}

#[test]
fn secrets_are_masked_in_logs_and_tails() {
    let dir = tempfile::tempdir().unwrap();
    let spec = sh("echo token=abcd1234secret; echo fine", dir.path())
        .logs(dir.path(), "m")
        .masker(Masker::default());
    let o = run_command(&spec).unwrap();
    assert!(
        !o.stdout_tail.contains("abcd1234secret"),
        "{}",
        o.stdout_tail
    );
    let log = std::fs::read_to_string(dir.path().join("m.stdout.log")).unwrap();
    assert!(!log.contains("abcd1234secret"));
    assert!(log.contains("fine"));
}

#[test]
fn tails_keep_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = CommandSpec::program("sh", ["-c", "seq 1 20000"], dir.path());
    spec.tail_bytes = 32;
    let o = run_command(&spec).unwrap();
    assert!(o.stdout_tail.starts_with('…'));
    assert!(o.stdout_tail.ends_with("19999\n20000\n"));
    assert!(base_env().contains_key("PATH"));
}
