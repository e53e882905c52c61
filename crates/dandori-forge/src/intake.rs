//! An issue → the request text (front matter `id:` = the reference as an id) and
//! the seed 000 §9.3 task type.

use crate::client::{Comment, Issue};
use crate::permissions::Permissions;
use crate::report::is_dandori_comment;

/// The largest request text built from an issue (the planner refuses more than
/// 128 KiB): the body keeps up to [`MAX_BODY_CHARS`], comments share the rest.
pub const MAX_REQUEST_CHARS: usize = 100_000;
pub const MAX_BODY_CHARS: usize = 60_000;

/// What intake made of an issue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntakeText {
    /// The request (markdown with front matter).
    pub text: String,
    /// Comments left out: by dandori itself, by users not allowed to steer, or
    /// beyond the size budget (`(comment id, why)`).
    pub skipped_comments: Vec<(u64, String)>,
    /// Whether the body or the comments were cut to fit.
    pub truncated: bool,
}

/// Builds the request text: the title, the body, the labels and the comments of
/// users allowed to steer (oldest first), within [`MAX_REQUEST_CHARS`].
pub fn request_text(issue: &Issue, perms: &Permissions<'_>) -> IntakeText {
    let r = &issue.reference;
    let mut text = String::new();
    text.push_str("---\n");
    text.push_str(&format!("id: {}\n", yaml_string(&r.request_id())));
    text.push_str(&format!("title: {}\n", yaml_string(one_line(&issue.title))));
    text.push_str(&format!("source: {}\n", yaml_string(&r.to_string())));
    // The labels go to the front matter: a `Labels: …` line after the body would
    // be read as one more acceptance criterion or requirement.
    if !issue.labels.is_empty() {
        text.push_str(&format!(
            "labels: {}\n",
            yaml_string(&issue.labels.join(", "))
        ));
    }
    text.push_str("---\n");
    text.push_str(&format!("# {}\n\n", one_line(&issue.title)));
    let mut truncated = false;
    let body = issue.body.replace("\r\n", "\n");
    let body = strip_leading_front_matter(&body);
    let (body, cut) = cut_chars(body, MAX_BODY_CHARS);
    truncated |= cut;
    text.push_str(body.trim_end());
    if cut {
        text.push_str(&format!(
            "\n\n_(the issue body is cut here; the full text is at {})_",
            issue.web_url
        ));
    }
    text.push_str("\n\n");
    let mut skipped = Vec::new();
    let mut discussion = String::new();
    for c in &issue.comments {
        if is_dandori_comment(&c.body) {
            skipped.push((c.id, "posted by dandori".to_string()));
            continue;
        }
        if !perms.may_steer(&c.author) {
            skipped.push((c.id, format!("@{} may not steer this task", c.author)));
            continue;
        }
        let entry = comment_entry(c);
        if text.len() + discussion.len() + entry.len() > MAX_REQUEST_CHARS {
            skipped.push((c.id, "beyond the request size budget".to_string()));
            truncated = true;
            continue;
        }
        discussion.push_str(&entry);
    }
    if !discussion.is_empty() {
        text.push_str("## Discussion\n\n");
        text.push_str(&discussion);
    }
    IntakeText {
        text,
        skipped_comments: skipped,
        truncated,
    }
}

fn comment_entry(c: &Comment) -> String {
    let body = c.body.replace("\r\n", "\n");
    // Headings inside a comment would open sections of the request: demote them.
    let quoted: Vec<String> = body
        .lines()
        .map(|l| {
            if l.trim_start().starts_with('#') {
                format!("**{}**", l.trim_start().trim_start_matches('#').trim())
            } else {
                l.to_string()
            }
        })
        .collect();
    format!(
        "@{} wrote:\n\n{}\n\n",
        c.author,
        quoted.join("\n").trim_end()
    )
}

/// The task type for `planning.task_specific` (seed 000 §9.3): the first label
/// that names an entry (`bug`, `docs`, lower-cased, spaces and `-` as `_`), else
/// `gitlab_issue` / `gitlab_mr` when configured, else `github_issue` /
/// `github_pr` / `gitlab`.
pub fn task_type(issue: &Issue, configured: &[&str]) -> String {
    for label in &issue.labels {
        let key: String = label
            .trim()
            .to_lowercase()
            .chars()
            .map(|c| if c == ' ' || c == '-' { '_' } else { c })
            .collect();
        if configured.contains(&key.as_str()) {
            return key;
        }
        if configured.contains(&label.as_str()) {
            return label.clone();
        }
    }
    let r = &issue.reference;
    if let Some(s) = r.specific_task_type()
        && configured.contains(&s)
    {
        return s.to_string();
    }
    r.task_type().to_string()
}

fn one_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default().trim()
}

/// A YAML double-quoted scalar (JSON string syntax is valid YAML).
fn yaml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

/// A body that itself starts with `---` would be read as front matter: drop it.
fn strip_leading_front_matter(body: &str) -> &str {
    let t = body.trim_start();
    if let Some(rest) = t.strip_prefix("---\n")
        && let Some(end) = rest.find("\n---")
    {
        return rest[end + 4..].trim_start_matches(['-', '\n']);
    }
    body
}

/// The first `max` characters of `s` (on a char boundary); whether it was cut.
pub fn cut_chars(s: &str, max: usize) -> (&str, bool) {
    match s.char_indices().nth(max) {
        Some((i, _)) => (&s[..i], true),
        None => (s, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ForgeRef;

    #[test]
    fn labels_go_to_the_front_matter_not_after_the_body() {
        let issue = Issue {
            reference: ForgeRef::parse("github:o/r#1").unwrap_or_else(|e| panic!("{e}")),
            title: "T".into(),
            body: "- Given a, when b, then c".into(),
            labels: vec!["enhancement".into(), "good first issue".into()],
            author: "alice".into(),
            state: "open".into(),
            web_url: String::new(),
            comments: Vec::new(),
        };
        let cfg = dandori_config::PermissionsConfig::default();
        let t = request_text(&issue, &Permissions::new(&cfg, "alice")).text;
        let (front, body) = t
            .trim_start_matches("---\n")
            .split_once("---\n")
            .unwrap_or_default();
        assert!(
            front.contains("labels: \"enhancement, good first issue\""),
            "{t}"
        );
        assert!(!body.contains("Labels"), "{t}");
        assert!(body.trim_end().ends_with("then c"), "{t}");
    }
}
