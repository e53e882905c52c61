//! Acceptance criteria in requests: Given/When/Then in English (one line or one
//! clause per line, `And` continuing the previous clause), Japanese labels
//! (`前提:` / `操作:` / `期待:`), 「〜のとき、…」 / "When …, …" sentences, and plain
//! bullets under an AC heading (kept as the `then`, with `given`/`when` filled in and
//! marked `explicit: false`).

use std::sync::LazyLock;

use regex::Regex;

use super::markdown::Section;
use super::{Language, RequestCriterion};

static ONE_LINE_EN: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*given\s+(.+?)[,;]?\s+when\s+(.+?)[,;]?\s+then\s+(.+?)\s*$").ok()
});
static WHEN_THEN_EN: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(?:when|if)\s+(.+?)(?:,\s*then\s+|\s+then\s+|,\s*)(.+?)\s*$").ok()
});
static CLAUSE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^\s*(?:\*\*)?(given|when|then|and|but|前提|操作|条件|実行|期待結果|期待|結果)(?:\*\*)?(?:\s*[:：]\s*|\s+)(.+?)\s*$",
    )
    .ok()
});
static JA_LABELS_ONE_LINE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"前提\s*[:：]\s*(.+?)\s*[/／,、]\s*(?:操作|条件|実行)\s*[:：]\s*(.+?)\s*[/／,、]\s*(?:期待結果|期待|結果)\s*[:：]\s*(.+?)\s*$").ok()
});
static JA_TOKI: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"^(.+?)(?:のとき|の時|とき|時|場合|すると|したら)[、,，]\s*(.+?)\s*$").ok()
});

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Given,
    When,
    Then,
}

fn clause(line: &str) -> Option<(Option<Field>, String)> {
    let c = CLAUSE.as_ref()?.captures(line)?;
    let label = c.get(1)?.as_str().to_lowercase();
    let text = c.get(2)?.as_str().trim().to_string();
    let field = match label.as_str() {
        "given" | "前提" => Some(Field::Given),
        "when" | "操作" | "条件" | "実行" => Some(Field::When),
        "then" | "期待結果" | "期待" | "結果" => Some(Field::Then),
        _ => None, // and / but continue the previous clause
    };
    // "When x, then y" on one line is a whole criterion, not a clause.
    Some((field, text))
}

/// True when `text` is a Given/When/Then clause or a one-line criterion.
pub fn is_gwt_clause(text: &str) -> bool {
    one_line(text).is_some()
        || (starts_with_label(text) && clause(text).is_some_and(|(f, _)| f.is_some()))
}

fn starts_with_label(text: &str) -> bool {
    let t = text.trim_start().trim_start_matches("**").to_lowercase();
    [
        "given ", "when ", "then ", "given:", "when:", "then:", "前提", "操作", "条件", "実行",
        "期待", "結果",
    ]
    .iter()
    .any(|p| t.starts_with(p))
}

fn one_line(line: &str) -> Option<RequestCriterion> {
    if let Some(c) = ONE_LINE_EN.as_ref().and_then(|r| r.captures(line)) {
        return Some(RequestCriterion {
            given: c.get(1)?.as_str().trim().to_string(),
            when: c.get(2)?.as_str().trim().to_string(),
            then: trim_end_punct(c.get(3)?.as_str()),
            explicit: true,
        });
    }
    if let Some(c) = JA_LABELS_ONE_LINE.as_ref().and_then(|r| r.captures(line)) {
        return Some(RequestCriterion {
            given: c.get(1)?.as_str().trim().to_string(),
            when: c.get(2)?.as_str().trim().to_string(),
            then: trim_end_punct(c.get(3)?.as_str()),
            explicit: true,
        });
    }
    None
}

fn trim_end_punct(s: &str) -> String {
    s.trim().trim_end_matches(['.', '。']).trim().to_string()
}

#[derive(Default)]
struct Partial {
    given: Vec<String>,
    when: Vec<String>,
    then: Vec<String>,
    last: Option<Field>,
}

impl Partial {
    fn is_empty(&self) -> bool {
        self.given.is_empty() && self.when.is_empty() && self.then.is_empty()
    }
    fn push(&mut self, field: Field, text: String) {
        match field {
            Field::Given => self.given.push(text),
            Field::When => self.when.push(text),
            Field::Then => self.then.push(text),
        }
        self.last = Some(field);
    }
    fn finish(&mut self, lang: Language, out: &mut Vec<RequestCriterion>) {
        if self.is_empty() {
            return;
        }
        let p = std::mem::take(self);
        let join = |v: &[String]| {
            v.iter()
                .map(|s| trim_end_punct(s))
                .collect::<Vec<_>>()
                .join(match lang {
                    Language::En => " and ",
                    Language::Ja => "、かつ",
                })
        };
        let (g, w) = generic(lang);
        out.push(RequestCriterion {
            given: if p.given.is_empty() {
                g.to_string()
            } else {
                join(&p.given)
            },
            when: if p.when.is_empty() {
                w.to_string()
            } else {
                join(&p.when)
            },
            then: if p.then.is_empty() {
                match lang {
                    Language::En => "the behaviour described holds".to_string(),
                    Language::Ja => "記述どおりに動作する".to_string(),
                }
            } else {
                join(&p.then)
            },
            explicit: !p.given.is_empty() && !p.when.is_empty() && !p.then.is_empty(),
        });
    }
}

/// The `given` / `when` used when a criterion only states its outcome.
pub fn generic(lang: Language) -> (&'static str, &'static str) {
    match lang {
        Language::En => (
            "the repository with this request implemented",
            "the feature is exercised (unit tests or manual check)",
        ),
        Language::Ja => (
            "本リクエストの変更が適用されている",
            "該当機能を実行する（ユニットテストまたは手動確認）",
        ),
    }
}

/// Criteria of an AC section: every line is one, in whatever form it is written.
pub fn parse_section(section: &Section, lang: Language) -> Vec<RequestCriterion> {
    let mut out = Vec::new();
    let mut partial = Partial::default();
    for (_, line) in &section.lines {
        if let Some(c) = one_line(line) {
            partial.finish(lang, &mut out);
            out.push(c);
            continue;
        }
        let lower = line.to_lowercase();
        let is_clause_line =
            starts_with_label(line) || lower.starts_with("and ") || lower.starts_with("but ");
        if is_clause_line && let Some((field, text)) = clause(line) {
            match field {
                Some(f) => {
                    // A Given or When after a complete criterion starts the next one.
                    if f != Field::Then && !partial.then.is_empty() {
                        partial.finish(lang, &mut out);
                    }
                    partial.push(f, text);
                }
                None => {
                    if let Some(f) = partial.last {
                        partial.push(f, text);
                    }
                }
            }
            // "When X, then Y" / "When X, Y" as a single line.
            if partial.given.is_empty()
                && partial.then.is_empty()
                && let Some(c) = when_then(line, lang)
            {
                partial = Partial::default();
                out.push(c);
            }
            continue;
        }
        partial.finish(lang, &mut out);
        if let Some(c) = when_then(line, lang) {
            out.push(c);
            continue;
        }
        let (g, w) = generic(lang);
        out.push(RequestCriterion {
            given: g.to_string(),
            when: w.to_string(),
            then: trim_end_punct(line),
            explicit: false,
        });
    }
    partial.finish(lang, &mut out);
    out
}

/// "When X, then Y" / "If X, Y" / 「Xのとき、Y」: the `when` and `then` of a criterion.
fn when_then(line: &str, lang: Language) -> Option<RequestCriterion> {
    let (g, _) = generic(lang);
    if let Some(c) = WHEN_THEN_EN.as_ref().and_then(|r| r.captures(line)) {
        return Some(RequestCriterion {
            given: g.to_string(),
            when: c.get(1)?.as_str().trim().to_string(),
            then: trim_end_punct(c.get(2)?.as_str()),
            explicit: true,
        });
    }
    if lang == Language::Ja
        && let Some(c) = JA_TOKI.as_ref().and_then(|r| r.captures(line))
    {
        let then = trim_end_punct(c.get(2)?.as_str());
        let mut when = c.get(1)?.as_str().trim().to_string();
        // 「不正な日付で作成したとき」: the action, not its past ("作成する").
        // One kanji before した is a verb of its own ending in す (渡した → 渡す,
        // 呼び出した → 呼び出す); a compound or katakana noun takes する.
        if let Some(stem) = when.strip_suffix("した") {
            let is_kanji = |c: &char| ('\u{4e00}'..='\u{9fff}').contains(c);
            let run = stem.chars().rev().take_while(is_kanji).count();
            when = if run == 1 {
                format!("{stem}す")
            } else {
                format!("{stem}する")
            };
        } else if line.contains(&format!("{when}したら")) {
            when.push_str("する");
        }
        if when.chars().count() >= 2 && then.chars().count() >= 2 {
            return Some(RequestCriterion {
                given: g.to_string(),
                when,
                then,
                explicit: true,
            });
        }
    }
    None
}

/// Criteria written outside an AC section: only explicit Given/When/Then (one line,
/// or clause lines starting with Given).
pub fn parse_loose_lines(lines: &[(usize, String)]) -> Vec<RequestCriterion> {
    let mut out = Vec::new();
    let mut partial = Partial::default();
    let lang = Language::En;
    for (_, line) in lines {
        if let Some(c) = one_line(line) {
            partial.finish(lang, &mut out);
            out.push(c);
            continue;
        }
        match clause(line) {
            Some((Some(Field::Given), text)) if starts_with_label(line) => {
                partial.finish(lang, &mut out);
                partial.push(Field::Given, text);
            }
            Some((Some(f), text)) if !partial.is_empty() && starts_with_label(line) => {
                partial.push(f, text)
            }
            Some((None, text)) if !partial.is_empty() => {
                if let Some(f) = partial.last {
                    partial.push(f, text);
                }
            }
            _ => partial.finish(lang, &mut out),
        }
    }
    // Incomplete loose clauses (no Then) are not criteria.
    if !partial.then.is_empty() {
        partial.finish(lang, &mut out);
    }
    out.retain(|c| c.explicit);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::markdown;
    use pretty_assertions::assert_eq;

    fn crit(g: &str, w: &str, t: &str, explicit: bool) -> RequestCriterion {
        RequestCriterion {
            given: g.into(),
            when: w.into(),
            then: t.into(),
            explicit,
        }
    }

    fn section(text: &str) -> Section {
        let doc = markdown::parse(text, 1);
        doc.sections.into_iter().next().unwrap()
    }

    #[test]
    fn english_forms() {
        let s = section(
            "## Acceptance criteria\n- Given a task, when I set priority high, then it is saved.\n- Given an empty list\n  When I list tasks\n  Then I get []\n  And the status is 200\n- When the title is empty, the API returns 400\n- Tasks can be sorted\n",
        );
        let got = parse_section(&s, Language::En);
        let (g, w) = generic(Language::En);
        assert_eq!(
            got,
            vec![
                crit("a task", "I set priority high", "it is saved", true),
                crit(
                    "an empty list",
                    "I list tasks",
                    "I get [] and the status is 200",
                    true
                ),
                crit(g, "the title is empty", "the API returns 400", true),
                crit(g, w, "Tasks can be sorted", false),
            ]
        );
    }

    #[test]
    fn japanese_forms() {
        let s = section(
            "## 受け入れ基準\n- 前提: タスクが1件ある / 操作: 完了にする / 期待: done が true になる\n- 前提：空の一覧\n- 操作：一覧を取得する\n- 期待：空配列が返る\n- タイトルが空のとき、400を返す\n- 不正な日付で作成したとき、400 を返す\n- 空の文字列を渡したとき、ValueError を送出する\n- 削除したら、一覧から消える\n- 既存のテストが通る\n",
        );
        let got = parse_section(&s, Language::Ja);
        let (g, w) = generic(Language::Ja);
        assert_eq!(
            got,
            vec![
                crit("タスクが1件ある", "完了にする", "done が true になる", true),
                crit("空の一覧", "一覧を取得する", "空配列が返る", true),
                crit(g, "タイトルが空", "400を返す", true),
                crit(g, "不正な日付で作成する", "400 を返す", true),
                crit(g, "空の文字列を渡す", "ValueError を送出する", true),
                crit(g, "削除する", "一覧から消える", true),
                crit(g, w, "既存のテストが通る", false),
            ]
        );
    }

    #[test]
    fn loose_lines_need_given_and_then() {
        let lines: Vec<(usize, String)> = [
            "Given a user",
            "When they log in",
            "Then a session exists",
            "just prose",
        ]
        .iter()
        .enumerate()
        .map(|(i, s)| (i + 1, s.to_string()))
        .collect();
        assert_eq!(
            parse_loose_lines(&lines),
            vec![crit("a user", "they log in", "a session exists", true)]
        );
    }
}
