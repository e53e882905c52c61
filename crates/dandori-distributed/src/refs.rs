//! The run's refs on the git remote: how a step's base reaches a worker and how its
//! commit comes back. `refs/dandori/runs/<run>/start` is the work branch when the
//! run started; `refs/dandori/runs/<run>/steps/<step>` is a step's proof commit,
//! created once and never moved (the first push wins; its `Dandori-Run` /
//! `Dandori-Step` trailers prove what it is).

use dandori_runner::git::Git;
use dandori_runner::reason;

use crate::error::DistributedError;

/// `run_id` or `step_id` as one ref component: letters, digits, `.`, `_`, `-`,
/// not starting with `.` or `-`.
pub fn check_component(what: &str, id: &str) -> Result<(), DistributedError> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && !id.starts_with(['.', '-'])
        && !id.contains("..")
        && !id.ends_with(".lock")
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(DistributedError::Invalid {
            reason_code: reason::PLAN_INVALID,
            message: format!(
                "{what} {id:?} cannot name a git ref (letters, digits, '.', '_', '-' only)"
            ),
        })
    }
}

pub fn run_prefix(run_id: &str) -> String {
    format!("refs/dandori/runs/{run_id}")
}

pub fn start_ref(run_id: &str) -> String {
    format!("{}/start", run_prefix(run_id))
}

pub fn step_ref(run_id: &str, step_id: &str) -> String {
    format!("{}/steps/{step_id}", run_prefix(run_id))
}

/// Fetches every ref of the run from `remote` into the same names in `git`'s
/// repository (forced: the remote is the truth).
pub fn fetch_run(git: &Git, remote: &str, run_id: &str) -> Result<(), DistributedError> {
    let prefix = run_prefix(run_id);
    git.run(&[
        // Workers fetch runs concurrently into one repository: no gc meanwhile.
        "-c",
        "gc.auto=0",
        "-c",
        "maintenance.auto=false",
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        remote,
        &format!("+{prefix}/*:{prefix}/*"),
    ])?;
    Ok(())
}

/// The commit `refname` names in `git`'s repository, if any.
pub fn local_ref(git: &Git, refname: &str) -> Result<Option<String>, DistributedError> {
    let (ok, out, _) = git.output(&[
        "rev-parse",
        "--verify",
        "--quiet",
        &format!("{refname}^{{commit}}"),
    ])?;
    Ok(ok.then(|| out.trim().to_string()).filter(|h| !h.is_empty()))
}

/// Creates `refname` on `remote` at `commit` unless it exists. Returns the commit
/// the remote ref holds afterwards: `commit`, or what an earlier push put there.
pub fn push_once(
    git: &Git,
    remote: &str,
    run_id: &str,
    refname: &str,
    commit: &str,
) -> Result<String, DistributedError> {
    // `--force-with-lease=<ref>:` (empty expectation): create, never overwrite.
    let (pushed, _, err) = git.output(&[
        "push",
        "--quiet",
        "--no-verify",
        &format!("--force-with-lease={refname}:"),
        remote,
        &format!("{commit}:{refname}"),
    ])?;
    if pushed {
        git.run(&["update-ref", refname, commit])?;
        return Ok(commit.to_string());
    }
    fetch_run(git, remote, run_id)?;
    local_ref(git, refname)?.ok_or_else(|| {
        DistributedError::Runner(dandori_runner::RunnerError::Git {
            args: format!("push {remote} {commit}:{refname}"),
            cwd: git.dir().to_path_buf(),
            message: err,
        })
    })
}
