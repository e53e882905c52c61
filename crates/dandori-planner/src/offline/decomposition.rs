//! Work items from a request, in order of preference: its enumerated requirements,
//! else its acceptance criteria (two or more), else the paths it mentions (two or
//! more), else the request as one item. Items over `max_subtasks` are merged into
//! the last one.

use crate::request::{Language, Request, RequirementOrigin};

/// What an item is about, for dependency ordering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    /// Defines an interface, schema, model or type.
    Definition,
    /// Implements or changes behaviour.
    Implementation,
    /// Adds or changes tests.
    Test,
    /// Documentation.
    Docs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Enumeration,
    AcceptanceCriteria,
    MentionedPaths,
    Whole,
}

impl Source {
    pub fn describe(&self) -> &'static str {
        match self {
            Source::Enumeration => "the request's enumerated requirements",
            Source::AcceptanceCriteria => "the request's acceptance criteria",
            Source::MentionedPaths => "the paths the request mentions",
            Source::Whole => "the request as a whole (nothing to enumerate)",
        }
    }

    pub fn describe_ja(&self) -> &'static str {
        match self {
            Source::Enumeration => "リクエストに列挙された要件",
            Source::AcceptanceCriteria => "リクエストの受け入れ基準",
            Source::MentionedPaths => "リクエストが言及するパス",
            Source::Whole => "リクエスト全体（列挙なし）",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub title: String,
    pub details: Vec<String>,
    pub kind: ItemKind,
    /// Items merged into this one because of `max_subtasks`.
    pub merged: usize,
    /// Texts of the merged items.
    pub merged_titles: Vec<String>,
    /// For the request as one item: its summary beyond the title (cut at 80
    /// characters). Read for the item's kind and the files it implies (an
    /// export, `python -m pkg`, a failing test), not for retrieval.
    pub context: String,
}

impl Item {
    fn new(title: String, details: Vec<String>) -> Item {
        let kind = classify(&format!("{title} {}", details.join(" ")));
        Item {
            title,
            details,
            kind,
            merged: 0,
            merged_titles: Vec::new(),
            context: String::new(),
        }
    }

    /// The item's text and its context.
    pub fn full_text(&self) -> String {
        if self.context.is_empty() {
            self.intent()
        } else {
            format!("{} {}", self.intent(), self.context)
        }
    }

    /// The full text of the item: title, details, merged items.
    pub fn intent(&self) -> String {
        let mut s = self.title.clone();
        if !self.details.is_empty() {
            s.push_str(" — ");
            s.push_str(&self.details.join("; "));
        }
        for m in &self.merged_titles {
            s.push_str("; ");
            s.push_str(m);
        }
        s
    }
}

const DEFINITION_WORDS: &[&str] = &[
    "define",
    "definition",
    "interface",
    "schema",
    "model",
    "type ",
    "types",
    "enum",
    "struct",
    "protocol",
    "dataclass",
    "migration",
    "定義",
    "インターフェース",
    "インタフェース",
    "スキーマ",
    "型",
    "モデル",
    "列挙",
];
const TEST_WORDS: &[&str] = &["test", "spec ", "テスト", "試験"];
/// A test that fails names a bug, not test work.
const FAILURE_WORDS: &[&str] = &[
    " fails",
    " failing",
    " fail ",
    " failed",
    " broken",
    "が失敗",
    "が落ちる",
    "失败",
];
const DOC_WORDS: &[&str] = &[
    "readme",
    "document",
    "docs",
    "changelog",
    "ドキュメント",
    "文書",
    "説明書",
    "マニュアル",
];
const IMPLEMENT_WORDS: &[&str] = &[
    "implement",
    "export",
    "add ",
    "use ",
    "support",
    "handle",
    "expose",
    "endpoint",
    "command",
    "実装",
    "利用",
    "追加",
    "対応",
    "使用",
];

/// Keyword classes (English and Japanese). Tests and docs win over definitions when
/// an item is mainly about them ("add tests for the model").
pub fn classify(text: &str) -> ItemKind {
    let t = format!("{} ", text.to_lowercase());
    let first_words: String = t.split_whitespace().take(4).collect::<Vec<_>>().join(" ") + " ";
    let has = |words: &[&str], s: &str| words.iter().any(|w| s.contains(w));
    // "`tests/test_x.py` fails: …" reports a bug through a test; the fix is code.
    let failing_test = has(FAILURE_WORDS, &t)
        && !["add ", "write ", "create "]
            .iter()
            .any(|v| first_words.starts_with(v));
    if !failing_test
        && (has(TEST_WORDS, &first_words)
            || (has(TEST_WORDS, &t) && !has(IMPLEMENT_WORDS, &t) && !has(DEFINITION_WORDS, &t)))
    {
        ItemKind::Test
    } else if has(DOC_WORDS, &first_words) || (has(DOC_WORDS, &t) && !has(IMPLEMENT_WORDS, &t)) {
        ItemKind::Docs
    } else if has(DEFINITION_WORDS, &t) && !has(&["implement", "実装"], &t) {
        ItemKind::Definition
    } else {
        ItemKind::Implementation
    }
}

pub fn items(req: &Request, max_subtasks: usize) -> (Vec<Item>, Source) {
    let (mut items, source) = if !req.requirement_items.is_empty() && enumerated(req) {
        (
            req.requirement_items
                .iter()
                .map(|r| Item::new(r.text.clone(), r.details.clone()))
                .collect::<Vec<_>>(),
            Source::Enumeration,
        )
    } else if req.acceptance_criteria.len() >= 2 {
        (
            req.acceptance_criteria
                .iter()
                .map(|c| {
                    let title = match req.language {
                        Language::En => format!("Make it so that {}", c.then),
                        Language::Ja => format!("{}ようにする", c.then.trim_end_matches('。')),
                    };
                    let details = if c.explicit {
                        vec![format!("when {}", c.when)]
                    } else {
                        Vec::new()
                    };
                    Item::new(title, details)
                })
                .collect(),
            Source::AcceptanceCriteria,
        )
    } else if req.mentioned_paths.len() >= 2 && !relates_paths(req) {
        (
            req.mentioned_paths
                .iter()
                .map(|p| {
                    let title = match req.language {
                        Language::En => format!("Update `{p}` for: {}", req.title),
                        Language::Ja => format!("`{p}` を変更する: {}", req.title),
                    };
                    Item::new(title, Vec::new())
                })
                .collect(),
            Source::MentionedPaths,
        )
    } else {
        let details = req.requirements.clone();
        let mut item = Item::new(req.title.clone(), details);
        // The request as one item holds all of its summary, not only the title
        // (the first line, cut at 80 characters): "… Export it from the package."
        // is part of the work.
        item.context = req
            .summary
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && *l != req.title)
            .collect::<Vec<_>>()
            .join(" ");
        if !item.context.is_empty() {
            item.kind = classify(&item.full_text());
        }
        (vec![item], Source::Whole)
    };
    let cap = max_subtasks.max(1);
    if items.len() > cap {
        let tail: Vec<Item> = items.split_off(cap - 1);
        let mut merged = tail[0].clone();
        for extra in &tail[1..] {
            merged.merged += 1;
            merged.merged_titles.push(extra.title.clone());
            merged.details.extend(extra.details.iter().cloned());
        }
        items.push(merged);
    }
    (items, source)
}

/// Verbs that give a path a new place: the destination may not exist yet.
pub(crate) const RELOCATE_WORDS: &[&str] = &[
    "move",
    "rename",
    "relocate",
    "copy",
    "split",
    "extract",
    "mv",
    "移動",
    "移す",
    "名前を変更",
    "リネーム",
    "改名",
    "コピー",
    "分割",
    "抽出",
    "移动",
    "重命名",
    "复制",
    "拆分",
    "提取",
];
/// Other verbs that make one change out of several paths.
const RELATE_WORDS: &[&str] = &[
    "duplicate",
    "merge",
    "combine",
    "consolidate",
    "replace",
    "swap",
    "inline",
    "migrate",
    "convert",
    "複製",
    "統合",
    "置き換え",
    "置換",
    "移行",
    "変換",
    "合并",
    "替换",
    "迁移",
    "转换",
];

/// `text` contains one of `words`: ASCII words as words (with a short suffix:
/// "moves", "renamed"), the others as substrings.
pub(crate) fn mentions(text: &str, words: &[&str]) -> bool {
    let l = text.to_lowercase();
    let tokens: Vec<&str> = l.split(|c: char| !c.is_alphanumeric()).collect();
    words.iter().any(|w| {
        if w.is_ascii() {
            tokens
                .iter()
                .any(|x| *x == *w || (w.len() > 3 && x.starts_with(w) && x.len() <= w.len() + 3))
        } else {
            l.contains(w)
        }
    })
}

/// The request names its paths as one change between them ("move A to B",
/// "rename A to B", "merge A into B", "A を B に移動"): one step owns them all,
/// since a step per path would leave each half of the change to a different step.
fn relates_paths(req: &Request) -> bool {
    let head = format!("{} {}", req.title, req.summary);
    mentions(&head, RELOCATE_WORDS) || mentions(&head, RELATE_WORDS) || nested_paths(req)
}

/// One mentioned path lies inside another (`internal/store/` and
/// `internal/store/store_test.go`), or is another's file name
/// (`store_test.go`): the same place named twice, not two places.
fn nested_paths(req: &Request) -> bool {
    let paths = &req.mentioned_paths;
    paths.iter().enumerate().any(|(i, a)| {
        paths.iter().enumerate().any(|(j, b)| {
            let dir = format!("{}/", a.trim_end_matches('/'));
            i != j && (b.starts_with(&dir) || b.ends_with(&format!("/{a}")))
        })
    })
}

/// One bullet is not an enumeration: it is the request restated.
fn enumerated(req: &Request) -> bool {
    req.requirement_items.len() >= 2
        || req
            .requirement_items
            .iter()
            .any(|r| r.origin != RequirementOrigin::Inline && !r.details.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyword_classes() {
        assert_eq!(classify("Define the `Priority` enum"), ItemKind::Definition);
        assert_eq!(classify("優先度の型を定義する"), ItemKind::Definition);
        assert_eq!(
            classify("Implement filtering by priority"),
            ItemKind::Implementation
        );
        assert_eq!(
            classify("Add tests for the priority filter"),
            ItemKind::Test
        );
        assert_eq!(classify("テストを追加する"), ItemKind::Test);
        assert_eq!(classify("Update the README"), ItemKind::Docs);
        assert_eq!(classify("READMEに使い方を追記する"), ItemKind::Docs);
    }
}
