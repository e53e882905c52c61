//! A CommonMark/GFM reading of a request body (pulldown-cmark), used by the
//! query side when [`super::QueryWeights::markdown_reader`] is on: it says where
//! the code blocks (backtick and `~~~` fences, indented code), the code spans and
//! the HTML comments are. The text itself is kept as written: rendered text
//! would turn `__init__` into a bold `init` and drop the address of a link, and
//! both are evidence.

use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_GFM
}

/// `text` without its HTML comments (block and inline `<!-- … -->`).
pub fn strip_comments(text: &str) -> String {
    let mut cut: Vec<Range<usize>> = Vec::new();
    let mut block: Option<Range<usize>> = None;
    for (event, range) in Parser::new_ext(text, options()).into_offset_iter() {
        match event {
            Event::Start(Tag::HtmlBlock) => block = Some(range),
            Event::End(TagEnd::HtmlBlock) => {
                if let Some(r) = block.take()
                    && text[r.clone()].trim_start().starts_with("<!--")
                {
                    cut.push(r);
                }
            }
            Event::InlineHtml(html) if html.starts_with("<!--") => cut.push(range),
            _ => {}
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for r in cut {
        if r.start >= at {
            out.push_str(&text[at..r.start]);
            at = r.end;
        }
    }
    out.push_str(&text[at..]);
    out
}

/// The parts of a body: prose (the text with its code blocks cut out, code
/// spans kept), the code blocks' contents, and every code piece in order with
/// whether it is a block.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Parts {
    pub prose: String,
    pub code: String,
    pub pieces: Vec<(bool, String)>,
}

/// Splits `text` into prose and code as a GFM renderer would.
pub fn parts(text: &str) -> Parts {
    let mut parts = Parts::default();
    let mut block: Option<(Range<usize>, String)> = None;
    let mut at = 0;
    for (event, range) in Parser::new_ext(text, options()).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(_)) => block = Some((range, String::new())),
            Event::Text(t) => {
                if let Some((_, content)) = block.as_mut() {
                    content.push_str(&t);
                }
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some((r, content)) = block.take() {
                    if r.start >= at {
                        parts.prose.push_str(&text[at..r.start]);
                        parts.prose.push('\n');
                        at = r.end;
                    }
                    if !parts.code.is_empty() {
                        parts.code.push('\n');
                    }
                    parts.code.push_str(&content);
                    parts.pieces.push((true, content));
                }
            }
            Event::Code(span) if block.is_none() => parts.pieces.push((false, span.into_string())),
            _ => {}
        }
    }
    parts.prose.push_str(&text[at..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn fences_tildes_indented_code_and_spans() {
        let text = "Title `a_b`\n\n~~~py\nx = f()\n~~~\n\n    indented()\n\nSee ``c`` and ``d``.\n```\nopen\n";
        let p = parts(text);
        assert_eq!(
            p.pieces,
            vec![
                (false, "a_b".to_string()),
                (true, "x = f()\n".to_string()),
                (true, "indented()\n".to_string()),
                (false, "c".to_string()),
                (false, "d".to_string()),
                // An unclosed fence runs to the end of the body.
                (true, "open\n".to_string()),
            ]
        );
        assert!(p.prose.contains("See ``c`` and ``d``."), "{}", p.prose);
        assert!(!p.prose.contains("f()") && !p.prose.contains("open"));
        assert_eq!(p.code, "x = f()\n\nindented()\n\nopen\n");
    }

    #[test]
    fn comments_go_text_stays_as_written() {
        let text = "<!-- template: describe -->\nThe __init__ of [x](a/b.py) <!-- note --> fails\n```\n<!-- kept in code -->\n```\n";
        assert_eq!(
            strip_comments(text),
            "The __init__ of [x](a/b.py)  fails\n```\n<!-- kept in code -->\n```\n"
        );
    }
}
