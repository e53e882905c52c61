//! The hostile and legitimate corpora (`tests/fixtures/policy/*.txt`): every
//! hostile line is refused, class by class, and every legitimate line allowed.

use std::collections::BTreeMap;

use dandori_exec::CommandPolicy;
use dandori_exec::policy::Decision;
use pretty_assertions::assert_eq;

const HOSTILE: &str = include_str!("../fixtures/policy/hostile.txt");
const LEGITIMATE: &str = include_str!("../fixtures/policy/legitimate.txt");

/// Hostile lines by class, in file order.
fn classes() -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut class = String::new();
    for line in HOSTILE.lines() {
        if let Some(name) = line.strip_prefix("# class: ") {
            class = name.trim().to_string();
            continue;
        }
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        assert!(!class.is_empty(), "line before any class: {line}");
        out.entry(class.clone()).or_default().push(line.to_string());
    }
    out
}

/// The policy of `run_command` (the tool loop adds `sh` and `bash`).
fn policy() -> CommandPolicy {
    let mut config = dandori_config::CommandPolicyConfig::default();
    config
        .allowed_commands
        .extend(["sh".to_string(), "bash".to_string()]);
    CommandPolicy::new(&config).unwrap()
}

fn assert_class_refused(class: &str) {
    let lines = classes().remove(class).unwrap_or_default();
    assert!(!lines.is_empty(), "no lines in class {class}");
    let policy = policy();
    let passed: Vec<(String, String)> = lines
        .iter()
        .filter_map(|l| {
            let v = policy.evaluate(l);
            // `needs approval` is refused too when a model or a plan asks.
            (v.decision == Decision::Allowed)
                .then(|| (l.clone(), format!("{:?} {:?}", v.decision, v.code)))
        })
        .collect();
    assert_eq!(passed, Vec::<(String, String)>::new(), "class {class}");
}

macro_rules! hostile_class {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                assert_class_refused(stringify!($name));
            }
        )*

        #[test]
        fn every_class_has_a_test_case() {
            let tested: Vec<&str> = vec![$(stringify!($name)),*];
            let in_file: Vec<String> = classes().into_keys().collect();
            let mut tested_sorted: Vec<String> = tested.iter().map(|s| s.to_string()).collect();
            tested_sorted.sort();
            assert_eq!(tested_sorted, in_file);
        }
    };
}

mod hostile {
    use super::assert_class_refused;
    use super::classes;
    use pretty_assertions::assert_eq;

    hostile_class!(
        expansion,
        symlink,
        xargs,
        here_string,
        shell_wrappers,
        find_exec,
        interpreter_code,
        package_runner,
        git_exec,
        system_dirs,
        outside_worktree,
        glob_paths,
        secret_read,
        persistence,
        privilege,
        destructive,
        loops_background,
        misc_shell,
        remote_write,
        search_path,
        program_env,
        exec_options,
        remote_code,
        git_refs,
        resolver,
        wrappers_and_tools,
    );
}

#[test]
fn hostile_corpus_has_at_least_150_lines() {
    let total: usize = classes().values().map(Vec::len).sum();
    assert!(total >= 150, "{total}");
}

#[test]
fn legitimate_corpus_is_allowed() {
    let policy = policy();
    let lines: Vec<&str> = LEGITIMATE
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .collect();
    assert!(lines.len() >= 40, "{}", lines.len());
    let refused: Vec<(String, String)> = lines
        .iter()
        .filter_map(|l| {
            let v = policy.evaluate(l);
            (v.decision != Decision::Allowed).then(|| {
                (
                    l.to_string(),
                    format!("{:?} {:?} {}", v.decision, v.code, v.message),
                )
            })
        })
        .collect();
    assert_eq!(refused, Vec::<(String, String)>::new());
}
