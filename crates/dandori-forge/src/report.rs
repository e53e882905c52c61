//! The comments dandori posts back (seed 000 §2.5 reporting), each carrying a
//! hidden marker `<!-- dandori:KIND REQUEST_ID -->` so that re-running finds and
//! edits the same comment instead of adding another.
//!
//! * `plan`: the plan summary (steps, groups, acceptance criteria, a Mermaid DAG).
//! * `status`: one status comment edited as the run progresses.
//! * `completion`: the completion report.
//! * `revision`: the latest revision (and, when approval is needed, how to approve).

use dandori_config::{ForgeOperation, ForgesConfig};
use dandori_plan::Planning;
use serde_json::Value;

use crate::permissions::check_operation;
use crate::record::ForgeRecord;
use crate::{ForgeClient, ForgeError};

const MARKER_PREFIX: &str = "<!-- dandori:";
/// The longest comment posted (GitHub refuses bodies over 65 536 characters;
/// a plan summary is a summary): longer ones are cut with a pointer to the run.
pub const MAX_COMMENT_CHARS: usize = 20_000;
/// The longest text of one table cell or summary paragraph in a comment.
const MAX_CELL_CHARS: usize = 300;
const MAX_SUMMARY_CHARS: usize = 2_000;

/// The hidden marker of a comment kind for a request.
pub fn marker(kind: &str, request_id: &str) -> String {
    format!("{MARKER_PREFIX}{kind} {request_id} -->")
}

/// Whether a comment body was written by dandori (carries a marker).
pub fn is_dandori_comment(body: &str) -> bool {
    body.contains(MARKER_PREFIX)
}

/// The plan summary comment.
pub fn plan_comment(p: &Planning, revision: u64) -> String {
    let mut s = marker("plan", &p.request_id);
    s.push('\n');
    let rev = if revision > 0 {
        format!(" (revision {revision})")
    } else {
        String::new()
    };
    s.push_str(&format!(
        "### dandori plan{rev}: {} step(s)\n\n",
        p.steps.len()
    ));
    s.push_str(&format!(
        "{}\n\n",
        clip(p.context.summary.trim(), MAX_SUMMARY_CHARS)
    ));
    s.push_str("| Step | Title | Targets | After | ACs |\n| --- | --- | --- | --- | --- |\n");
    for st in &p.steps {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            st.step_id,
            cell(&st.title),
            cell(&st.scope.target_paths.join(", ")),
            st.depends_on.as_deref().unwrap_or_default().join(", "),
            st.links_to_ac.join(", ")
        ));
    }
    let analysis = dandori_plan::graph::analyze(&p.steps).ok();
    if let Some(a) = &analysis {
        s.push_str("\n**Execution groups**\n\n");
        for g in &a.execution_groups {
            s.push_str(&format!(
                "- group {}: {} ({})\n",
                g.group_index,
                g.step_ids.join(", "),
                serde_json::to_value(g.mode)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default()
            ));
        }
    }
    s.push_str(&format!(
        "\n**Acceptance criteria** ({})\n\n",
        p.context.acceptance_criteria.len()
    ));
    for ac in &p.context.acceptance_criteria {
        s.push_str(&format!(
            "- **{}** Given {}, when {}, then {}\n",
            ac.id,
            one_line(&ac.given),
            one_line(&ac.when),
            one_line(&ac.then)
        ));
    }
    if let Some(a) = &analysis {
        s.push_str("\n```mermaid\n");
        s.push_str(dandori_plan::graph::to_mermaid(a, &p.steps).trim_end());
        s.push_str("\n```\n");
    }
    let reply = "\n**What to reply** (a permitted user; the command on the comment's first line):\n\n\
         - `/dandori approve`: run this plan; the run ends in a pull / merge request.\n\
         - `/dandori revise` and, on the next lines, your changes (for example `add file src/x.rs`, \
         `drop S02`, `add step: …`, `language: go`): a revised plan, posted here.\n\
         - `/dandori plan`: plan the issue again from its current text.\n\n\
         Without CI: `dandori revise RUN_DIR --from-issue`, `dandori run RUN_DIR --open-pr`.\n";
    cap(s, &p.run_id, reply)
}

/// `s` within [`MAX_COMMENT_CHARS`] (with `tail`), cut at a line with a
/// pointer to the run's planning.json when longer.
fn cap(mut s: String, run_id: &str, tail: &str) -> String {
    let room = MAX_COMMENT_CHARS.saturating_sub(tail.len() + 200);
    if s.chars().count() > room {
        let (head, _) = crate::intake::cut_chars(&s, room);
        let head = head.rsplit_once('\n').map_or(head, |(h, _)| h);
        s = format!(
            "{head}\n\n_(cut at {MAX_COMMENT_CHARS} characters: the whole plan is planning.json of run {run_id})_\n"
        );
    }
    s.push_str(tail);
    s
}

/// The first `max` characters of `s`, with `…` when cut.
fn clip(s: &str, max: usize) -> String {
    match crate::intake::cut_chars(s, max) {
        (head, true) => format!("{head}…"),
        (head, false) => head.to_string(),
    }
}

/// The status comment from a run's progress (`dandori status --json`).
pub fn status_comment(request_id: &str, progress: &Value) -> String {
    let mut s = marker("status", request_id);
    s.push('\n');
    let g = |k: &str| progress.get(k).and_then(Value::as_str).unwrap_or_default();
    let n = |k: &str| progress.get(k).and_then(Value::as_u64).unwrap_or(0);
    s.push_str(&format!(
        "### dandori status: {} — {}/{} step(s) done{}\n\n",
        g("status"),
        n("done"),
        n("total"),
        match n("failed") {
            0 => String::new(),
            f => format!(", {f} failed"),
        }
    ));
    if let Some(c) = progress.get("current_step").and_then(Value::as_str) {
        s.push_str(&format!("Current step: **{c}**\n\n"));
    }
    if let Some(Value::Array(steps)) = progress.get("steps") {
        for st in steps {
            let status = st
                .get("status")
                .and_then(Value::as_str)
                .unwrap_or("pending");
            let mark = match status {
                "done" | "completed" | "succeeded" => "x",
                _ => " ",
            };
            let code = st
                .get("reason_code")
                .and_then(Value::as_str)
                .map(|c| format!(" `{c}`"))
                .unwrap_or_default();
            s.push_str(&format!(
                "- [{mark}] {} {} — {status}{code}\n",
                st.get("step_id").and_then(Value::as_str).unwrap_or("?"),
                cell(st.get("title").and_then(Value::as_str).unwrap_or_default()),
            ));
        }
    }
    s
}

/// The completion report from a run's completion record (`dandori run --json`).
pub fn completion_comment(request_id: &str, completion: &Value) -> String {
    let mut s = marker("completion", request_id);
    s.push('\n');
    let status = completion
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let summary = completion.get("summary").cloned().unwrap_or(Value::Null);
    let n = |k: &str| summary.get(k).and_then(Value::as_u64).unwrap_or(0);
    s.push_str(&format!(
        "### dandori completion: {status}\n\n{}\n\n",
        completion
            .get("comment")
            .and_then(Value::as_str)
            .unwrap_or_default()
    ));
    s.push_str(&format!(
        "- goal achieved: {}\n- tasks completed: {}\n- tasks failed: {}\n",
        summary
            .get("goal_achieved")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        n("tasks_completed"),
        n("tasks_failed")
    ));
    if let Some(r) = summary.get("revision_attempts").and_then(Value::as_u64) {
        s.push_str(&format!("- revision attempts: {r}\n"));
    }
    if let Some(r) = summary.get("reason").and_then(Value::as_str) {
        s.push_str(&format!("- reason: {}\n", one_line(r)));
    }
    for (key, title) in [
        ("key_outcomes", "Outcomes"),
        ("recommendations", "Recommendations"),
    ] {
        if let Some(Value::Array(items)) = summary.get(key)
            && !items.is_empty()
        {
            s.push_str(&format!("\n**{title}**\n\n"));
            for i in items.iter().filter_map(Value::as_str) {
                s.push_str(&format!("- {}\n", one_line(i)));
            }
        }
    }
    if let Some(url) = completion
        .pointer("/pull_request/url")
        .and_then(Value::as_str)
    {
        s.push_str(&format!("\nPull request: {url}\n"));
    }
    if let Some(Value::Array(steps)) = completion.get("steps") {
        s.push_str("\n| Step | Status | Commit |\n| --- | --- | --- |\n");
        for st in steps {
            let get = |k: &str| st.get(k).and_then(Value::as_str).unwrap_or_default();
            s.push_str(&format!(
                "| {} {} | {}{} | {} |\n",
                get("step_id"),
                cell(get("title")),
                get("status"),
                st.get("reason_code")
                    .and_then(Value::as_str)
                    .map(|c| format!(" `{c}`"))
                    .unwrap_or_default(),
                get("commit").chars().take(12).collect::<String>()
            ));
        }
    }
    s
}

/// The revision comment: what changed and, when paused, how to approve.
pub fn revision_comment(
    request_id: &str,
    revision: u64,
    changes: &[String],
    awaiting_approval: Option<u64>,
) -> String {
    let mut s = marker("revision", request_id);
    s.push('\n');
    s.push_str(&format!("### dandori plan revision {revision}\n\n"));
    for c in changes {
        s.push_str(&format!("- {}\n", one_line(c)));
    }
    if let Some(timeout) = awaiting_approval {
        s.push_str(&format!(
            "\nThis revision waits for approval: comment `/dandori approve` (a permitted user; \
             `dandori approve RUN_DIR --from-issue` reads a bare `/approve` too) or run \
             `dandori approve RUN_DIR` within {timeout} s; `/dandori revise` with more changes \
             revises it again.\n"
        ));
    }
    s
}

/// Posts `body` as the comment of `kind`, or edits the one posted before: the id
/// remembered in `record`, else a comment of the token's user carrying the
/// marker, else a new comment. Returns the comment id.
pub fn upsert(
    client: &ForgeClient,
    config: &ForgesConfig,
    record: &mut ForgeRecord,
    kind: &str,
    body: &str,
) -> Result<u64, ForgeError> {
    check_operation(config, ForgeOperation::Comment)?;
    let r = record.reference.clone();
    if let Some(id) = record.comments.get(kind).copied() {
        match client.update_comment(&r, id, body) {
            Ok(c) => return Ok(c.id),
            // Deleted by someone: find another or post again.
            Err(ForgeError::NotFound { .. }) => {
                record.comments.remove(kind);
            }
            Err(e) => return Err(e),
        }
    }
    let mark = marker(kind, &r.request_id());
    // Ours: the marker, written with this token's identity (a user, or an
    // installation token's bot: `GET /user` is not asked of those twice).
    let me = client.identity()?;
    let existing = client
        .comments(&r)?
        .into_iter()
        .find(|c| me.owns(c) && c.body.contains(&mark));
    let id = match existing {
        Some(c) => client.update_comment(&r, c.id, body)?.id,
        None => client.create_comment(&r, body)?.id,
    };
    record.comments.insert(kind.to_string(), id);
    Ok(id)
}

/// Adds the seed's help label once (seed 000 §10.4).
pub fn add_help_label(
    client: &ForgeClient,
    config: &ForgesConfig,
    record: &mut ForgeRecord,
) -> Result<(), ForgeError> {
    check_operation(config, ForgeOperation::Label)?;
    if !record.help_label {
        client.add_label(&record.reference, crate::HELP_LABEL)?;
        record.help_label = true;
    }
    Ok(())
}

fn one_line(s: &str) -> String {
    clip(
        &s.split_whitespace().collect::<Vec<_>>().join(" "),
        MAX_CELL_CHARS,
    )
}

/// Text safe inside a Markdown table cell.
fn cell(s: &str) -> String {
    one_line(s).replace('|', "\\|")
}
