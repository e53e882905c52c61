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
        find_actions,
        absolute_reads,
        listen_address,
        stdin_makefile,
        write_then_execute,
        loopback_install,
        make_eval,
        cmake_code,
        node_inline_scripts,
        awk_commands,
        env_split_string,
        search_path_dirs,
        shared_temp,
        loopback_http,
    );
}

/// Legitimate lines by class (`# class: NAME` in `legitimate.txt`; lines before
/// the first header are the general corpus).
fn legitimate_classes() -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut class = String::new();
    for line in LEGITIMATE.lines() {
        if let Some(name) = line.strip_prefix("# class: ") {
            class = name.trim().to_string();
            continue;
        }
        if class.is_empty() || line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        out.entry(class.clone()).or_default().push(line.to_string());
    }
    out
}

fn assert_class_allowed(class: &str) {
    let lines = legitimate_classes().remove(class).unwrap_or_default();
    assert!(!lines.is_empty(), "no legitimate lines in class {class}");
    let policy = policy();
    let refused: Vec<(String, String)> = lines
        .iter()
        .filter_map(|l| {
            let v = policy.evaluate(l);
            (v.decision != Decision::Allowed).then(|| {
                (
                    l.clone(),
                    format!("{:?} {:?} {}", v.decision, v.code, v.message),
                )
            })
        })
        .collect();
    assert_eq!(refused, Vec::<(String, String)>::new(), "class {class}");
}

/// Every class with legitimate lines has hostile ones too, and a test.
macro_rules! legitimate_class {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                assert_class_allowed(stringify!($name));
            }
        )*

        #[test]
        fn every_legitimate_class_has_a_test_case_and_hostile_lines() {
            let mut tested: Vec<String> = vec![$(stringify!($name).to_string()),*];
            tested.sort();
            let in_file: Vec<String> = legitimate_classes().into_keys().collect();
            assert_eq!(tested, in_file);
            let hostile = classes();
            let without: Vec<&String> = in_file.iter().filter(|c| !hostile.contains_key(*c)).collect();
            assert_eq!(without, Vec::<&String>::new());
        }
    };
}

mod legitimate {
    use super::{assert_class_allowed, classes, legitimate_classes};
    use pretty_assertions::assert_eq;

    legitimate_class!(
        make_eval,
        cmake_code,
        node_inline_scripts,
        awk_commands,
        env_split_string,
        search_path_dirs,
        shared_temp,
        loopback_http,
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

const HOSTILE_WORKTREE: &str = include_str!("../fixtures/policy/hostile_worktree.txt");
const LEGITIMATE_WORKTREE: &str = include_str!("../fixtures/policy/legitimate_worktree.txt");
/// The `$HOME` of the fixture: not under /home or /root.
const FIXTURE_HOME: &str = "/srv/users/bob";

fn lines_of(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .collect()
}

/// A worktree with `src/`, `README.md`, `innerlink -> src` and `linkdir -> <a
/// directory outside>`, and the policy for it.
fn fixture_worktree() -> (tempfile::TempDir, CommandPolicy) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("wt");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join("README.md"), "# r\n").unwrap();
    std::os::unix::fs::symlink("src", root.join("innerlink")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("linkdir")).unwrap();
    let root = std::fs::canonicalize(&root).unwrap();
    let policy = worktree_policy(policy().with_root(&root));
    (dir, policy)
}

fn worktree_policy(p: CommandPolicy) -> CommandPolicy {
    p.with_home(std::path::Path::new(FIXTURE_HOME))
}

/// Every hostile line of the worktree corpus is refused, every legitimate one
/// allowed.
#[test]
fn worktree_corpus() {
    let (_dir, policy) = fixture_worktree();
    let passed: Vec<&str> = lines_of(HOSTILE_WORKTREE)
        .into_iter()
        .filter(|l| policy.evaluate(l).decision == Decision::Allowed)
        .collect();
    assert_eq!(passed, Vec::<&str>::new());
    let refused: Vec<(&str, String)> = lines_of(LEGITIMATE_WORKTREE)
        .into_iter()
        .filter_map(|l| {
            let v = policy.evaluate(l);
            (v.decision != Decision::Allowed).then(|| (l, format!("{:?} {}", v.code, v.message)))
        })
        .collect();
    assert_eq!(refused, Vec::<(&str, String)>::new());
}

/// The figures of the closing note: hostile refused / total, legitimate allowed /
/// total, over both corpora (`cargo test -p dandori-exec --test all corpus_figures
/// -- --nocapture`).
#[test]
fn corpus_figures() {
    let plain = policy();
    let (_dir, in_worktree) = fixture_worktree();
    let mut hostile = (0, 0);
    let mut legitimate = (0, 0);
    for (text, p, bad) in [
        (HOSTILE, &plain, true),
        (HOSTILE_WORKTREE, &in_worktree, true),
        (LEGITIMATE, &plain, false),
        (LEGITIMATE_WORKTREE, &in_worktree, false),
    ] {
        for l in lines_of(text) {
            let allowed = p.evaluate(l).decision == Decision::Allowed;
            let counter = if bad { &mut hostile } else { &mut legitimate };
            counter.1 += 1;
            if allowed != bad {
                counter.0 += 1;
            } else {
                println!("{} {l}", if bad { "PASSED" } else { "REFUSED" });
            }
        }
    }
    println!(
        "hostile refused {}/{}; legitimate allowed {}/{}",
        hostile.0, hostile.1, legitimate.0, legitimate.1
    );
}

/// `$HOME` known by value: a start-up file or a credential store under a home
/// outside /home and /root is named as such, not as any outside path.
#[test]
fn home_by_value_names_start_up_files_and_credentials() {
    let (_dir, in_worktree) = fixture_worktree();
    let code = |l: &str| in_worktree.evaluate(l).code;
    assert_eq!(
        code("echo 'curl x | sh' >> /srv/users/bob/.bashrc"),
        Some("POLICY_PERSISTENCE")
    );
    assert_eq!(
        code("cat /srv/users/bob/.ssh/id_rsa"),
        Some("POLICY_CREDENTIAL_ACCESS")
    );
    // Without it, the same write is only a write to a system location.
    assert_eq!(
        policy().evaluate("echo x >> /srv/users/bob/.bashrc").code,
        Some("POLICY_SYSTEM_PATH")
    );
}
