//! A small line-based reader for request markdown: headings split the text into
//! sections, each with its bullets (depth, numbered or not) and paragraphs. Only
//! what intake needs; fenced code blocks are skipped.

use regex::Regex;
use std::sync::LazyLock;

/// What a section is about, from its heading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SectionKind {
    /// Text before any heading, or "Summary" / "概要" / "背景" …
    Summary,
    /// "Requirements" / "要件" / "やること" / "Tasks" …
    Requirements,
    /// "Constraints" / "制約" …
    Constraints,
    /// "Acceptance criteria" / "受け入れ基準" / "AC" …
    AcceptanceCriteria,
    /// "Out of scope" / "対象外" / "Non-goals" …
    OutOfScope,
    /// Any other heading (its bullets still count as requirements).
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bullet {
    pub text: String,
    /// 0 for top level.
    pub depth: usize,
    pub numbered: bool,
    /// 1-based line in the request file.
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub kind: SectionKind,
    pub heading: Option<String>,
    pub bullets: Vec<Bullet>,
    /// Non-bullet text, consecutive lines joined.
    pub paragraphs: Vec<String>,
    /// Every non-empty line (bullet markers stripped), with its 1-based line number.
    pub lines: Vec<(usize, String)>,
}

impl Section {
    fn new(kind: SectionKind, heading: Option<String>) -> Self {
        Section {
            kind,
            heading,
            bullets: Vec::new(),
            paragraphs: Vec::new(),
            lines: Vec::new(),
        }
    }

    pub fn bullet_texts(&self) -> Vec<String> {
        self.bullets.iter().map(|b| b.text.clone()).collect()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doc {
    /// The first level-1 heading (or the first heading when there is no level 1).
    pub title: Option<String>,
    pub sections: Vec<Section>,
}

static HEADING: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(#{1,6})\s+(.+?)\s*#*\s*$").unwrap_or_else(|_| never()));
static BULLET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(\s*)(?:([-*+•●◦▪])\s+|(・)\s*|(\d{1,3}[.)．、])\s*|\((\d{1,3})\)\s*|([①-⑳])\s*)(.*)$",
    )
    .unwrap_or_else(|_| never())
});
static CHECKBOX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\[[ xX]\]\s*").unwrap_or_else(|_| never()));
static PSEUDO_HEADING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:\*\*(.+?)\*\*\s*[:：]?|【(.+?)】|([^\s].{0,40}?)\s*[:：])\s*$")
        .unwrap_or_else(|_| never())
});

/// A static regex that failed to compile is a programming error caught by the unit
/// tests; at run time it degrades to a regex that never matches.
fn never() -> Regex {
    #[allow(clippy::unwrap_used)]
    Regex::new(r"[^\s\S]").unwrap()
}

/// Classifies a heading by the seeds' and common issue templates' vocabulary.
pub fn classify_heading(heading: &str) -> SectionKind {
    let h = heading
        .trim()
        .trim_matches(|c: char| c == ':' || c == '：' || c == '*' || c.is_whitespace())
        .to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| h.contains(w));
    if h == "ac"
        || h.starts_with("ac ")
        || h.starts_with("ac(")
        || has(&[
            "acceptance",
            "受け入れ",
            "受入",
            "完了条件",
            "definition of done",
            "done when",
            "合格基準",
            "検収",
        ])
        || h == "dod"
    {
        SectionKind::AcceptanceCriteria
    } else if has(&[
        "out of scope",
        "out-of-scope",
        "non-goal",
        "non goal",
        "not in scope",
        "スコープ外",
        "対象外",
        "やらないこと",
        "範囲外",
    ]) {
        SectionKind::OutOfScope
    } else if has(&["constraint", "制約", "制限事項", "前提条件", "restriction"]) {
        SectionKind::Constraints
    } else if has(&[
        "requirement",
        "task",
        "todo",
        "to do",
        "what to do",
        "changes",
        "deliverable",
        "scope",
        "要件",
        "要求",
        "やること",
        "タスク",
        "実装内容",
        "変更内容",
        "対応内容",
        "作業内容",
        "実装すること",
    ]) {
        SectionKind::Requirements
    } else if has(&[
        "summary",
        "overview",
        "background",
        "context",
        "description",
        "motivation",
        "概要",
        "背景",
        "目的",
        "説明",
    ]) {
        SectionKind::Summary
    } else {
        SectionKind::Other
    }
}

/// Parses `body`; `first_line` is the 1-based line number of its first line.
pub fn parse(body: &str, first_line: usize) -> Doc {
    let mut title: Option<String> = None;
    let mut first_heading: Option<String> = None;
    let mut sections = vec![Section::new(SectionKind::Summary, None)];
    let mut in_fence = false;
    let mut para: Vec<String> = Vec::new();
    let mut bullet_indents: Vec<usize> = Vec::new();

    let flush = |para: &mut Vec<String>, sections: &mut Vec<Section>| {
        if !para.is_empty() {
            let text = join_lines(para);
            if let Some(s) = sections.last_mut() {
                s.paragraphs.push(text);
            }
            para.clear();
        }
    };

    for (i, raw_line) in body.lines().enumerate() {
        let line_no = first_line + i;
        let trimmed = raw_line.trim();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            flush(&mut para, &mut sections);
            continue;
        }
        if in_fence {
            continue;
        }
        if trimmed.is_empty() {
            flush(&mut para, &mut sections);
            continue;
        }
        if let Some(c) = HEADING.captures(raw_line) {
            flush(&mut para, &mut sections);
            let level = c.get(1).map_or(1, |m| m.as_str().len());
            let text = c.get(2).map_or("", |m| m.as_str()).trim().to_string();
            // A section heading ("## Acceptance criteria", "## Summary") names a
            // part of the request, not the request: it is never the title.
            if first_heading.is_none() && classify_heading(&text) == SectionKind::Other {
                first_heading = Some(text.clone());
            }
            if level == 1 && title.is_none() {
                title = Some(text.clone());
                // Text under the title is the summary.
                sections.push(Section::new(SectionKind::Summary, None));
            } else {
                sections.push(Section::new(classify_heading(&text), Some(text)));
            }
            bullet_indents.clear();
            continue;
        }
        if let Some(kind) = pseudo_heading(trimmed) {
            flush(&mut para, &mut sections);
            sections.push(Section::new(kind, Some(trimmed.to_string())));
            bullet_indents.clear();
            continue;
        }
        if let Some(c) = BULLET.captures(raw_line) {
            flush(&mut para, &mut sections);
            let indent = c
                .get(1)
                .map_or(0, |m| m.as_str().replace('\t', "    ").len());
            let numbered = c.get(4).is_some() || c.get(5).is_some() || c.get(6).is_some();
            let text = c.get(7).map_or("", |m| m.as_str()).trim();
            let text = CHECKBOX.replace(text, "").trim().to_string();
            if text.is_empty() {
                continue;
            }
            while bullet_indents.last().is_some_and(|&d| d > indent) {
                bullet_indents.pop();
            }
            if bullet_indents.last() != Some(&indent) {
                bullet_indents.push(indent);
            }
            let depth = bullet_indents.len().saturating_sub(1);
            if let Some(s) = sections.last_mut() {
                s.lines.push((line_no, text.clone()));
                s.bullets.push(Bullet {
                    text,
                    depth,
                    numbered,
                    line: line_no,
                });
            }
            continue;
        }
        // A continuation line of a bullet (indented text right after it).
        let continues_bullet = raw_line.starts_with("  ") && para.is_empty();
        if let Some(s) = sections.last_mut() {
            s.lines.push((line_no, trimmed.to_string()));
            if continues_bullet && let Some(b) = s.bullets.last_mut() {
                b.text.push(' ');
                b.text.push_str(trimmed);
                continue;
            }
        }
        para.push(trimmed.to_string());
    }
    flush(&mut para, &mut sections);
    sections.retain(|s| s.heading.is_some() || !s.lines.is_empty());
    Doc {
        title: title.or(first_heading),
        sections,
    }
}

/// Lines like `**Acceptance criteria**`, `【受け入れ基準】` or `Constraints:` act as
/// headings when they name a known section.
fn pseudo_heading(line: &str) -> Option<SectionKind> {
    let c = PSEUDO_HEADING.captures(line)?;
    let name = c.get(1).or(c.get(2)).or(c.get(3))?.as_str();
    match classify_heading(name) {
        SectionKind::Other => None,
        kind => Some(kind),
    }
}

/// Joins wrapped lines: a space between Latin words, nothing between Japanese.
fn join_lines(lines: &[String]) -> String {
    let mut out = String::new();
    for l in lines {
        if let (Some(a), Some(b)) = (out.chars().last(), l.chars().next())
            && !(super::is_cjk(a) && super::is_cjk(b))
        {
            out.push(' ');
        }
        out.push_str(l);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_bullets_and_depth() {
        let doc = parse(
            "# Add priorities\n\nTasks need priorities.\n\n## Requirements\n- one\n  - detail\n- two\n1. three\n\n**Acceptance criteria**\n- it works\n",
            1,
        );
        assert_eq!(doc.title.as_deref(), Some("Add priorities"));
        let req = doc
            .sections
            .iter()
            .find(|s| s.kind == SectionKind::Requirements)
            .unwrap();
        let got: Vec<(String, usize, bool)> = req
            .bullets
            .iter()
            .map(|b| (b.text.clone(), b.depth, b.numbered))
            .collect();
        assert_eq!(
            got,
            vec![
                ("one".to_string(), 0, false),
                ("detail".to_string(), 1, false),
                ("two".to_string(), 0, false),
                ("three".to_string(), 0, true),
            ]
        );
        assert!(
            doc.sections
                .iter()
                .any(|s| s.kind == SectionKind::AcceptanceCriteria && s.bullets.len() == 1)
        );
    }

    #[test]
    fn japanese_headings_and_nakaguro_bullets() {
        let doc = parse(
            "## 要件\n・一覧表示\n・削除\n## 受け入れ基準\n- 動く\n## 制約\n- 既存APIを壊さない\n",
            1,
        );
        let kinds: Vec<SectionKind> = doc.sections.iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            vec![
                SectionKind::Requirements,
                SectionKind::AcceptanceCriteria,
                SectionKind::Constraints
            ]
        );
        assert_eq!(doc.sections[0].bullet_texts(), vec!["一覧表示", "削除"]);
    }
}
