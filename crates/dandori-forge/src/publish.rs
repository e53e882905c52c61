//! `dandori run … --open-pr`: the run's work branch pushed to `origin` and a
//! pull request (GitHub) / merge request (GitLab) opened or updated, whose body
//! is the run report (acceptance criteria with their evidence, steps, commits,
//! `Closes #N`).
//!
//! * The remote branch is `dandori-pr/REQUEST_ID`, one per request, so a later
//!   run of the same request (a re-plan, a revision, a resume) updates the same
//!   pull request.
//! * The token travels only in the push's own environment, as git's per-command
//!   configuration (`GIT_CONFIG_COUNT` / `GIT_CONFIG_KEY_n` /
//!   `GIT_CONFIG_VALUE_n`, which is `git -c http.extraheader=…` without the
//!   value on the command line): never in `.git/config`, the run directory or
//!   a log; git's tracing variables are removed from that environment, and
//!   git's messages are masked before they are shown.
//! * The push is leased on the head the open pull request has (`--force-with-lease`):
//!   a branch someone else pushed to is not overwritten (`FORGE_PUSH_REJECTED`).
//! * A ready (not draft) pull request is the last green run's, and nothing is
//!   pushed over it: a later run that achieves the goal and builds on its head
//!   goes on top; any other run goes to a branch of its own
//!   (`dandori-pr/REQUEST_ID-RUN_ID`), as a draft that names the green one.
//! * A run that has not achieved the goal opens a real draft (GitHub's `draft`;
//!   GitLab's `Draft: ` title); once one achieves it, the draft is marked ready
//!   (GitHub's GraphQL `markPullRequestReadyForReview`; GitLab's title edit).
//! * Any failure leaves the work branch where it is, in the local repository.

use std::path::Path;
use std::process::{Command, Stdio};

use dandori_config::{ForgeOperation, ForgesConfig};
use dandori_plan::Planning;
use serde_json::Value;

use crate::change_request::{ChangeRequest, ChangeRequestText};
use crate::permissions::check_operation;
use crate::record::{ForgeRecord, PullRequestRecord};
use crate::report::marker;
use crate::{Forge, ForgeClient, ForgeError, ItemKind};

/// The remote every push goes to.
pub const REMOTE: &str = "origin";
/// The largest body sent (GitHub refuses more than 65 536 characters).
pub const MAX_BODY_CHARS: usize = 60_000;

/// The branch on the remote for a request.
pub fn remote_branch(request_id: &str) -> String {
    format!("dandori-pr/{request_id}")
}

/// What [`publish`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// `opened` or `updated`.
    pub action: &'static str,
    pub change_request: ChangeRequest,
    pub branch: String,
    /// The ready pull request of an earlier green run this run left alone (its
    /// work went to `branch` instead).
    pub kept_green: Option<ChangeRequest>,
}

/// Checks, before the run's slow work, that publishing can work: the operation
/// is permitted, a token is there, the repository has an `origin` the token can
/// read, and the token has the scopes the forge reports as needed
/// ([`crate::scopes`]).
pub fn preflight(
    client: &ForgeClient,
    config: &ForgesConfig,
    repo: &Path,
    project: &str,
) -> Result<(), ForgeError> {
    check_operation(config, ForgeOperation::PullRequest)?;
    if client.settings().token_value().is_none() {
        return Err(ForgeError::Preflight(format!(
            "no forge token for {}: {}",
            client.settings().api_url,
            client.settings().token_hint()
        )));
    }
    let url = git(repo, &["remote", "get-url", REMOTE], &[]).map_err(|m| {
        ForgeError::Preflight(format!(
            "{} has no remote `{REMOTE}` to push the work branch to: {m}",
            repo.display()
        ))
    })?;
    // Reachable, and the token accepted, now rather than after the run.
    let config = auth_config(client, url.trim());
    git(repo, &["ls-remote", "--quiet", REMOTE, "HEAD"], &config).map_err(|m| {
        ForgeError::Preflight(format!(
            "the remote `{REMOTE}` ({}) cannot be read with the forge token: {}",
            url.trim(),
            mask(&m, client.settings().token_value())
        ))
    })?;
    // The token's scopes, where the forge says them: a missing one named now.
    crate::scopes::check(client, project)?;
    Ok(())
}

/// The per-command configuration that sends the forge token to an http(s)
/// remote: `http.extraheader` with basic authentication, the token as the
/// password (as actions/checkout does). Nothing for other remotes.
fn auth_config(client: &ForgeClient, url: &str) -> Vec<(String, String)> {
    let Some(t) = client.settings().token_value() else {
        return Vec::new();
    };
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Vec::new();
    }
    let user = match client.settings().forge {
        // What actions/checkout sends; any user name works with a token.
        Forge::GitHub => "x-access-token",
        Forge::GitLab => "oauth2",
    };
    vec![(
        "http.extraheader".to_string(),
        format!(
            "AUTHORIZATION: basic {}",
            base64(format!("{user}:{t}").as_bytes())
        ),
    )]
}

/// Pushes the run's work branch and opens or updates its pull / merge request.
/// `completion` is the run's completion record (`dandori run --json`).
pub fn publish(
    client: &ForgeClient,
    config: &ForgesConfig,
    record: &mut ForgeRecord,
    repo: &Path,
    planning: &Planning,
    completion: &Value,
) -> Result<Published, ForgeError> {
    check_operation(config, ForgeOperation::PullRequest)?;
    let local = planning.work_branch.clone();
    let branch = remote_branch(&planning.request_id);
    let ahead = git(
        repo,
        &[
            "rev-list",
            "--count",
            &format!("{}..refs/heads/{local}", planning.base_branch),
        ],
        &[],
    )
    .map_err(|m| ForgeError::PushFailed {
        remote: REMOTE.into(),
        branch: local.clone(),
        message: m,
    })?;
    if ahead.trim() == "0" {
        return Err(ForgeError::NothingToPublish(format!(
            "the work branch {local} has no commit beyond {}: no pull request to open",
            planning.base_branch
        )));
    }
    let project = record.reference.project.clone();
    let goal = completion
        .pointer("/summary/goal_achieved")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut branch = branch;
    let mut existing = client.find_change_request(&project, &branch)?;
    let mut kept_green = None;
    if let Some(green) = existing.clone().filter(|c| !c.draft)
        && !(goal && builds_on(repo, &green.head_sha, &local))
    {
        branch = format!("{branch}-{}", planning.run_id);
        existing = client.find_change_request(&project, &branch)?;
        kept_green = Some(green);
    }
    push(
        repo,
        client,
        &local,
        &branch,
        existing.as_ref().map(|c| c.head_sha.as_str()),
    )?;
    let title = format!("dandori: {}", one_line(&record.title));
    let mut body = body(record, planning, completion);
    if let Some(g) = &kept_green {
        body = format!(
            "_Another attempt: {} stays as the last run that achieved the goal; this run's work is here._\n\n{body}",
            g.web_url
        );
    }
    let text = ChangeRequestText {
        title: &title,
        body: &body,
        draft: !goal,
    };
    let (action, mut cr) = match existing {
        Some(c) => (
            "updated",
            client.update_change_request(&project, c.number, &text)?,
        ),
        None => (
            "opened",
            client.create_change_request(&project, &branch, &planning.base_branch, &text)?,
        ),
    };
    if goal && cr.draft {
        cr = client.mark_ready(&cr)?;
    }
    let head_sha = git(repo, &["rev-parse", &format!("refs/heads/{local}")], &[])
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| cr.head_sha.clone());
    record.pull_request = Some(PullRequestRecord {
        number: cr.number,
        web_url: cr.web_url.clone(),
        branch: branch.clone(),
        head_sha,
        draft: cr.draft,
    });
    Ok(Published {
        action,
        change_request: cr,
        branch,
        kept_green,
    })
}

/// Whether the local branch `local` contains `sha` (a fast-forward of it). A
/// commit the repository does not have is not built on.
fn builds_on(repo: &Path, sha: &str, local: &str) -> bool {
    !sha.is_empty()
        && git(
            repo,
            &[
                "merge-base",
                "--is-ancestor",
                sha,
                &format!("refs/heads/{local}"),
            ],
            &[],
        )
        .is_ok()
}

/// `git push` of `local` to `origin`'s `branch`, with the token in the push's
/// environment only, leased on `expected` (the head the open pull request has).
fn push(
    repo: &Path,
    client: &ForgeClient,
    local: &str,
    branch: &str,
    expected: Option<&str>,
) -> Result<(), ForgeError> {
    let failed = |message: String| ForgeError::PushFailed {
        remote: REMOTE.into(),
        branch: local.to_string(),
        message,
    };
    let url = git(repo, &["remote", "get-url", REMOTE], &[])
        .map_err(|m| failed(format!("the repository has no remote `{REMOTE}`: {m}")))?;
    let token = client.settings().token_value();
    let config = auth_config(client, url.trim());
    let lease = match expected.filter(|s| !s.is_empty()) {
        Some(sha) => format!("--force-with-lease=refs/heads/{branch}:{sha}"),
        // No open pull request: the branch is dandori's (`dandori-pr/…`); a
        // leftover of a failed earlier attempt is replaced.
        None => "--force".to_string(),
    };
    let refspec = format!("refs/heads/{local}:refs/heads/{branch}");
    let args = [
        "push",
        "--porcelain",
        lease.as_str(),
        REMOTE,
        refspec.as_str(),
    ];
    match git(repo, &args, &config) {
        Ok(_) => Ok(()),
        Err(m) => {
            let m = mask(&m, token);
            let rejected = m.contains("[rejected]")
                || m.contains("stale info")
                || m.contains("non-fast-forward")
                || m.contains("protected branch");
            if rejected {
                Err(ForgeError::PushRejected {
                    remote: REMOTE.into(),
                    branch: local.to_string(),
                    message: m,
                })
            } else {
                Err(failed(m))
            }
        }
    }
}

/// Runs git in `repo` with null stdin, no prompts, no tracing, and `config` as
/// per-command configuration (never written to a file). Ok(stdout) or
/// Err(the command and stderr).
fn git(repo: &Path, args: &[&str], config: &[(String, String)]) -> Result<String, String> {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(repo).args(args);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for v in [
        "GIT_TRACE",
        "GIT_TRACE_CURL",
        "GIT_TRACE_PACKET",
        "GIT_TRACE2",
        "GIT_TRACE2_EVENT",
        "GIT_CURL_VERBOSE",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
    ] {
        cmd.env_remove(v);
    }
    cmd.env("GIT_TERMINAL_PROMPT", "0");
    if !config.is_empty() {
        // Entries the caller's environment already gives are kept before ours.
        let base: usize = std::env::var("GIT_CONFIG_COUNT")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        for (i, (k, v)) in config.iter().enumerate() {
            cmd.env(format!("GIT_CONFIG_KEY_{}", base + i), k);
            cmd.env(format!("GIT_CONFIG_VALUE_{}", base + i), v);
        }
        cmd.env("GIT_CONFIG_COUNT", (base + config.len()).to_string());
    }
    let out = cmd
        .output()
        .map_err(|e| format!("git {}: cannot start git: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "git {}: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim(),
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| l.contains('!'))
                .map(|l| format!("; {}", l.trim()))
                .collect::<String>()
        ))
    }
}

fn mask(text: &str, token: Option<&str>) -> String {
    match token.filter(|t| !t.is_empty()) {
        Some(t) => text.replace(t, "***"),
        None => text.to_string(),
    }
}

/// Standard base64 with padding (RFC 4648 §4).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The pull / merge request body: the run report in short.
pub fn body(record: &ForgeRecord, planning: &Planning, completion: &Value) -> String {
    let mut s = marker("pull_request", &planning.request_id);
    s.push('\n');
    let summary = completion.get("summary").cloned().unwrap_or(Value::Null);
    let goal = summary
        .get("goal_achieved")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let status = completion
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    s.push_str(&format!("### dandori: {}\n\n", one_line(&record.title)));
    let r = &record.reference;
    match (r.kind, r.forge) {
        (ItemKind::Issue, _) => s.push_str(&format!("Closes #{}\n\n", r.number)),
        (ItemKind::ChangeRequest, Forge::GitHub) => {
            s.push_str(&format!("From pull request #{}\n\n", r.number))
        }
        (ItemKind::ChangeRequest, Forge::GitLab) => {
            s.push_str(&format!("From merge request !{}\n\n", r.number))
        }
    }
    s.push_str(&format!("{}\n\n", one_line(&planning.context.summary)));
    let steps: Vec<Value> = completion
        .get("steps")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let done = steps
        .iter()
        .filter(|st| st.get("status").and_then(Value::as_str) == Some("done"))
        .count();
    s.push_str(&format!(
        "**Run**: {status}, goal achieved: {goal}, {done}/{} step(s) done (request `{}`, run `{}`)\n\n",
        steps.len(),
        planning.request_id,
        planning.run_id
    ));
    if !goal {
        s.push_str(
            "_A draft: the goal is not achieved yet. The steps below say what is missing._\n\n",
        );
    }
    let gaps: Vec<String> = completion
        .pointer("/coverage/critical_gaps")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    s.push_str(&format!(
        "**Acceptance criteria** ({})\n\n| AC | Criterion | Evidence |\n| --- | --- | --- |\n",
        planning.context.acceptance_criteria.len()
    ));
    for ac in &planning.context.acceptance_criteria {
        let evidence: Vec<String> = steps
            .iter()
            .filter(|st| {
                st.get("links_to_ac")
                    .and_then(Value::as_array)
                    .is_some_and(|l| l.iter().any(|x| x.as_str() == Some(ac.id.as_str())))
            })
            .map(|st| {
                let g = |k: &str| st.get(k).and_then(Value::as_str).unwrap_or_default();
                let commit: String = g("commit").chars().take(12).collect();
                let mark = if g("status") == "done" { "✅" } else { "❌" };
                if commit.is_empty() {
                    format!("{mark} {} {}", g("step_id"), g("status"))
                } else {
                    format!("{mark} {} `{commit}`", g("step_id"))
                }
            })
            .collect();
        let mut cell_text = if evidence.is_empty() {
            "no step".to_string()
        } else {
            evidence.join(", ")
        };
        if gaps.iter().any(|g| g == &ac.id) {
            cell_text.push_str(" — **not covered**");
        }
        s.push_str(&format!(
            "| {} | {} | {} |\n",
            ac.id,
            cell(&format!(
                "Given {}, when {}, then {}",
                one_line(&ac.given),
                one_line(&ac.when),
                one_line(&ac.then)
            )),
            cell_text
        ));
    }
    evidence_table(&mut s, planning, completion);
    s.push_str("\n**Steps**\n\n| Step | Title | Status | Commit |\n| --- | --- | --- | --- |\n");
    for st in &steps {
        let g = |k: &str| st.get(k).and_then(Value::as_str).unwrap_or_default();
        let code = st
            .get("reason_code")
            .and_then(Value::as_str)
            .map(|c| format!(" `{c}`"))
            .unwrap_or_default();
        s.push_str(&format!(
            "| {} | {} | {}{code} | {} |\n",
            g("step_id"),
            cell(g("title")),
            g("status"),
            g("commit").chars().take(12).collect::<String>()
        ));
    }
    let commits: Vec<String> = steps
        .iter()
        .filter_map(|st| {
            let c = st.get("commit").and_then(Value::as_str)?;
            Some(format!(
                "- `{}` {} {}\n",
                c.chars().take(12).collect::<String>(),
                st.get("step_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                one_line(st.get("title").and_then(Value::as_str).unwrap_or_default())
            ))
        })
        .collect();
    if !commits.is_empty() {
        s.push_str(&format!("\n**Commits** ({})\n\n", commits.len()));
        s.extend(commits);
    }
    if let Some(Value::Array(items)) = summary.get("recommendations")
        && !items.is_empty()
    {
        s.push_str("\n**Recommendations**\n\n");
        for i in items.iter().filter_map(Value::as_str) {
            s.push_str(&format!("- {}\n", one_line(i)));
        }
    }
    let (cut, was_cut) = crate::intake::cut_chars(&s, MAX_BODY_CHARS);
    if was_cut {
        format!(
            "{cut}\n\n_(cut to fit; the full report is report.md of run {})_\n",
            planning.run_id
        )
    } else {
        s
    }
}

/// The runner's evidence per criterion (`completion.evidence.acceptance_criteria`,
/// as report.md has it): the check on the base commit (red) and after the steps
/// (green), the commit that turned it, and the commands that reproduce both.
fn evidence_table(s: &mut String, planning: &Planning, completion: &Value) {
    let Some(items) = completion
        .pointer("/evidence/acceptance_criteria")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
    else {
        return;
    };
    s.push_str(
        "\n**Evidence** (red on the base commit → green after the steps)\n\n\
         | AC | Verdict | Check | Base | After | Turned green by |\n| --- | --- | --- | --- | --- | --- |\n",
    );
    let mut commands: Vec<String> = Vec::new();
    for e in items {
        let g = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default();
        let or_dash = |v: &str| {
            if v.is_empty() {
                "—".to_string()
            } else {
                cell(v)
            }
        };
        let green = match (g("green_step"), g("green_commit")) {
            ("", _) => "—".to_string(),
            (step, "") => step.to_string(),
            (step, c) => format!("{step} `{}`", c.chars().take(12).collect::<String>()),
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {green} |\n",
            g("ac"),
            or_dash(g("status")),
            or_dash(g("check")),
            or_dash(g("base_result")),
            or_dash(g("after_result")),
        ));
        // The check itself (`command `…``), else, for a named test, the unit
        // commands of the steps linking the criterion, and any recorded command.
        let mut add = |c: String| {
            if !c.is_empty() && !commands.contains(&c) {
                commands.push(c);
            }
        };
        let check = g("check");
        if let Some(cmd) = check
            .strip_prefix("command `")
            .and_then(|c| c.strip_suffix('`'))
        {
            add(one_line(cmd));
        } else if check.starts_with("test ") {
            for st in planning
                .steps
                .iter()
                .filter(|st| st.links_to_ac.iter().any(|a| a == g("ac")))
            {
                for c in st.commands.unit.iter().flatten() {
                    add(one_line(c));
                }
            }
        }
        for item in e
            .get("evidence")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            add(one_line(
                item.get("command")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            ));
        }
    }
    if !commands.is_empty() {
        s.push_str(&format!(
            "\nTo reproduce: on `{}` (red) and on this branch (green), run\n\n```sh\n",
            planning.base_branch
        ));
        for c in &commands {
            s.push_str(c);
            s.push('\n');
        }
        s.push_str("```\n");
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn cell(s: &str) -> String {
    one_line(s).replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(i.as_bytes()), o);
        }
    }

    #[test]
    fn masks_the_token() {
        assert_eq!(mask("a tok b", Some("tok")), "a *** b");
        assert_eq!(mask("a tok b", None), "a tok b");
    }
}
