//! The kill matrix over a run that publishes: `dandori run --open-pr` of an
//! issue's plan (the fake forge with a network's latency, a bare remote behind
//! it) killed (SIGKILL) at 20 points spread over the whole run, the push and
//! the pull request calls included, then `dandori resume --open-pr`d twice.
//! Each ends as the uninterrupted run ends: every step done, one pull request
//! (ready, its branch holding the same files), each dandori comment once, the
//! user's checkout on its branch with nothing new in `git status`.

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use dandori_test_support::fake_forge::Api;
use dandori_test_support::git::git;
use serde_json::{Value, json};

use super::ci_bot::{BIN, Fx, TOKEN, fixture, pulls, text};

const POINTS: u32 = 20;

struct Case {
    f: Fx,
    run_dir: PathBuf,
    agent_cmd: String,
}

fn command(f: &Fx, args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(["--sandbox", "off"])
        .args(args)
        .current_dir(&f.repo)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &f.home)
        .env("DANDORI_CONFIG_HOME", f.home.join("cfg"))
        .env("GITHUB_API_URL", f.forge.github_api_url())
        .env("GITHUB_TOKEN", TOKEN)
        .stdin(Stdio::null());
    cmd
}

/// The issue planned (plan and status comments posted), the remote behind
/// the forge, every forge request 60 ms away.
fn case() -> Case {
    let f = fixture();
    let url = f.forge.git_url(Api::GitHub, "octo/app");
    git(&f.repo, &["remote", "set-url", "origin", &url]);
    f.forge.set_latency(Duration::from_millis(60));
    let o = command(
        &f,
        &[
            "plan",
            "--issue",
            "github:octo/app#7",
            "--comment",
            "--json",
        ],
    )
    .output()
    .unwrap();
    assert!(o.status.success(), "plan: {}", text(&o));
    let plan: Value = serde_json::from_slice(&o.stdout).unwrap();
    let run_dir = PathBuf::from(plan["run_dir"].as_str().unwrap());
    // The scripted agent, as a resumed agent must be: a step's work that the
    // kill left in its worktree (kept, and named in the prompt) is not done twice.
    let agent = f.home.join("idempotent-agent.sh");
    std::fs::write(
        &agent,
        "#!/bin/sh\nset -e\ncase \"$1\" in\n\
         S01) mkdir -p src; echo 'hello, friend' > src/greet.txt ;;\n\
         S03) mkdir -p docs; echo 'greeting' > docs/greeting.md ;;\n\
         *) grep -qs \"see src/greet.txt ($1)\" README.md || echo \"see src/greet.txt ($1)\" >> README.md ;;\nesac\n",
    )
    .unwrap();
    let agent_cmd = format!("sh {} {{step_id}}", agent.display());
    Case {
        f,
        run_dir,
        agent_cmd,
    }
}

fn args<'a>(c: &'a Case, verb: &'a str) -> Vec<&'a str> {
    vec![
        verb,
        c.run_dir.to_str().unwrap(),
        "--open-pr",
        "--agent-cmd",
        &c.agent_cmd,
        "--json",
    ]
}

fn spawn(c: &Case) -> Child {
    command(&c.f, &args(c, "run"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn resume(c: &Case) -> Output {
    command(&c.f, &args(c, "resume")).output().unwrap()
}

/// What a finished run leaves, compared across kills: the step statuses, the
/// pull requests (head branch, draft, the files of the pushed head), the
/// dandori comments by kind (how many of each), the checkout's branch and
/// `git status`.
fn outcome(c: &Case) -> Value {
    let stage: Value =
        serde_json::from_str(&std::fs::read_to_string(c.run_dir.join("stage.json")).unwrap())
            .unwrap();
    let statuses: Vec<Value> = stage["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| json!([s["step_id"], s["status"]]))
        .collect();
    let prs: Vec<Value> = pulls(&c.f)
        .into_iter()
        .map(|(_, item)| {
            let pr = item.pr.unwrap();
            json!({"head": pr.head, "draft": pr.draft, "files": files(&c.f.remote, &pr.head)})
        })
        .collect();
    let issue = c.f.forge.item(Api::GitHub, "octo/app", 7);
    let mut kinds = std::collections::BTreeMap::<String, usize>::new();
    for comment in &issue.comments {
        if let Some(rest) = comment.body.split("<!-- dandori:").nth(1) {
            let kind: String = rest.chars().take_while(char::is_ascii_alphabetic).collect();
            *kinds.entry(kind).or_default() += 1;
        }
    }
    json!({
        "steps": statuses,
        "pull_requests": prs,
        "comments": kinds,
        "branch": git(&c.f.repo, &["branch", "--show-current"]).trim(),
        "status": git(&c.f.repo, &["status", "--porcelain", "--untracked-files=all"]),
    })
}

/// Each file of `rev` in the bare repository `git_dir`, with its contents.
fn files(git_dir: &std::path::Path, rev: &str) -> Value {
    let names = git(git_dir, &["ls-tree", "-r", "--name-only", rev]);
    names
        .lines()
        .map(|n| {
            let text = git(git_dir, &["show", &format!("{rev}:{n}")]);
            (n.to_string(), Value::String(text))
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}

#[test]
fn a_publishing_run_killed_anywhere_resumes_to_one_pull_request() {
    // The uninterrupted run, timed.
    let reference = case();
    let start = Instant::now();
    let o = spawn(&reference).wait_with_output().unwrap();
    let total = start.elapsed();
    assert!(o.status.success(), "the uninterrupted run failed");
    let expected = outcome(&reference);
    assert_eq!(
        expected["pull_requests"].as_array().unwrap().len(),
        1,
        "{expected}"
    );
    assert_eq!(expected["pull_requests"][0]["draft"], false, "{expected}");
    assert_eq!(
        expected["comments"],
        json!({"completion": 1, "plan": 1, "status": 1}),
        "{expected}"
    );
    assert_eq!(
        expected["status"], "",
        "the checkout gained files: {expected}"
    );
    // Where the forge's time went: the publishing share of the run.
    let exchanges = reference.f.forge.exchanges().len();
    let pushes = reference.f.forge.git_requests().len();
    eprintln!(
        "uninterrupted run: {total:?}, {exchanges} API calls and {pushes} git requests at 60 ms each"
    );
    for i in 0..POINTS {
        let at = total.mul_f64(f64::from(i) / f64::from(POINTS)) + Duration::from_millis(20);
        let c = case();
        let mut child = spawn(&c);
        std::thread::sleep(at);
        let _ = child.kill();
        let _ = child.wait();
        let o = resume(&c);
        assert!(o.status.success(), "killed at {at:?}: resume: {}", text(&o));
        // A second resume changes nothing: no second pull request or comment.
        let o = resume(&c);
        assert!(o.status.success(), "killed at {at:?}: resume: {}", text(&o));
        assert_eq!(outcome(&c), expected, "killed at {at:?}");
    }
}
