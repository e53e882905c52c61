//! Where a subtask works: paths it names, then a retrieval query of its own text.
//! Implementation and definition items target the best matching source files; test
//! items the tests mapped to those sources (or matching tests, or the test
//! directory); docs items the README / docs.

use std::collections::BTreeSet;

use crate::context::PlanningContext;
use crate::gathering::{Hit, has_dir, has_file, readme_path};

use super::decomposition::{Item, ItemKind};

pub struct Targets {
    pub target_paths: Vec<String>,
    pub code_files_hint: Vec<String>,
    pub context_files: Vec<String>,
    /// False when nothing in the repository matched (targets are a guess).
    pub matched: bool,
}

/// Files a step should change at most, from retrieval alone.
const MAX_RETRIEVED_TARGETS: usize = 3;
const MAX_HINTS: usize = 5;
/// Hits scoring below this share of the best hit are noise.
const RELATIVE_CUTOFF: f32 = 0.4;

pub fn for_item(
    ctx: &PlanningContext,
    modules: &ModuleNames,
    item: &Item,
    has_test_item: bool,
) -> Targets {
    let text = item.intent();
    let mut targets: Vec<String> = Vec::new();
    let push = |v: &mut Vec<String>, p: String| {
        if !v.contains(&p) {
            v.push(p);
        }
    };

    let mut hits: Vec<Hit> = ctx
        .search(&text, 16)
        .into_iter()
        .filter(|h| !is_request_file(ctx, &h.path))
        .collect();
    // Route / endpoint / CLI-flag work happens where routes and argument parsers are.
    if mentions_entry_point(&text) {
        for h in hits.iter_mut() {
            if is_entry_point_file(&h.path) {
                h.score *= ENTRY_POINT_BOOST;
            }
        }
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.path.cmp(&b.path))
        });
    }

    // Paths the item names: existing files and dirs, a file name that exists deeper
    // in the tree (`calc.py` → `src/calc.py`), or a new file the item asks to create.
    // The request as one item names its paths anywhere in its summary.
    let full = item.full_text();
    for p in crate::text::path_like_tokens(&full) {
        // A test id names its file: `tests/test_x.py::test_y`.
        let p = p.split("::").next().unwrap_or(&p).to_string();
        if let Some(resolved) = resolve_mentioned(ctx, &hits, &p, creation(&full)) {
            push(&mut targets, resolved);
        }
    }
    let named = !targets.is_empty();
    let is_doc = |p: &str| {
        let l = p.to_lowercase();
        l.ends_with(".md") || l.ends_with(".rst") || l.ends_with(".txt") || l.starts_with("docs/")
    };
    // Files that define an identifier the item names, or whose name the item says
    // ("the store" → store.py), come first; then retrieval order.
    let idents = crate::text::backticked_identifiers(&text);
    let words = crate::text::topic_tokens(&text);
    let rank = |h: &Hit| -> (bool, bool) {
        let defines = !idents.is_empty() && defines_any(ctx, &h.path, &idents);
        let stem = h.path.rsplit('/').next().unwrap_or(&h.path);
        let stem = stem.split('.').next().unwrap_or(stem);
        let named = crate::text::topic_tokens(stem)
            .iter()
            .any(|t| words.contains(t));
        (!defines, !named)
    };
    // Hits of the kind this item changes; the cutoff is relative to the best of them.
    let eligible = |keep: &dyn Fn(&str) -> bool| -> Vec<String> {
        let non_empty = |p: &str| ctx.scan.file(p).is_some_and(|f| f.size > 0);
        let mut kept: Vec<&Hit> = hits
            .iter()
            .filter(|h| keep(&h.path) && non_empty(&h.path))
            .collect();
        let top = kept.first().map_or(0.0, |h| h.score);
        kept.retain(|h| h.score > 0.0 && h.score >= top * RELATIVE_CUTOFF);
        kept.sort_by_key(|h| rank(h));
        kept.into_iter().map(|h| h.path.clone()).collect()
    };

    let retrieved: Vec<String> = match item.kind {
        ItemKind::Test => {
            // Tests of the code the request is about, then matching tests.
            let mut t: Vec<String> = Vec::new();
            for h in ctx
                .hits
                .iter()
                .filter(|h| {
                    !is_test(ctx, &h.path) && !is_doc(&h.path) && !is_request_file(ctx, &h.path)
                })
                .take(3)
            {
                for test in ctx.scan.tests_for(&h.path) {
                    push(&mut t, test.to_string());
                }
            }
            for p in eligible(&|p| is_test(ctx, p)) {
                push(&mut t, p);
            }
            if t.is_empty()
                && let Some(dir) = test_dir(ctx)
            {
                t.push(dir);
            }
            t.into_iter().take(MAX_RETRIEVED_TARGETS).collect()
        }
        ItemKind::Docs => {
            let mut t = eligible(&|p| is_doc(p));
            if let Some(r) = readme_path(&ctx.scan)
                && !t.contains(&r)
                && (t.is_empty() || names_readme(&item.full_text()))
            {
                t.insert(0, r);
            }
            t.truncate(MAX_RETRIEVED_TARGETS);
            t
        }
        ItemKind::Definition | ItemKind::Implementation => {
            // A module the item names by its file name ("the store" → store.py) even
            // when retrieval ranks it low, then files defining a named identifier,
            // then the retrieval cut of `dandori_repo::target_paths_for` (the one
            // docs/retrieval.md measures) over this item's own query.
            let mut t: Vec<String> = modules.named(&words);
            let code: Vec<Hit> = hits
                .iter()
                .filter(|h| {
                    !is_test(ctx, &h.path)
                        && !is_doc(&h.path)
                        && ctx.scan.file(&h.path).is_some_and(|f| f.size > 0)
                })
                .cloned()
                .collect();
            let mut cut: Vec<&Hit> = dandori_repo::target_paths_for(&code)
                .iter()
                .filter_map(|p| code.iter().find(|h| &h.path == p))
                .collect();
            cut.sort_by_key(|h| rank(h));
            // An endpoint or flag lives in the file that defines the routes or parses
            // the arguments, even when the lexical match prefers the model it reads.
            if mentions_entry_point(&text)
                && !cut.iter().any(|h| is_entry_point_file(&h.path))
                && let Some(entry) = code
                    .iter()
                    .find(|h| h.score > 0.0 && is_entry_point_file(&h.path))
            {
                cut.insert(0, entry);
            }
            for h in cut {
                push(&mut t, h.path.clone());
            }
            t.truncate(dandori_repo::retrieval::TARGET_PATHS_MAX);
            t
        }
    };
    // A code item that names only tests or documentation ("`tests/test_x.py`
    // fails: …", "… although the README shows it") still changes code: the named
    // files say where the symptom is, retrieval where the fix is.
    let names_code = targets
        .iter()
        .any(|p| !has_dir(&ctx.scan, p.trim_end_matches('/')) && !is_test(ctx, p) && !is_doc(p));
    let code_item = matches!(item.kind, ItemKind::Implementation | ItemKind::Definition);
    if !named || (code_item && !names_code) {
        for r in retrieved
            .iter()
            .take(dandori_repo::retrieval::TARGET_PATHS_MAX)
        {
            push(&mut targets, r.clone());
        }
    }
    if code_item {
        for p in implied_targets(ctx, &item.full_text(), &targets) {
            push(&mut targets, p);
        }
        // A unit that documents its own change ("…, and document it in the
        // README") also targets the documentation.
        // (A README the words name is added below, for every item.)
        let full = item.full_text();
        let doc = if names_readme(&full) {
            None
        } else if super::decomposition::mentions_docs(&full) && !targets.iter().any(|p| is_doc(p)) {
            eligible(&|p| is_doc(p))
                .into_iter()
                .next()
                .or_else(|| readme_path(&ctx.scan))
        } else {
            None
        };
        if let Some(doc) = doc {
            push(&mut targets, doc);
        }
    }
    // A README the words name is that file, whatever else the item names or
    // retrieval found (`requirements-dev.txt`, a documentation-like file).
    if names_readme(&item.full_text())
        && let Some(r) = readme_path(&ctx.scan)
        && !targets.contains(&r)
    {
        push(&mut targets, r);
    }
    // Without a separate test item, an implementation step also updates its tests.
    if !has_test_item && matches!(item.kind, ItemKind::Implementation | ItemKind::Definition) {
        let sources: Vec<String> = targets.clone();
        for s in sources {
            for t in ctx.scan.tests_for(&s).into_iter().take(1) {
                push(&mut targets, t.to_string());
            }
        }
    }
    let matched = !targets.is_empty();
    if targets.is_empty() {
        // Nothing matched: the files most relevant to the request as a whole.
        for h in ctx
            .hits
            .iter()
            .filter(|h| !is_test(ctx, &h.path) && !is_request_file(ctx, &h.path))
            .take(2)
        {
            push(&mut targets, h.path.clone());
        }
    }
    if targets.is_empty() {
        targets.push(fallback_target(ctx));
    }

    let target_set: BTreeSet<&String> = targets.iter().collect();
    let code_files_hint: Vec<String> = hits
        .iter()
        .map(|h| h.path.clone())
        .filter(|p| !target_set.contains(p))
        .take(MAX_HINTS)
        .collect();
    let mut context_files = Vec::new();
    if let Some(r) = readme_path(&ctx.scan)
        && !targets.contains(&r)
    {
        context_files.push(r);
    }
    Targets {
        target_paths: targets,
        code_files_hint,
        context_files,
        matched,
    }
}

/// True when the file at `path` defines one of `idents` (a class, function, type,
/// struct, enum, interface or constant of that name, in the common languages).
pub(crate) fn defines_any(ctx: &PlanningContext, path: &str, idents: &[String]) -> bool {
    let Ok(content) = std::fs::read_to_string(ctx.scan.root.join(path)) else {
        return false;
    };
    const KEYWORDS: &[&str] = &[
        "class",
        "def",
        "fn",
        "func",
        "function",
        "struct",
        "enum",
        "interface",
        "type",
        "trait",
        "const",
        "let",
        "var",
    ];
    content.lines().any(|line| {
        let mut words = line.split(|c: char| !(c.is_alphanumeric() || c == '_'));
        let mut prev = "";
        for w in words.by_ref() {
            if w.is_empty() {
                continue;
            }
            if KEYWORDS.contains(&prev) && idents.iter().any(|i| i == w) {
                return true;
            }
            prev = w;
        }
        false
    })
}

/// Source files by lower-cased file stem (`store` → `todo/store.py`), built once
/// per draft.
pub struct ModuleNames(std::collections::HashMap<String, Vec<String>>);

impl ModuleNames {
    pub fn build(ctx: &PlanningContext) -> ModuleNames {
        let mut map: std::collections::HashMap<String, Vec<String>> = Default::default();
        for f in ctx.scan.files.iter().filter(|f| !f.is_test) {
            let name = f.path.rsplit('/').next().unwrap_or(&f.path);
            let (stem, ext) = name.rsplit_once('.').unwrap_or((name, ""));
            if stem.len() >= 4 && !matches!(ext, "md" | "rst" | "txt" | "json" | "lock") {
                map.entry(stem.to_ascii_lowercase())
                    .or_default()
                    .push(f.path.clone());
            }
        }
        ModuleNames(map)
    }

    /// Files whose stem is one of `words`, when at most two files share it (a
    /// common stem such as `utils` says nothing).
    fn named(&self, words: &BTreeSet<String>) -> Vec<String> {
        words
            .iter()
            .filter_map(|w| self.0.get(w.as_str()))
            .filter(|paths| paths.len() <= 2)
            .flatten()
            .cloned()
            .collect()
    }
}

/// How much a route / argument-parser file's score grows when the item is about an
/// endpoint, a route or a command-line flag.
const ENTRY_POINT_BOOST: f32 = 1.6;

/// The item is about an HTTP route, an API endpoint or a command-line flag.
pub(crate) fn mentions_entry_point(text: &str) -> bool {
    let l = text.to_lowercase();
    const WORDS: &[&str] = &[
        "endpoint",
        "endpoints",
        "route",
        "routes",
        "api",
        "apis",
        "url",
        "urls",
        "http",
        "cli",
        "flag",
        "flags",
        "option",
        "options",
        "argument",
        "arguments",
    ];
    const PHRASES: &[&str] = &[
        "command-line",
        "command line",
        "get /",
        "post /",
        "put /",
        "patch /",
        "delete /",
        "エンドポイント",
        "ルート",
        "オプション",
        "引数",
        "コマンドライン",
    ];
    l.split(|c: char| !c.is_alphanumeric())
        .any(|w| WORDS.contains(&w))
        || PHRASES.iter().any(|p| l.contains(p))
        || l.split_whitespace().any(|w| {
            let w = w.trim_matches(|c: char| !(c.is_alphanumeric() || "-?=".contains(c)));
            // `--port`, `?sort=priority`
            w.starts_with("--") || (w.starts_with('?') && w.contains('='))
        })
}

/// Files that conventionally define routes or parse arguments: a path component
/// or file stem such as `api`, `routes`, `views`, `server`, `cli`, `main`, `app`.
pub(crate) fn is_entry_point_file(path: &str) -> bool {
    const NAMES: &[&str] = &[
        "api",
        "apis",
        "routes",
        "router",
        "routers",
        "route",
        "views",
        "view",
        "urls",
        "server",
        "cli",
        "main",
        "app",
        "handlers",
        "controllers",
        "commands",
        "__main__",
    ];
    path.to_lowercase().split('/').any(|part| {
        let stem = part.split('.').next().unwrap_or(part);
        NAMES.contains(&stem)
    })
}

/// Whether the item may name files that do not exist yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Creation {
    /// No word of making: a named path that does not exist is still a new file
    /// when its directory exists below the root (`todo/storage.py` when `todo/`
    /// does; seed 003 §5: the file a request names is where its work goes).
    No,
    /// A new file in a directory that exists ("add a CHANGELOG.md file").
    InExistingDir,
    /// A path's new place, directories included ("move a.py to src/pkg/a.py").
    AnyDir,
}

/// What the item asks to create: a new file, or new places for files it moves,
/// renames, copies, splits or extracts.
fn creation(text: &str) -> Creation {
    if super::decomposition::mentions(text, super::decomposition::RELOCATE_WORDS) {
        Creation::AnyDir
    } else if asks_to_create(text) {
        Creation::InExistingDir
    } else {
        Creation::No
    }
}

/// The item asks for a new file.
fn asks_to_create(text: &str) -> bool {
    let l = text.to_lowercase();
    const PHRASES: &[&str] = &[
        "new file",
        "new module",
        "add a new",
        "新規作成",
        "新規",
        "作成",
        "追加",
        "新しいファイル",
        "新建",
        "创建",
        "添加",
    ];
    // "Add a CHANGELOG.md file", "write docs/usage.md": a verb of making, as a word.
    const VERBS: &[&str] = &[
        "create",
        "add",
        "write",
        "introduce",
        "new",
        "generate",
        "scaffold",
    ];
    PHRASES.iter().any(|w| l.contains(w))
        || l.split(|c: char| !c.is_alphanumeric())
            .any(|w| VERBS.contains(&w) || w.starts_with("creat"))
}

/// A mentioned path as the repository has it: itself when it exists; else the one
/// listed file whose path ends with it (`calc.py` → `src/calc.py`), or the best
/// ranked of several by retrieval (`hits`), or the first by path; else the path
/// itself as a new file: in an existing directory below the root, or also at the
/// root when the item asks to create it, or anywhere in the repository for a
/// move, rename or copy.
pub(crate) fn resolve_mentioned(
    ctx: &PlanningContext,
    hits: &[Hit],
    p: &str,
    create: Creation,
) -> Option<String> {
    if has_file(&ctx.scan, p) || has_dir(&ctx.scan, p) {
        return Some(p.to_string());
    }
    let suffix = format!("/{}", p.trim_end_matches('/'));
    let candidates: Vec<&str> = ctx
        .scan
        .files
        .iter()
        .map(|f| f.path.as_str())
        .filter(|f| f.ends_with(&suffix))
        .collect();
    match candidates.as_slice() {
        [one] => return Some((*one).to_string()),
        [first, ..] => {
            let best = hits
                .iter()
                .find(|h| candidates.contains(&h.path.as_str()))
                .map_or(*first, |h| h.path.as_str());
            return Some(best.to_string());
        }
        [] => {}
    }
    let dir = p.rsplit_once('/').map_or("", |(d, _)| d);
    // A new file at the root or in an existing directory; never a path that climbs
    // out of the repository.
    let safe = !p.starts_with('/') && !p.split('/').any(|c| c == "..");
    let place = match create {
        Creation::No => !dir.is_empty() && has_dir(&ctx.scan, dir),
        Creation::InExistingDir => dir.is_empty() || has_dir(&ctx.scan, dir),
        Creation::AnyDir => true,
    };
    (safe && place).then(|| p.to_string())
}

fn is_test(ctx: &PlanningContext, path: &str) -> bool {
    ctx.scan.file(path).is_some_and(|f| f.is_test)
}

/// Files a code item changes although its words do not rank them (issue 26):
///
/// * the module `python -m pkg` runs, `pkg/__main__.py` (created when missing),
///   when `pkg/__init__.py` exists;
/// * the package's `__init__.py` when the item exports something ("export it
///   from the package", "`__all__`", "importable from `pkg`", "`from pkg import
///   x` raises ImportError", "パッケージから公開", "import できる"): the package
///   of `from pkg import` / `import pkg`, or JavaScript's entry point
///   (package.json `main`, else `index.js`) for JS/TS targets, the crate root
///   `src/lib.rs` for Rust targets,
///   else the package of the first targeted module;
/// * the file that parses the command line when the item is about a flag,
///   option or subcommand and no target does (a file using argparse, click,
///   clap, commander, yargs, Go's `flag`, or `os.Args` / `process.argv` /
///   `sys.argv`), the best ranked by retrieval when there are several.
fn implied_targets(ctx: &PlanningContext, text: &str, targets: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.' || c == '-'))
        .filter(|w| !w.is_empty())
        .collect();
    let package_dir = |name: &str| -> Option<String> {
        let name = name.trim_matches('.');
        if name.is_empty() {
            return None;
        }
        let rel = name.replace('.', "/");
        ctx.scan
            .files
            .iter()
            .map(|f| f.path.as_str())
            .find(|p| {
                p.strip_suffix("/__init__.py")
                    .is_some_and(|d| d == rel || d.ends_with(&format!("/{rel}")))
            })
            .map(|p| p.trim_end_matches("__init__.py").to_string())
    };
    // `python -m pkg`
    for w in words.windows(3) {
        if w[0].starts_with("python")
            && w[1] == "-m"
            && let Some(dir) = package_dir(w[2])
        {
            out.push(format!("{dir}__main__.py"));
        }
    }
    // Exports.
    const EXPORT: &[&str] = &[
        "export",
        "exports",
        "exported",
        "re-export",
        "re-exported",
        "reexport",
        "__all__",
        "importable",
        "importerror",
    ];
    // Japanese: "エクスポート", "公開する", "import できる" / "インポートできる".
    const EXPORT_JA: &[&str] = &[
        "エクスポート",
        "公開",
        "インポートでき",
        "importでき",
        "import でき",
    ];
    if words.iter().any(|w| EXPORT.contains(w)) || EXPORT_JA.iter().any(|m| lower.contains(m)) {
        let imported = words
            .windows(2)
            .find(|w| w[0] == "from" || w[0] == "import")
            .and_then(|w| package_dir(w[1]));
        let of_target = || {
            targets.iter().find_map(|t| {
                let (dir, _) = t.rsplit_once('/')?;
                let init = format!("{dir}/__init__.py");
                has_file(&ctx.scan, &init).then(|| format!("{dir}/"))
            })
        };
        if let Some(dir) = imported.or_else(of_target) {
            let init = format!("{dir}__init__.py");
            if has_file(&ctx.scan, &init) {
                out.push(init);
            }
        }
        // JavaScript / TypeScript: the package's entry point (package.json's
        // `main`, else `index.js` / `index.ts`); Rust: the crate root.
        let code = |exts: &[&str]| targets.iter().any(|t| exts.iter().any(|e| t.ends_with(e)));
        if code(&[".js", ".mjs", ".cjs", ".ts", ".mts", ".cts"]) {
            let main = std::fs::read_to_string(ctx.repo_root.join("package.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .and_then(|v| v.get("main")?.as_str().map(str::to_string))
                .map(|m| m.trim_start_matches("./").to_string());
            let entry = main
                .into_iter()
                .chain(["index.js", "index.ts", "src/index.js", "src/index.ts"].map(String::from))
                .find(|p| has_file(&ctx.scan, p));
            out.extend(entry);
        }
        if code(&[".rs"]) {
            out.extend(
                ["src/lib.rs"]
                    .into_iter()
                    .filter(|p| has_file(&ctx.scan, p))
                    .map(String::from),
            );
        }
    }
    // A named method that delegates: `Catalogue.find` calls `b.matches(text)` and
    // the request speaks of "matching" — the behaviour lives in the callee.
    for p in delegated_definitions(ctx, text, targets) {
        out.push(p);
    }
    // Command-line flags and subcommands.
    let cli = words.iter().any(|w| {
        (w.starts_with("--") && w.len() > 2)
            || matches!(
                *w,
                "flag" | "flags" | "option" | "options" | "subcommand" | "subcommands" | "cli"
            )
    }) || lower.contains("command line")
        || lower.contains("command-line");
    if cli && !targets.iter().any(|t| parses_arguments(ctx, t)) {
        let mut parsers: Vec<&str> = ctx
            .scan
            .files
            .iter()
            .filter(|f| !f.is_test && parses_arguments(ctx, &f.path))
            .map(|f| f.path.as_str())
            .collect();
        let rank = |p: &str| {
            ctx.hits
                .iter()
                .position(|h| h.path == p)
                .unwrap_or(usize::MAX)
        };
        parsers.sort_by_key(|p| (rank(p), p.to_string()));
        if let Some(p) = parsers.first() {
            out.push((*p).to_string());
        }
    }
    out
}

/// Files defining a function that a method the item names (`Type.method`,
/// `Type::method`) calls, when a word of the item shares its first five letters
/// with the callee's name ("matching" → `matches`) and another file defines it.
fn delegated_definitions(ctx: &PlanningContext, text: &str, targets: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let words = crate::text::topic_tokens(text);
    let stem = |w: &str| -> Option<String> {
        (w.chars().count() >= 5).then(|| w.chars().take(5).collect::<String>().to_lowercase())
    };
    let stems: BTreeSet<String> = words.iter().filter_map(|w| stem(w)).collect();
    for ident in crate::text::backticked_identifiers(text) {
        let Some((_, method)) = ident.rsplit_once(['.', ':']) else {
            continue;
        };
        if method.is_empty() {
            continue;
        }
        for file in targets {
            let Ok(content) = std::fs::read_to_string(ctx.scan.root.join(file)) else {
                continue;
            };
            for callee in called_in_body(&content, method) {
                if callee == method || !stem(&callee).is_some_and(|s| stems.contains(&s)) {
                    continue;
                }
                let wanted = [callee.clone()];
                if let Some(def) = ctx.scan.files.iter().find(|f| {
                    !f.is_test
                        && f.path != *file
                        && !targets.contains(&f.path)
                        && f.language.is_some()
                        && defines_any(ctx, &f.path, &wanted)
                }) && !out.contains(&def.path)
                {
                    out.push(def.path.clone());
                }
            }
        }
    }
    out
}

/// Names called (`name(`) in the body of the function `name` defines in
/// `content`: the lines after its definition that are indented deeper than it
/// (or, for brace languages, up to 40 lines), at most 40.
fn called_in_body(content: &str, name: &str) -> Vec<String> {
    let lines: Vec<&str> = content.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let Some(start) = lines.iter().position(|l| {
        let t = l.trim_start();
        ["def ", "fn ", "func ", "function ", "pub fn ", "async def "]
            .iter()
            .any(|k| t.starts_with(k))
            && t.contains(&format!("{name}("))
    }) else {
        return Vec::new();
    };
    let base = indent(lines[start]);
    let mut out: Vec<String> = Vec::new();
    for l in lines.iter().skip(start + 1).take(40) {
        if !l.trim().is_empty() && indent(l) <= base {
            break;
        }
        let chars: Vec<char> = l.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            if chars[i].is_alphabetic() || chars[i] == '_' {
                let from = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                if chars.get(i) == Some(&'(') {
                    let w: String = chars[from..i].iter().collect();
                    if !out.contains(&w) {
                        out.push(w);
                    }
                }
            } else {
                i += 1;
            }
        }
    }
    out
}

/// The file parses the command line.
fn parses_arguments(ctx: &PlanningContext, path: &str) -> bool {
    const MARKERS: &[&str] = &[
        "import argparse",
        "argparse.",
        "import click",
        "@click.",
        "sys.argv",
        "use clap",
        "clap::",
        "std::env::args",
        "\"flag\"",
        "flag.String(",
        "flag.Int(",
        "flag.Bool(",
        "os.Args",
        "process.argv",
        "commander",
        "yargs",
    ];
    let code = ctx
        .scan
        .file(path)
        .is_some_and(|f| f.language.is_some() && !f.is_binary);
    code && std::fs::read_to_string(ctx.scan.root.join(path))
        .is_ok_and(|c| MARKERS.iter().any(|m| c.contains(m)))
}

/// The request itself and its siblings (`requests/*.md`) describe work; they are
/// not where the work happens.
fn is_request_file(ctx: &PlanningContext, path: &str) -> bool {
    // `requests/*.md` is where dandori's requests live, whichever one this run reads.
    if path == ctx.request_path || (path.starts_with("requests/") && path.ends_with(".md")) {
        return true;
    }
    match ctx.request_path.rsplit_once('/') {
        Some((dir, _))
            if !ctx.request_path.starts_with('/') && !ctx.request_path.starts_with(".dandori") =>
        {
            path.starts_with(&format!("{dir}/"))
        }
        _ => false,
    }
}

/// The directory most tests live in (`tests/`).
pub(crate) fn test_dir(ctx: &PlanningContext) -> Option<String> {
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for f in ctx.scan.files.iter().filter(|f| f.is_test) {
        if let Some((d, _)) = f.path.rsplit_once('/') {
            *counts.entry(format!("{d}/")).or_default() += 1;
        }
    }
    counts
        .into_iter()
        .max_by_key(|(d, n)| (*n, std::cmp::Reverse(d.clone())))
        .map(|(d, _)| d)
}

/// The words name the README ("the README", "README's", `README.md`).
fn names_readme(text: &str) -> bool {
    text.to_lowercase().contains("readme")
}

/// Where a step works when nothing in the repository matched its text: the README
/// (the request is then about the project as a whole), else the first source file,
/// else the first file; `.` only for an empty repository.
pub(crate) fn fallback_target(ctx: &PlanningContext) -> String {
    readme_path(&ctx.scan)
        .or_else(|| {
            ctx.scan
                .files
                .iter()
                .find(|f| !f.is_test && !f.is_binary && f.language.is_some())
                .or_else(|| ctx.scan.files.iter().find(|f| !f.is_binary))
                .map(|f| f.path.clone())
        })
        .unwrap_or_else(|| ".".to_string())
}
