//! The tool loop's conversation, compressed past a budget (seed 000 §11.3.2:
//! keep what matters, drop what is redundant).
//!
//! Every model turn resends the whole conversation, so a long step pays for its
//! early tool results again and again. When the estimate of the conversation
//! after the system prompt and the step prompt (the part that grows;
//! [`dandori_llm::estimate_tokens`], the estimate the client admits calls by) is
//! over `llm.budgets.conversation`, the oldest turns are replaced by one user
//! message that lists them, one line per action: the tool, its main argument
//! (a path, a command, a query), whether it failed, and the first line of the
//! result; a reflection keeps its evaluation. What is always kept whole: the
//! system prompt, the step prompt, and the newest turns that fit — at least
//! the last one, so the model always sees the result it has to act on. A turn
//! is an assistant message with the tool results and notes that answer it, so
//! a native tool call is never separated from its result.

use dandori_llm::{Message, Role, estimate_tokens};
use serde_json::Value;

/// The first line of the summary message; a later compression folds the
/// earlier summary into the new one.
pub const SUMMARY_HEADER: &str = "Earlier actions of this step, compressed (llm.budgets.conversation); the files hold their results:";

/// Characters of one summary line.
const LINE_CHARS: usize = 160;

/// What a compression did, for the `LLM_CALL` record; tokens of the
/// conversation after the step prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compression {
    pub before_tokens: u64,
    pub after_tokens: u64,
    /// Turns replaced by summary lines.
    pub turns_summarised: usize,
}

/// The estimate of a conversation: every message's text and tool calls.
pub fn estimate(messages: &[Message]) -> u64 {
    messages.iter().map(message_tokens).sum()
}

fn message_tokens(m: &Message) -> u64 {
    estimate_tokens(&m.content)
        + m.tool_calls
            .iter()
            .map(|c| estimate_tokens(&c.name) + estimate_tokens(&c.arguments))
            .sum::<u64>()
}

/// Compresses `messages` in place when the estimate of what follows the
/// system prompt and the step prompt (`messages[0..2]`) exceeds `budget`.
/// Returns what it did, or `None` when the conversation fits (or nothing older
/// than the last turn is left to compress).
pub fn compress(messages: &mut Vec<Message>, budget: u64) -> Option<Compression> {
    let head_len = 2;
    if messages.len() <= head_len + 1 {
        return None;
    }
    let before_tokens = estimate(&messages[head_len..]);
    if before_tokens <= budget {
        return None;
    }
    // An earlier summary sits right after the head.
    let (mut lines, body_start) = match messages.get(head_len) {
        Some(m) if m.role == Role::User && m.content.starts_with(SUMMARY_HEADER) => (
            m.content
                .lines()
                .skip(1)
                .map(str::to_string)
                .collect::<Vec<_>>(),
            head_len + 1,
        ),
        _ => (Vec::new(), head_len),
    };
    let turns = split_turns(&messages[body_start..]);
    if turns.len() < 2 {
        return None;
    }
    // Keep the newest turns that fit beside the head and a summary line per
    // older turn (estimated at a full line each); always the last.
    let mut keep_from = turns.len() - 1;
    let mut kept_tokens = estimate(&turns[keep_from]);
    while keep_from > 0 {
        let candidate = estimate(&turns[keep_from - 1]);
        let summary_guess =
            (lines.len() + keep_from) as u64 * estimate_tokens(&"x".repeat(LINE_CHARS));
        if summary_guess + kept_tokens + candidate > budget {
            break;
        }
        kept_tokens += candidate;
        keep_from -= 1;
    }
    if keep_from == 0 {
        return None;
    }
    for turn in &turns[..keep_from] {
        summarise_turn(turn, &mut lines);
    }
    // The summary itself stays within what the budget leaves: the oldest lines
    // go first, counted in one line.
    let room = budget.saturating_sub(kept_tokens);
    let mut omitted = 0usize;
    let omitted_prefix = "… earlier actions omitted: ";
    let summary_text = |lines: &[String], omitted: usize| {
        let mut text = SUMMARY_HEADER.to_string();
        if omitted > 0 {
            text.push_str(&format!("\n{omitted_prefix}{omitted}"));
        }
        for l in lines {
            text.push('\n');
            text.push_str(l);
        }
        text
    };
    // Carry a count of lines an earlier compression already omitted.
    if let Some(first) = lines.first()
        && let Some(n) = first.strip_prefix(omitted_prefix)
    {
        omitted = n.trim().parse().unwrap_or(0);
        lines.remove(0);
    }
    while lines.len() > 1 && estimate_tokens(&summary_text(&lines, omitted)) > room {
        lines.remove(0);
        omitted += 1;
    }
    let summary = Message::user(summary_text(&lines, omitted));
    let mut out: Vec<Message> = messages[..head_len].to_vec();
    out.push(summary);
    for turn in &turns[keep_from..] {
        out.extend(turn.iter().cloned());
    }
    let after_tokens = estimate(&out[head_len..]);
    *messages = out;
    Some(Compression {
        before_tokens,
        after_tokens,
        turns_summarised: keep_from,
    })
}

/// Splits the body into turns: each starts at an assistant message and holds
/// the messages that answer it. Messages before the first assistant message
/// form a turn of their own.
fn split_turns(body: &[Message]) -> Vec<Vec<Message>> {
    let mut turns: Vec<Vec<Message>> = Vec::new();
    for m in body {
        if m.role == Role::Assistant || turns.is_empty() {
            turns.push(Vec::new());
        }
        if let Some(t) = turns.last_mut() {
            t.push(m.clone());
        }
    }
    turns
}

/// One summary line per action of the turn (or one for a reflection or a note).
fn summarise_turn(turn: &[Message], lines: &mut Vec<String>) {
    let Some(first) = turn.first() else { return };
    if first.role == Role::Assistant && !first.tool_calls.is_empty() {
        for call in &first.tool_calls {
            let result = turn
                .iter()
                .find(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(&call.id))
                .map_or("no result", |m| m.content.as_str());
            lines.push(clip(&format!(
                "- {}{} → {}",
                call.name,
                main_argument(&call.arguments),
                first_line(result)
            )));
        }
        return;
    }
    if first.role == Role::Assistant {
        let v: Option<Value> = serde_json::from_str(first.content.trim()).ok();
        let phase = v
            .as_ref()
            .and_then(|v| v.get("phase"))
            .and_then(Value::as_str);
        match phase {
            Some("execution") => {
                let call = v.as_ref().and_then(|v| v.get("function_call"));
                let name = call
                    .and_then(|c| c.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or("?");
                let args = call
                    .and_then(|c| c.get("arguments"))
                    .map(Value::to_string)
                    .unwrap_or_default();
                // The result comes back as "Result of <tool> (ok|error):\n…".
                let result = turn
                    .iter()
                    .skip(1)
                    .find(|m| m.content.starts_with("Result of "))
                    .map_or("no result".to_string(), |m| {
                        let mut it = m.content.lines();
                        let status = it
                            .next()
                            .map(|l| if l.contains("(error)") { "error: " } else { "" })
                            .unwrap_or("");
                        format!("{status}{}", it.next().unwrap_or("").trim())
                    });
                lines.push(clip(&format!(
                    "- {name}{} → {result}",
                    main_argument(&args)
                )));
            }
            Some("reflection") => {
                let eval = v
                    .as_ref()
                    .and_then(|v| v.pointer("/reflection/evaluation"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let status = v
                    .as_ref()
                    .and_then(|v| v.pointer("/reflection/status"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                lines.push(clip(&format!("- reflection ({status}): {eval}")));
            }
            _ => {}
        }
        return;
    }
    // A note before any assistant message (a reflection's feedback).
    lines.push(clip(&format!("- note: {}", first_line(&first.content))));
}

/// ` path`, ` command` or ` query` of a call's arguments, else the arguments
/// clipped.
fn main_argument(arguments: &str) -> String {
    let v: Option<Value> = serde_json::from_str(arguments).ok();
    for key in ["path", "command", "query", "pattern", "url", "name"] {
        if let Some(s) = v.as_ref().and_then(|v| v.get(key)).and_then(Value::as_str) {
            return format!(" {}", first_line(s));
        }
    }
    if arguments.trim().is_empty() || arguments.trim() == "{}" {
        String::new()
    } else {
        format!(" {}", first_line(arguments))
    }
}

fn first_line(s: &str) -> String {
    let line = s
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if line.is_empty() {
        "(empty)".to_string()
    } else {
        line.to_string()
    }
}

fn clip(s: &str) -> String {
    if s.chars().count() <= LINE_CHARS {
        return s.to_string();
    }
    let mut out: String = s.chars().take(LINE_CHARS - 1).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use dandori_llm::ToolCall;

    fn call(id: &str, name: &str, args: &str) -> Message {
        let mut m = Message::assistant("");
        m.tool_calls = vec![ToolCall {
            id: id.to_string(),
            name: name.to_string(),
            arguments: args.to_string(),
        }];
        m
    }

    fn conversation(turns: usize) -> Vec<Message> {
        let mut m = vec![Message::system("sys"), Message::user("step prompt")];
        for i in 0..turns {
            let id = format!("c{i}");
            m.push(call(&id, "read_file", &format!("{{\"path\":\"f{i}.py\"}}")));
            m.push(Message::tool_result(
                id,
                format!("content of f{i}\n{}", "line\n".repeat(200)),
            ));
        }
        m
    }

    #[test]
    fn under_the_budget_nothing_changes() {
        let mut m = conversation(2);
        let before = m.clone();
        assert_eq!(compress(&mut m, 100_000), None);
        assert_eq!(m, before);
    }

    #[test]
    fn old_turns_become_summary_lines_and_the_last_turn_stays_whole() {
        let mut m = conversation(6);
        let budget = 1200;
        let c = compress(&mut m, budget).unwrap();
        assert!(c.after_tokens <= budget, "{c:?}");
        assert!(c.after_tokens < c.before_tokens);
        assert_eq!(m[0].content, "sys");
        assert_eq!(m[1].content, "step prompt");
        assert!(m[2].content.starts_with(SUMMARY_HEADER));
        assert!(m[2].content.contains("- read_file f0.py → content of f0"));
        // The last call and its result, whole and paired.
        let n = m.len();
        assert_eq!(m[n - 2].tool_calls[0].id, "c5");
        assert_eq!(m[n - 1].tool_call_id.as_deref(), Some("c5"));
        assert!(m[n - 1].content.starts_with("content of f5"));
        // No tool result without its call.
        for (i, msg) in m.iter().enumerate() {
            if msg.role == Role::Tool {
                let id = msg.tool_call_id.as_deref().unwrap();
                assert!(
                    m[..i]
                        .iter()
                        .any(|p| p.tool_calls.iter().any(|c| c.id == id))
                );
            }
        }
        // A second compression folds the first summary in.
        for i in 6..10 {
            let id = format!("c{i}");
            m.push(call(&id, "run_command", "{\"command\":\"pytest -q\"}"));
            m.push(Message::tool_result(
                id,
                format!("FAILED test_{i}\n{}", "x\n".repeat(1000)),
            ));
        }
        let c2 = compress(&mut m, budget).unwrap();
        assert!(c2.after_tokens <= budget, "{c2:?}");
        let summary = &m[2].content;
        assert_eq!(summary.matches(SUMMARY_HEADER).count(), 1);
        assert!(summary.contains("f0.py") || summary.contains("earlier actions omitted"));
        assert!(
            summary.contains("- run_command pytest -q → FAILED test_6"),
            "{summary}"
        );
    }

    #[test]
    fn json_format_turns_keep_the_tool_and_the_error() {
        let mut m = vec![Message::system("sys"), Message::user("step prompt")];
        for i in 0..5 {
            m.push(Message::assistant(
                serde_json::json!({"phase": "execution", "current_task": "S01",
                    "function_call": {"name": "run_command", "arguments": {"command": format!("make t{i}")}}})
                .to_string(),
            ));
            m.push(Message::user(format!(
                "Result of run_command (error):\nexit 2: no rule t{i}\n{}",
                "y\n".repeat(300)
            )));
        }
        m.push(Message::assistant(
            r#"{"phase":"reflection","reflection":{"action_evaluated":"run_command","status":"failure","evaluation":"the target does not exist"}}"#,
        ));
        m.push(Message::user("Continue with the next action."));
        compress(&mut m, 700).unwrap();
        let summary = &m[2].content;
        assert!(
            summary.contains("- run_command make t0 → error: exit 2: no rule t0"),
            "{summary}"
        );
        assert!(m.last().unwrap().content.contains("Continue"));
    }
}
