//! The offline deterministic planner (strategy `simple`): the default when no model
//! is configured. Same input, same plan.
//!
//! 1. **Goal understanding** from the request: title → main objective, criteria →
//!    success criteria, constraints, summary and repository facts → context.
//! 2. **Decomposition** ([`decomposition`]): units of work, from the enumerated
//!    requirements (bullets, numbered lists, inline "A, B, C を実装" / "add A, B
//!    and C") grouped by what they change, else the request as one unit; never
//!    the acceptance criteria, which attach to the units that make them true. At
//!    most `max_subtasks` (the tail is merged into the last subtask).
//! 3. **Targets** ([`targets`]): per-subtask retrieval queries give `target_paths`
//!    and `code_files_hint`; test subtasks target the tests mapped to the code.
//! 4. **Dependencies** ([`dependencies`]): definitions before implementations, tests
//!    after the code they test, docs last; produces/consumes from backticked
//!    identifiers that a definition introduces.
//! 5. **Size inputs** measured from the result (files, dependency depth).

pub mod decomposition;
pub mod dependencies;
pub mod targets;

use std::collections::BTreeSet;

use dandori_plan::{Boundaries, GoalUnderstanding};

use crate::context::PlanningContext;
use crate::draft::{ChunkingSignals, Draft, DraftSubtask, SizeInputs};
use crate::error::PlannerError;
use crate::request::{Language, truncate_chars};
use crate::{DraftPlanner, acceptance};
use decomposition::{Item, ItemKind, Source};

/// The offline planner.
#[derive(Debug, Clone, Copy, Default)]
pub struct SimplePlanner;

impl SimplePlanner {
    /// The offline draft, which never fails.
    pub fn draft_for(ctx: &PlanningContext) -> Draft {
        draft(ctx)
    }
}

impl DraftPlanner for SimplePlanner {
    fn name(&self) -> String {
        "offline".to_string()
    }

    fn draft(&self, ctx: &PlanningContext) -> Result<Draft, PlannerError> {
        Ok(draft(ctx))
    }
}

fn draft(ctx: &PlanningContext) -> Draft {
    let req = &ctx.request;
    let lang = req.language;
    let (items, source) = decomposition::items(req, ctx.max_subtasks());
    let mut subtasks: Vec<DraftSubtask> = Vec::new();
    let has_test_item = items.iter().any(|i| i.kind == ItemKind::Test);
    let modules = targets::ModuleNames::build(ctx);
    let mut no_match: Vec<String> = Vec::new();

    for (n, item) in items.iter().enumerate() {
        let t = targets::for_item(ctx, &modules, item, has_test_item);
        if !t.matched {
            no_match.push(item.title.clone());
        }
        let complexity = complexity(item, t.target_paths.len());
        let estimated_lines =
            40 + 60 * t.target_paths.len() as u64 + 20 * item.details.len() as u64;
        let unit = ctx.unit_commands.first();
        let mut success_criteria = match lang {
            Language::En => vec![
                format!("{} is done", item.title),
                "the diff stays within the step's target paths".to_string(),
            ],
            Language::Ja => vec![
                format!("「{}」が完了している", item.title),
                "差分がステップの target_paths に収まっている".to_string(),
            ],
        };
        if let Some(unit) = unit {
            success_criteria.insert(
                1,
                match lang {
                    Language::En => format!("unit tests pass (`{unit}`)"),
                    Language::Ja => format!("ユニットテストが通る（`{unit}`）"),
                },
            );
        }
        subtasks.push(DraftSubtask {
            key: format!("task_{}", n + 1),
            title: short_title(&item.title),
            intent: item.full_text(),
            target_paths: t.target_paths,
            code_files_hint: t.code_files_hint,
            context_files: t.context_files,
            produces: Vec::new(),
            consumes: Vec::new(),
            boundaries: None,
            depends_on: Vec::new(),
            complexity,
            estimated_lines,
            links_to_ac: Vec::new(),
            success_criteria,
            required_tools: Vec::new(),
            suggested_tools: suggested_tools(item.kind, ctx),
            suggested_persona: None,
            test_first: false,
            actions: Vec::new(),
        });
    }

    dependencies::assign(ctx, &items, &mut subtasks);
    boundaries(req, &items, &mut subtasks);

    // Acceptance criteria: the request's, each linked to the subtask it is closest to.
    let acs = acceptance::from_request(req);
    link_criteria(&acs, &items, &mut subtasks);

    let depth = dependencies::depth(&subtasks);
    let files: BTreeSet<String> = subtasks
        .iter()
        .flat_map(|s| s.target_paths.iter().cloned())
        .collect();
    let tokens: u64 = subtasks
        .iter()
        .map(|s| 1500 + 600 * s.target_paths.len() as u64 + (s.estimated_lines * 4))
        .sum();
    let complexity_score = subtasks.iter().map(|s| s.complexity).max().unwrap_or(1);
    let confidence = match source {
        Source::Enumeration if !req.acceptance_criteria.is_empty() => 0.7,
        Source::Enumeration => 0.6,
        Source::Whole if !req.acceptance_criteria.is_empty() => 0.5,
        Source::Whole => 0.3,
    };
    let components: BTreeSet<String> = files
        .iter()
        .map(|p| match p.split_once('/') {
            Some((top, _)) => format!("{top}/"),
            None => p.clone(),
        })
        .collect();
    let code_components: Vec<String> = components.iter().cloned().collect();
    let dir_components = code_components.iter().filter(|c| c.ends_with('/')).count();
    let raw = req.raw.to_lowercase();
    let titles = subtasks
        .iter()
        .map(|s| s.title.clone())
        .collect::<Vec<_>>()
        .join(" / ");
    let (size_reasoning, reasoning) = match lang {
        Language::En => (
            format!(
                "offline estimate: {} subtask(s) from {}, {} target file(s) across {} component(s), dependency depth {}",
                subtasks.len(),
                source.describe(),
                files.len(),
                components.len(),
                depth
            ),
            format!("Decomposed from {}: {titles}.", source.describe()),
        ),
        Language::Ja => (
            format!(
                "オフライン見積もり: {}から {} サブタスク、{} コンポーネントにわたる対象ファイル {} 件、依存の深さ {}",
                source.describe_ja(),
                subtasks.len(),
                components.len(),
                files.len(),
                depth
            ),
            format!("{}から分解した: {titles}。", source.describe_ja()),
        ),
    };

    let mut assumptions = vec![match lang {
        Language::En => format!(
            "Planned offline (strategy simple): subtasks come from {}, target paths from lexical retrieval over {} files.",
            source.describe(),
            ctx.scan.files.len()
        ),
        Language::Ja => format!(
            "オフラインで計画した（strategy simple）: サブタスクは{}から、target_paths は {} ファイルに対する字句検索から導いた。",
            source.describe_ja(),
            ctx.scan.files.len()
        ),
    }];
    if items.iter().any(|i| i.merged > 0) {
        assumptions.push(match lang {
            Language::En => format!(
                "More requirements than max_subtasks ({}): the last step carries the remaining ones.",
                ctx.max_subtasks()
            ),
            Language::Ja => format!(
                "要件が max_subtasks（{}）を超えるため、残りは最後のステップにまとめた。",
                ctx.max_subtasks()
            ),
        });
    }
    if ctx.unit_commands.is_empty() {
        assumptions.push(match lang {
            Language::En => "The repository has no test files, so commands.unit is empty: a test runner would fail on an unchanged tree (pytest exits 5, \"no tests collected\"). A step that adds tests should run them itself.".to_string(),
            Language::Ja => "リポジトリにテストファイルがないため commands.unit は空にした（テストのない状態でテストランナーを実行すると失敗する。pytest は \"no tests collected\" で終了コード 5）。テストを追加するステップはそのテストを自ら実行する。".to_string(),
        });
    }
    let mut risks = Vec::new();
    if !no_match.is_empty() {
        risks.push(format!(
            "No existing file matched {}: the step may need new files; its target paths are a best guess.",
            no_match.iter().map(|t| format!("\"{}\"", truncate_chars(t, 40))).collect::<Vec<_>>().join(", ")
        ));
    }
    if ctx.unit_commands.is_empty() || ctx.scan.files.iter().all(|f| !f.is_test) {
        risks.push(
            "The repository has no tests detected: unit commands may not exercise the change."
                .to_string(),
        );
    }

    let n_files = ctx.scan.files.len();
    let n_tests = ctx.scan.files.iter().filter(|f| f.is_test).count();
    let env = &ctx.selected_environment;
    let repo_facts = match lang {
        Language::En => format!(
            "Repository: {n_files} files ({n_tests} tests); environment {} ({}).",
            env.name, env.reason
        ),
        Language::Ja => format!(
            "リポジトリ: {n_files} ファイル（テスト {n_tests}）、環境 {}（{}）。",
            env.name, env.reason
        ),
    };
    Draft {
        strategy: "simple".to_string(),
        goal_understanding: GoalUnderstanding {
            main_objective: req.title.clone(),
            success_criteria: acs.iter().map(|a| a.then.clone()).collect(),
            constraints: req.constraints.clone(),
            context: format!("{} {}", req.summary.replace('\n', " "), repo_facts),
            extra: Default::default(),
        },
        summary: req.summary.clone(),
        constraints: req.constraints.clone(),
        subtasks,
        acceptance_criteria: acs,
        assumptions,
        risks,
        size: SizeInputs {
            estimated_tokens: tokens,
            estimated_file_count: files.len() as u64,
            complexity_score,
            dependency_depth: depth,
            reasoning: size_reasoning,
            confidence,
        },
        chunking_signals: ChunkingSignals {
            explicit_enumeration: matches!(source, Source::Enumeration) && items.len() >= 2,
            multiple_components: dir_components >= 2,
            user_requested_chunk: contains_any(
                &raw,
                &[
                    "split into",
                    "split this",
                    "split the work",
                    "into steps",
                    "in steps",
                    "step by step",
                    "ステップに分け",
                    "one commit per",
                    "separate commits",
                    "分割して",
                    "ステップごと",
                    "段階的に",
                ],
            ),
            user_requested_single: contains_any(
                &raw,
                &[
                    "single commit",
                    "in one step",
                    "one commit",
                    "in a single step",
                    "一度に",
                    "1コミット",
                    "一つのコミット",
                    "単一のステップ",
                ],
            ),
            atomic_operation: contains_any(
                &raw,
                &[
                    "atomic",
                    "single transaction",
                    "不可分",
                    "アトミック",
                    "一括で",
                ],
            ),
            components: code_components,
        },
        reasoning,
        not_decomposable: None,
        mode: None,
        complexity_score: None,
    }
}

/// The first clause of a requirement, at most 80 characters: the rest stays in the
/// intent.
/// Seed 001 §10.3 `SuggestedTools` of an offline subtask, by its kind, from the
/// built-in tools (docs/tools.md): every step reads and searches; code and test
/// steps edit and run the tests (when there is a test command); docs steps
/// edit.
fn suggested_tools(kind: ItemKind, ctx: &PlanningContext) -> Vec<String> {
    let mut tools = vec!["read_file", "search"];
    match kind {
        ItemKind::Docs => tools.push("write_file"),
        ItemKind::Definition | ItemKind::Implementation | ItemKind::Test => {
            tools.push("apply_patch");
            if !ctx.unit_commands.is_empty() {
                tools.push("run_command");
            }
        }
    }
    tools.into_iter().map(str::to_string).collect()
}

fn short_title(text: &str) -> String {
    let text = crate::request::without_area_tag(text);
    let cut = ["; ", "；", "。", " — ", ": "]
        .iter()
        .filter_map(|sep| text.find(sep))
        .min()
        .unwrap_or(text.len());
    let head = text[..cut].trim();
    truncate_chars(
        if head.chars().count() >= 8 {
            head
        } else {
            text
        },
        80,
    )
}

fn contains_any(text: &str, needles: &[&str]) -> bool {
    needles.iter().any(|n| text.contains(n))
}

/// 1–10 from the number of files, details and risky words.
fn complexity(item: &Item, files: usize) -> u8 {
    let mut c = 2 + files.min(3) + item.details.len().min(2);
    let t = item.intent().to_lowercase();
    if contains_any(
        &t,
        &[
            "refactor",
            "migrat",
            "rewrite",
            "redesign",
            "リファクタ",
            "移行",
            "再設計",
            "互換",
        ],
    ) {
        c += 2;
    }
    if item.merged > 0 {
        c += item.merged.min(3);
    }
    c.clamp(1, 10) as u8
}

/// Seed 001 §10.3 / §10.8: each subtask's scope, and the other subtasks' subjects as
/// its out-of-scope, so two steps never do the same work.
fn boundaries(req: &crate::request::Request, items: &[Item], subtasks: &mut [DraftSubtask]) {
    let titles: Vec<String> = items.iter().map(|i| truncate_chars(&i.title, 60)).collect();
    for (i, s) in subtasks.iter_mut().enumerate() {
        let mut in_scope = vec![truncate_chars(&items[i].title, 60)];
        in_scope.extend(s.target_paths.iter().cloned());
        let mut out: Vec<String> = titles
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, t)| t.clone())
            .collect();
        out.extend(req.out_of_scope.iter().cloned());
        s.boundaries = Some(Boundaries {
            in_scope,
            out_of_scope: out,
        });
    }
}

/// Each request criterion goes to the subtask it shares the most distinctive topic
/// tokens with (a token shared by `k` subtasks weighs `1/k`); the first on ties, the
/// last subtask when nothing is shared.
fn link_criteria(
    acs: &[dandori_plan::AcceptanceCriterion],
    items: &[Item],
    subtasks: &mut [DraftSubtask],
) {
    if subtasks.is_empty() {
        return;
    }
    let item_tokens: Vec<BTreeSet<String>> = items
        .iter()
        .map(|i| crate::text::topic_tokens(&i.intent()))
        .collect();
    let mut df: std::collections::BTreeMap<&str, usize> = Default::default();
    for toks in &item_tokens {
        for t in toks {
            *df.entry(t.as_str()).or_default() += 1;
        }
    }
    for ac in acs {
        let ac_text = format!("{} {} {}", ac.given, ac.when, ac.then);
        let ac_tokens = crate::text::topic_tokens(&ac_text);
        let ac_lower = ac_text.to_lowercase();
        let mut best = (0.0f64, subtasks.len() - 1);
        for (i, toks) in item_tokens.iter().enumerate() {
            let mut score: f64 = toks
                .intersection(&ac_tokens)
                .map(|t| 1.0 / df.get(t.as_str()).copied().unwrap_or(1) as f64)
                .sum();
            // A file the criterion names (`README`, `src/greet.txt`) that only this
            // subtask targets decides: the criterion is about that file.
            score += subtasks[i]
                .target_paths
                .iter()
                .filter(|p| names_path(&ac_lower, p))
                .filter(|p| {
                    subtasks
                        .iter()
                        .filter(|o| o.target_paths.contains(p))
                        .count()
                        == 1
                })
                .count() as f64
                * 2.0;
            if score > best.0 + 1e-9 {
                best = (score, i);
            }
        }
        let s = &mut subtasks[best.1];
        s.links_to_ac.push(ac.id.clone());
        s.success_criteria.push(ac.then.clone());
    }
}

/// Whether lower-cased `text` names `path`: the whole path, or its file name
/// (with or without its extension, at least four characters, as a word).
fn names_path(text: &str, path: &str) -> bool {
    let p = path.to_lowercase();
    if text.contains(&p) {
        return true;
    }
    let name = p.rsplit('/').next().unwrap_or(&p);
    let stem = name.split('.').next().unwrap_or(name);
    [name, stem].iter().filter(|n| n.len() >= 4).any(|n| {
        text.match_indices(*n).any(|(i, _)| {
            let before = text[..i].chars().next_back();
            let after = text[i + n.len()..].chars().next();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    })
}

/// Collapses any draft into one subtask (fail-closed, or chunking decided "no"):
/// the union of targets and links, all titles in the intent.
pub fn single_step_draft(ctx: &PlanningContext, d: &Draft) -> Draft {
    let mut out = d.clone();
    out.subtasks = vec![merge_all(ctx, &d.subtasks)];
    out
}

pub fn merge_all(ctx: &PlanningContext, subtasks: &[DraftSubtask]) -> DraftSubtask {
    let uniq = |v: &mut Vec<String>, add: &[String]| {
        for a in add {
            if !v.contains(a) {
                v.push(a.clone());
            }
        }
    };
    let mut m = DraftSubtask {
        key: "task_1".to_string(),
        title: truncate_chars(&ctx.request.title, 80),
        intent: String::new(),
        target_paths: Vec::new(),
        code_files_hint: Vec::new(),
        context_files: Vec::new(),
        produces: Vec::new(),
        consumes: Vec::new(),
        boundaries: None,
        depends_on: Vec::new(),
        complexity: 1,
        estimated_lines: 0,
        links_to_ac: Vec::new(),
        success_criteria: Vec::new(),
        required_tools: Vec::new(),
        suggested_tools: Vec::new(),
        suggested_persona: None,
        test_first: false,
        actions: Vec::new(),
    };
    let mut intents = Vec::new();
    for s in subtasks {
        intents.push(s.title.clone());
        uniq(&mut m.target_paths, &s.target_paths);
        uniq(&mut m.code_files_hint, &s.code_files_hint);
        uniq(&mut m.context_files, &s.context_files);
        uniq(&mut m.produces, &s.produces);
        uniq(&mut m.links_to_ac, &s.links_to_ac);
        uniq(&mut m.success_criteria, &s.success_criteria);
        uniq(&mut m.suggested_tools, &s.suggested_tools);
        if m.suggested_persona.is_none() {
            m.suggested_persona = s.suggested_persona.clone();
        }
        uniq(&mut m.required_tools, &s.required_tools);
        // The planner's actions stay, in order, now for the merged step.
        m.actions.extend(s.actions.iter().cloned());
        m.complexity = m.complexity.max(s.complexity);
        m.estimated_lines += s.estimated_lines;
    }
    // What the merged step produces itself is not an input any more.
    m.consumes = subtasks
        .iter()
        .flat_map(|s| s.consumes.iter())
        .filter(|c| !m.produces.contains(c))
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if m.target_paths.is_empty() {
        m.target_paths = ctx.hits.iter().take(5).map(|h| h.path.clone()).collect();
    }
    if m.target_paths.is_empty() {
        m.target_paths.push(targets::fallback_target(ctx));
    }
    m.intent = if intents.len() <= 1 {
        ctx.request.summary.replace('\n', " ")
    } else {
        intents.join("; ")
    };
    let mut in_scope = vec![m.title.clone()];
    in_scope.extend(m.target_paths.iter().cloned());
    m.boundaries = Some(Boundaries {
        in_scope,
        out_of_scope: ctx.request.out_of_scope.clone(),
    });
    m
}

#[cfg(test)]
mod link_tests {
    use super::{names_path, short_title};

    #[test]
    fn an_area_tag_is_not_the_title() {
        assert_eq!(
            short_title("skipping: --runxfail breaks pytest.mark.skip location reporting"),
            "--runxfail breaks pytest.mark.skip location reporting"
        );
        assert_eq!(
            short_title("fix(parser): accept trailing commas in arrays"),
            "accept trailing commas in arrays"
        );
        assert_eq!(
            short_title("docs/api: document the limits"),
            "document the limits"
        );
        // Prose with a colon keeps its head.
        assert_eq!(
            short_title("Add retries to the client: three attempts with backoff"),
            "Add retries to the client"
        );
        assert_eq!(short_title("Note: x"), "Note: x");
    }

    #[test]
    fn a_criterion_names_a_file_by_path_or_name() {
        assert!(names_path("given the readme, when it is read", "README.md"));
        assert!(names_path("when src/greet.txt is read", "src/greet.txt"));
        assert!(!names_path("it mentions the greeting", "src/greet.txt"));
        assert!(!names_path("the readme", "docs/x.md"));
    }
}
