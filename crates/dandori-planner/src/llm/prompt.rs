//! Prompt templates (files under `crates/dandori-planner/prompts/`, compiled in) and
//! the repository context packed into a token budget.

use dandori_config::{DecompositionLevel, Strategy};
use dandori_llm::estimate_tokens;
use serde::Serialize;

pub const SYSTEM: &str = include_str!("../../prompts/system.md");
pub const PLANNING: &str = include_str!("../../prompts/planning.md");
pub const SIZE_ESTIMATION: &str = include_str!("../../prompts/size_estimation.md");
pub const VALIDATION_CORRECTION: &str = include_str!("../../prompts/validation_correction.md");

pub fn strategy_text(strategy: Strategy) -> &'static str {
    match strategy {
        Strategy::ChainOfThought => include_str!("../../prompts/strategy/chain_of_thought.md"),
        Strategy::Hierarchical => include_str!("../../prompts/strategy/hierarchical.md"),
        Strategy::Simple => include_str!("../../prompts/strategy/simple.md"),
    }
}

pub fn decomposition_text(level: DecompositionLevel) -> &'static str {
    match level {
        DecompositionLevel::Detailed => include_str!("../../prompts/decomposition/detailed.md"),
        DecompositionLevel::Moderate => include_str!("../../prompts/decomposition/moderate.md"),
        DecompositionLevel::Minimal => include_str!("../../prompts/decomposition/minimal.md"),
    }
}

/// Replace each `{{name}}`. Templates are compile-time constants and the tests
/// check every placeholder of each is provided by its caller.
pub fn render(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = template.to_string();
    for (name, value) in vars {
        out = out.replace(&format!("{{{{{name}}}}}"), value.trim_end());
    }
    out
}

/// What the repository context is made of (from the scan, the environment
/// analysis and retrieval).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RepoContextInput {
    pub tree_summary: String,
    /// Detected environments and the selected one, one per line.
    pub environment: String,
    /// Retrieved files, best first.
    pub files: Vec<ContextFile>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ContextFile {
    pub path: String,
    pub score: f64,
    pub snippets: Vec<ContextSnippet>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ContextSnippet {
    pub start_line: usize,
    pub end_line: usize,
    pub text: String,
}

/// The packed context and what went in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PackedContext {
    #[serde(skip)]
    pub text: String,
    pub tokens: u64,
    pub budget: u64,
    pub files_included: Vec<String>,
    pub files_omitted: usize,
}

/// Pack the context into `budget` tokens: the tree summary (up to a quarter), the
/// environment (up to an eighth), then files with their snippets, best first, while
/// they fit. A snippet that does not fit whole is cut at a line boundary.
pub fn pack_context(input: &RepoContextInput, budget: u64) -> PackedContext {
    let mut text = String::new();
    let tree = cut_to_tokens(input.tree_summary.trim(), budget / 4);
    if !tree.is_empty() {
        text.push_str("### Tree\n");
        text.push_str(&tree);
        text.push('\n');
    }
    let env = cut_to_tokens(input.environment.trim(), budget / 8);
    if !env.is_empty() {
        text.push_str("### Environment\n");
        text.push_str(&env);
        text.push('\n');
    }
    let mut included = Vec::new();
    let mut omitted = 0;
    let mut header_written = false;
    for file in &input.files {
        let used = estimate_tokens(&text);
        if used >= budget {
            omitted += 1;
            continue;
        }
        let mut block = format!("#### {} (score {:.2})\n", file.path, file.score);
        for s in &file.snippets {
            block.push_str(&format!(
                "L{}-{}:\n{}\n",
                s.start_line,
                s.end_line,
                s.text.trim_end()
            ));
        }
        let heading = if header_written {
            ""
        } else {
            "### Relevant files\n"
        };
        let room = budget - used;
        let needed = estimate_tokens(&block) + estimate_tokens(heading);
        let block = if needed <= room {
            block
        } else {
            // Keep the file if at least its header and some lines fit.
            let cut = cut_to_tokens(&block, room.saturating_sub(estimate_tokens(heading) + 2));
            if cut.lines().count() < 2 {
                omitted += 1;
                continue;
            }
            cut
        };
        text.push_str(heading);
        header_written = true;
        text.push_str(&block);
        if !block.ends_with('\n') {
            text.push('\n');
        }
        included.push(file.path.clone());
    }
    PackedContext {
        tokens: estimate_tokens(&text),
        text,
        budget,
        files_included: included,
        files_omitted: omitted,
    }
}

/// At most `tokens` (estimated) of `text`, cut at a line boundary.
fn cut_to_tokens(text: &str, tokens: u64) -> String {
    if estimate_tokens(text) <= tokens {
        return text.to_string();
    }
    let mut out = String::new();
    for line in text.lines() {
        if estimate_tokens(&out) + estimate_tokens(line) + 1 > tokens {
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, lines: usize) -> ContextFile {
        ContextFile {
            path: path.to_string(),
            score: 1.0,
            snippets: vec![ContextSnippet {
                start_line: 1,
                end_line: lines,
                text: (0..lines)
                    .map(|i| format!("line {i} of {path}\n"))
                    .collect(),
            }],
        }
    }

    #[test]
    fn every_placeholder_is_filled() {
        let system = render(SYSTEM, &[("strategy", "s"), ("max_diff_lines", "300")]);
        let planning = render(
            PLANNING,
            &[
                ("request", "r"),
                ("max_subtasks", "5"),
                ("decomposition_level", "d"),
                ("size", "M"),
                ("repo_context", "c"),
            ],
        );
        let size = render(SIZE_ESTIMATION, &[("user_input", "u")]);
        let fix = render(VALIDATION_CORRECTION, &[("findings", "f")]);
        for text in [system, planning, size, fix] {
            assert!(!text.contains("{{"), "{text}");
        }
    }

    #[test]
    fn context_fits_its_budget_best_files_first() {
        let input = RepoContextInput {
            tree_summary: (0..200).map(|i| format!("src/dir{i}/\n")).collect(),
            environment: "python (pyproject.toml)".to_string(),
            files: (0..20).map(|i| file(&format!("src/f{i}.py"), 30)).collect(),
        };
        let packed = pack_context(&input, 600);
        assert!(packed.tokens <= 600, "{}", packed.tokens);
        assert!(packed.text.starts_with("### Tree\nsrc/dir0/\n"));
        assert!(
            packed
                .text
                .contains("### Environment\npython (pyproject.toml)\n")
        );
        assert_eq!(packed.files_included[0], "src/f0.py");
        assert!(packed.files_omitted > 0);
        assert_eq!(packed.files_included.len() + packed.files_omitted, 20);
    }
}
