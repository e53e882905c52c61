//! Request intake (pipeline step 1): `requests/<id>.md` or free text becomes a
//! [`Request`] with an id, title, summary, constraints, enumerated requirements and
//! acceptance criteria (Given/When/Then). English and Japanese are both understood.
//!
//! * The id comes from YAML front matter (`id:`) or the file name without `.md`.
//! * The title comes from front matter (`title:`) or the first heading.
//! * Sections are recognised by their heading ("Constraints" / "制約",
//!   "Acceptance criteria" / "受け入れ基準" / "AC", "Requirements" / "要件", …), see
//!   [`markdown::SectionKind`].
//! * Acceptance criteria: Given/When/Then lines (`前提` / `操作` / `期待` labels,
//!   「〜のとき、…」 sentences) or plain bullets under an AC heading, see [`acceptance`].
//! * Inline enumerations ("A, B, C を実装", "add A, B and C", "A・B・C") are split by
//!   [`enumeration::split_inline`].

pub mod acceptance;
pub mod enumeration;
pub mod markdown;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::PlannerError;
use markdown::{Section, SectionKind};

/// The language a request is written in (by its share of Japanese characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    En,
    Ja,
}

/// A Given/When/Then criterion as written (or as recovered) in the request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequestCriterion {
    pub given: String,
    pub when: String,
    pub then: String,
    /// False when `given`/`when` were filled in because the request only said what
    /// should hold (a plain bullet under an AC heading).
    pub explicit: bool,
}

/// One enumerated requirement: a top-level bullet / numbered item (with its nested
/// bullets as `details`) or one part of an inline enumeration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Requirement {
    pub text: String,
    pub details: Vec<String>,
    /// How it was found: `bullet`, `numbered`, `inline`.
    pub origin: RequirementOrigin,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RequirementOrigin {
    Bullet,
    Numbered,
    Inline,
}

/// A parsed request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Request {
    pub id: String,
    pub title: String,
    /// 1–3 lines.
    pub summary: String,
    /// Every paragraph of the request's prose (not its criteria, constraints or
    /// out-of-scope list), one per line: what the request as one unit of work
    /// reads for its targets, beyond the summary's first three sentences.
    #[serde(skip)]
    pub prose: String,
    pub constraints: Vec<String>,
    pub acceptance_criteria: Vec<RequestCriterion>,
    /// Enumerated requirements in request order.
    pub requirements: Vec<String>,
    /// The same, with nested details and where they came from.
    pub requirement_items: Vec<Requirement>,
    /// Items of an "Out of scope" / "対象外" section.
    pub out_of_scope: Vec<String>,
    /// Repository paths mentioned in the text (`src/x.py`, `docs/`), as written.
    pub mentioned_paths: Vec<String>,
    pub language: Language,
    /// The whole text as read.
    pub raw: String,
    /// The file it came from (None for `--text`).
    pub source_path: Option<PathBuf>,
}

impl Request {
    /// Reads and parses `requests/<id>.md`.
    pub fn load(path: &Path) -> Result<Request, PlannerError> {
        let raw =
            dandori_fs::read_to_string(path).map_err(|source| PlannerError::RequestUnreadable {
                path: path.to_path_buf(),
                source,
            })?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        parse(
            &raw,
            &stem,
            &path.display().to_string(),
            Some(path.to_path_buf()),
        )
    }

    /// Parses free text (`--text`). The id is `text-<8 hex of its hash>` unless the
    /// text has front matter with an `id:`.
    pub fn from_text(text: &str) -> Result<Request, PlannerError> {
        let digest = crate::hex_digest(text.as_bytes());
        let fallback = format!("text-{}", &digest[..8]);
        parse(text, &fallback, "--text", None)
    }

    /// The request's whole text without front matter, for retrieval queries.
    pub fn query_text(&self) -> String {
        let mut q = self.title.clone();
        q.push('\n');
        q.push_str(&self.summary);
        for r in &self.requirements {
            q.push('\n');
            q.push_str(r);
        }
        q
    }
}

/// The largest request accepted (`REQUEST_TOO_LARGE` above): real requests are a
/// few KiB; planning work grows with the text.
pub const MAX_REQUEST_BYTES: usize = 128 * 1024;
/// At most this many mentioned paths are kept (the first ones, in text order).
pub const MAX_MENTIONED_PATHS: usize = 500;

/// Parses a request text. `fallback_id` is used when front matter has no `id:`;
/// `origin` names the source in errors.
pub fn parse(
    raw: &str,
    fallback_id: &str,
    origin: &str,
    source_path: Option<PathBuf>,
) -> Result<Request, PlannerError> {
    if raw.len() > MAX_REQUEST_BYTES {
        return Err(PlannerError::RequestTooLarge {
            origin: origin.to_string(),
            bytes: raw.len(),
            limit: MAX_REQUEST_BYTES,
        });
    }
    let (front, body, body_line) = split_front_matter(raw, origin)?;
    let id = match front.get("id") {
        Some(id) => id.clone(),
        None => fallback_id.to_string(),
    };
    check_id(&id, origin)?;

    // An issue's title line directly above its body ("Require a non-empty name
    // for Blueprints\nThings do not work…") is its heading, not the start of a
    // paragraph the next sentence runs on from.
    let titled;
    let body = if !front.contains_key("title") && title_line(body) {
        titled = format!("# {body}");
        titled.as_str()
    } else {
        body
    };
    let doc = markdown::parse(body, body_line);
    let language = detect_language(body);

    let mut title = front.get("title").cloned().unwrap_or_default();
    if title.is_empty() {
        title = doc.title.clone().unwrap_or_default();
    }

    let mut constraints = Vec::new();
    let mut criteria = Vec::new();
    let mut items: Vec<Requirement> = Vec::new();
    let mut out_of_scope = Vec::new();
    let mut summary_parts: Vec<String> = Vec::new();

    for section in &doc.sections {
        match section.kind {
            SectionKind::Constraints => {
                constraints.extend(section.bullet_texts());
                constraints.extend(section.paragraphs.iter().cloned());
            }
            SectionKind::AcceptanceCriteria => {
                criteria.extend(acceptance::parse_section(section, language));
            }
            SectionKind::OutOfScope => {
                out_of_scope.extend(section.bullet_texts());
                out_of_scope.extend(section.paragraphs.iter().cloned());
            }
            SectionKind::Requirements | SectionKind::Summary | SectionKind::Other => {
                items.extend(section_requirements(section));
                summary_parts.extend(section.paragraphs.iter().cloned());
            }
        }
    }

    // Given/When/Then lines written outside an AC section still count.
    for section in &doc.sections {
        if section.kind != SectionKind::AcceptanceCriteria {
            criteria.extend(acceptance::parse_loose_lines(&section.lines));
        }
    }

    // No bullets anywhere: try the inline enumeration of the summary and title.
    if items.is_empty() {
        let mut sentences: Vec<String> = summary_parts
            .iter()
            .flat_map(|p| enumeration::sentences(p))
            .collect();
        if sentences.is_empty() && !title.is_empty() {
            sentences.push(title.clone());
        }
        for s in sentences {
            let parts = enumeration::split_inline(&s);
            if parts.len() >= 2 {
                items.extend(parts.into_iter().map(|text| Requirement {
                    text,
                    details: Vec::new(),
                    origin: RequirementOrigin::Inline,
                }));
                break;
            }
        }
    }

    let summary = make_summary(&title, &summary_parts, &items);
    if title.is_empty() {
        title = first_line(&summary);
    }
    if title.trim().is_empty() && summary.trim().is_empty() && items.is_empty() {
        return Err(PlannerError::EmptyRequest {
            origin: origin.to_string(),
        });
    }

    let mentioned_paths = mentioned_paths(body);
    let prose = summary_parts.join("\n");
    Ok(Request {
        id,
        title,
        summary,
        prose,
        constraints: dedup(constraints),
        acceptance_criteria: criteria,
        requirements: items.iter().map(|r| r.text.clone()).collect(),
        requirement_items: items,
        out_of_scope,
        mentioned_paths,
        language,
        raw: raw.to_string(),
        source_path,
    })
}

/// Top-level bullets of a section become requirements, nested ones their details.
fn section_requirements(section: &Section) -> Vec<Requirement> {
    let mut out: Vec<Requirement> = Vec::new();
    for b in &section.bullets {
        // Bullets that are Given/When/Then clauses are criteria, not work items.
        if acceptance::is_gwt_clause(&b.text) {
            continue;
        }
        if b.depth == 0 || out.is_empty() {
            out.push(Requirement {
                text: b.text.clone(),
                details: Vec::new(),
                origin: if b.numbered {
                    RequirementOrigin::Numbered
                } else {
                    RequirementOrigin::Bullet
                },
            });
        } else if let Some(last) = out.last_mut() {
            last.details.push(b.text.clone());
        }
    }
    out
}

fn make_summary(title: &str, paragraphs: &[String], items: &[Requirement]) -> String {
    let mut lines: Vec<String> = Vec::new();
    for p in paragraphs {
        for s in enumeration::sentences(p) {
            if lines.len() < 3 && !s.trim().is_empty() {
                lines.push(s.trim().to_string());
            }
        }
    }
    if lines.is_empty() {
        if !title.is_empty() {
            lines.push(title.to_string());
        } else if let Some(first) = items.first() {
            lines.push(first.text.clone());
        }
    }
    lines.join("\n")
}

fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or("").trim();
    truncate_chars(line, 80)
}

/// Cuts `s` to at most `max` characters, adding `…` when cut.
pub fn truncate_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Order-keeping dedup, linear (a hash set, not `Vec::contains`).
fn dedup(v: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut out: Vec<String> = Vec::new();
    for s in v {
        let s = s.trim().to_string();
        if !s.is_empty() && seen.insert(s.clone()) {
            out.push(s);
        }
    }
    out
}

/// Japanese when at least 10% of the letters are kana or kanji.
pub fn detect_language(text: &str) -> Language {
    let mut cjk = 0usize;
    let mut letters = 0usize;
    for c in text.chars() {
        if is_cjk(c) {
            cjk += 1;
            letters += 1;
        } else if c.is_alphabetic() {
            letters += 1;
        }
    }
    if letters > 0 && cjk * 10 >= letters {
        Language::Ja
    } else {
        Language::En
    }
}

/// Hiragana, katakana, CJK ideographs, half-width katakana.
pub fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{3040}'..='\u{30ff}' | '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}'
        | '\u{f900}'..='\u{faff}' | '\u{ff66}'..='\u{ff9f}')
}

/// Request ids become directory names and branch components: keep them plain.
fn check_id(id: &str, origin: &str) -> Result<(), PlannerError> {
    let ok = !id.is_empty()
        && id.len() <= 100
        && !id.starts_with('.')
        && !id.starts_with('-')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !id.contains("..");
    if ok {
        Ok(())
    } else {
        Err(PlannerError::InvalidRequest {
            origin: origin.to_string(),
            line: 1,
            message: format!(
                "request id {id:?} must be 1-100 ASCII letters, digits, '-', '_' or '.' \
                 (it names the run directory and the work branch); set `id:` in front matter"
            ),
        })
    }
}

/// Splits YAML front matter (`---` … `---` at the very start) from the body. Returns
/// the scalar keys, the body and the 1-based line the body starts on.
/// The first line of `body` when it reads as a title standing on its own line
/// above the text: short, plain (no Markdown syntax), no closing punctuation,
/// not cut mid-phrase (no trailing "the", "in", "and"…), and the next line
/// starts a sentence of its own.
/// `text` without a leading area tag, the way issue and commit titles name the
/// part of the project they are about (`skipping: --runxfail breaks …`,
/// `fix(parser): …`, `docs/api: …`): one word (letters, digits, `_-./`, an
/// optional `(scope)` and `!`) before `: `. The rest is what to do.
pub(crate) fn without_area_tag(text: &str) -> &str {
    let Some(i) = text.find(": ") else {
        return text;
    };
    let (tag, rest) = (&text[..i], text[i + 2..].trim_start());
    let word = tag.split('(').next().unwrap_or(tag);
    let scope_ok = match tag.find('(') {
        Some(o) => tag.trim_end_matches('!').ends_with(')') && !tag[o..].contains(' '),
        None => true,
    };
    let is_tag = !word.is_empty()
        && word.len() <= 24
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '!'))
        && scope_ok
        && rest.chars().count() >= 8;
    if is_tag { rest } else { text }
}

fn title_line(body: &str) -> bool {
    const RUN_ON: &[&str] = &[
        "a", "an", "the", "in", "of", "to", "and", "or", "for", "with", "that", "is", "are", "be",
        "on", "at", "by", "from", "as", "if", "when", "which", "this", "it", "not", "but",
    ];
    let Some((first, rest)) = body.split_once('\n') else {
        return false;
    };
    let line = first.trim();
    let next = rest.lines().next().unwrap_or("").trim();
    let plain = |s: &str| !s.starts_with(['#', '-', '*', '+', '>', '|', '`', '<', '[', '!']);
    let numbered = line
        .split_once(['.', ')'])
        .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
    let last_word = line
        .rsplit(char::is_whitespace)
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let starts_sentence = next
        .chars()
        .next()
        .is_some_and(|c| c.is_uppercase() || c == '`' || !c.is_alphabetic());
    // An issue's body often starts lower case (`joblib should be …`, `from
    // pkg import x`, `python 3.11, …`, a URL): still a body when the title is
    // short (prose is not wrapped that early), names its area (`kernS: …`), or
    // the body starts with code — unless the body starts with a word that
    // continues a sentence (`in the text.`).
    let next_word = next.split_whitespace().next().unwrap_or("");
    let continues = RUN_ON.contains(&next_word.to_ascii_lowercase().as_str());
    let code_like = next_word.contains(['.', '/', ':', '_', '(', '=']);
    let area_tag = without_area_tag(line) != line;
    let body_follows =
        starts_sentence || area_tag || (!continues && (line.chars().count() < 60 || code_like));
    !line.is_empty()
        && line.chars().count() <= 100
        && plain(line)
        && !numbered
        && !line.ends_with([
            '.', '!', '?', ':', ',', ';', '。', '：', '、', '，', '！', '？',
        ])
        && !RUN_ON.contains(&last_word.as_str())
        && !next.is_empty()
        && body_follows
}

fn split_front_matter<'a>(
    raw: &'a str,
    origin: &str,
) -> Result<(std::collections::BTreeMap<String, String>, &'a str, usize), PlannerError> {
    let mut map = std::collections::BTreeMap::new();
    let text = raw.strip_prefix('\u{feff}').unwrap_or(raw);
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return Ok((map, text, 1));
    };
    let mut offset = 0usize;
    let mut end = None;
    for (i, line) in rest.split_inclusive('\n').enumerate() {
        if line.trim_end() == "---" || line.trim_end() == "..." {
            end = Some((offset, offset + line.len(), i));
            break;
        }
        offset += line.len();
    }
    let Some((yaml_end, body_start, closing_line)) = end else {
        return Err(PlannerError::InvalidRequest {
            origin: origin.to_string(),
            line: 1,
            message: "front matter opened with `---` is never closed".to_string(),
        });
    };
    let yaml = &rest[..yaml_end];
    if !yaml.trim().is_empty() {
        let value: serde_norway::Value =
            serde_norway::from_str(yaml).map_err(|e| PlannerError::InvalidRequest {
                origin: origin.to_string(),
                line: e.location().map(|l| l.line() + 1).unwrap_or(2),
                message: format!("front matter is not valid YAML: {e}"),
            })?;
        if let serde_norway::Value::Mapping(m) = value {
            for (k, v) in m {
                let (Some(k), Some(v)) = (k.as_str(), scalar(&v)) else {
                    continue;
                };
                map.insert(k.to_string(), v);
            }
        }
    }
    Ok((map, &rest[body_start..], closing_line + 3))
}

fn scalar(v: &serde_norway::Value) -> Option<String> {
    match v {
        serde_norway::Value::String(s) => Some(s.trim().to_string()),
        serde_norway::Value::Number(n) => Some(n.to_string()),
        serde_norway::Value::Bool(b) => Some(b.to_string()),
        serde_norway::Value::Null
        | serde_norway::Value::Sequence(_)
        | serde_norway::Value::Mapping(_)
        | serde_norway::Value::Tagged(_) => None,
    }
}

/// Paths mentioned in the text: backticked tokens that look like paths, and bare
/// tokens with a `/` or a known source extension.
pub fn mentioned_paths(text: &str) -> Vec<String> {
    let mut out = dedup(crate::text::path_like_tokens(text));
    out.truncate(MAX_MENTIONED_PATHS);
    out
}
