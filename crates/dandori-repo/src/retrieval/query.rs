//! The query side: what in a request or an issue points at files. Mentioned file
//! paths, dotted module paths, stack-trace frames, code in backticks and
//! identifier-shaped words are pulled out so the ranking can weigh them above
//! ordinary words.

use std::sync::LazyLock;

use regex::Regex;
use rustc_hash::FxHashMap;

use super::tokenize::{TokenOptions, tokenize};

/// What a query text mentions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueryAnalysis {
    /// Token → weight.
    pub terms: Vec<(String, f32)>,
    /// Identifier-shaped names (class, function, attribute), as written.
    pub identifiers: Vec<String>,
    /// The first line (the title), as written: names in it say what the request
    /// is about more than the names of its example.
    pub title: String,
    /// Path-shaped mentions (`src/a/b.py`, `b.py`).
    pub paths: Vec<String>,
    /// Dotted module paths (`django.db.models.query`).
    pub modules: Vec<String>,
    /// Files of stack-trace frames, innermost last, with the frame's function.
    pub frames: Vec<(String, Option<String>)>,
    /// Exact messages the request quotes (error and warning text, quoted
    /// strings): the file that emits one is strong evidence.
    pub messages: Vec<String>,
    /// The whole text normalised for literal matching (lowercase, whitespace
    /// collapsed) and its word positions with their two-word keys
    /// ([`super::literals`]).
    pub normalised: String,
    pub literal_keys: Vec<(usize, String)>,
    /// The request is about tests themselves.
    pub about_tests: bool,
    /// The request is about documentation.
    pub about_docs: bool,
    /// The request is about how something is printed or rendered (`repr`,
    /// "pretty printing", "LaTeX output"): the printer is the fix site.
    pub about_rendering: bool,
    /// Adjacent prose words joined (`data set` → `dataset`): a one-word file
    /// name the text writes as two words.
    pub compounds: Vec<String>,
}

fn re(pattern: &str) -> Option<Regex> {
    Regex::new(pattern).ok()
}

static FRAME_PY: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r#"File "([^"]+)", line \d+(?:, in ([A-Za-z_][A-Za-z0-9_]*))?"#));
/// `at foo (src/a.js:10:5)`, `src/a.go:12`, `a/b.rs:3:1`.
static FRAME_COLON: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r"([A-Za-z0-9_.\-/\\]+\.(?:py|js|mjs|cjs|ts|tsx|jsx|go|rs|java|kt|rb|php|cs|c|cc|cpp|h|hpp|swift|scala)):\d+",
    )
});
static PATH: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r"(?:[A-Za-z0-9_.\-]+/)*[A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*\.(?:py|pyi|pyx|js|mjs|cjs|ts|tsx|jsx|go|rs|java|kt|rb|php|cs|c|cc|cpp|h|hpp|swift|scala|vue|svelte|html|css|scss|json|ya?ml|toml|md|rst|txt|cfg|ini|sh|sql|xml|proto)\b",
    )
});
static SLASH_PATH: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r"\b[A-Za-z0-9_\-]+(?:/[A-Za-z0-9_\-]+){1,}/?"));
static DOTTED: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r"\b[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+"));
static FENCE: LazyLock<Option<Regex>> = LazyLock::new(|| re(r"(?s)```.*?```"));
/// HTML comments: issue-template instructions GitHub does not render.
static HTML_COMMENT: LazyLock<Option<Regex>> = LazyLock::new(|| re(r"(?s)<!--.*?-->"));
/// The traceback header line, which the code of a traceback formatter emits
/// too (not evidence of the failing code).
static TRACEBACK_HEADER: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r"(?m)^.*Traceback \(most recent call last\):?.*$"));
static BACKTICK: LazyLock<Option<Regex>> = LazyLock::new(|| re(r"(?s)```.*?```|`[^`\n]+`"));
/// [`BACKTICK`] that also reads double-backtick spans (``` ``x`` ```, the
/// literals of reStructuredText and of GitHub text quoting a backtick) as one
/// span: the single-backtick expression pairs their inner backticks and takes
/// the prose between two spans for code.
static BACKTICK_PAIRED: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r"(?s)```.*?```|``[^`\n](?:[^\n]*?[^`\n])?``|`[^`\n]+`"));
static IDENT: LazyLock<Option<Regex>> = LazyLock::new(|| re(r"[A-Za-z_][A-Za-z0-9_]*"));
/// `numpy: 1.17.2`, `python-bits: 64`, `requests==2.31.0`, `libhdf5: None`:
/// environment reports whose words match version-printing code, not the bug.
static VERSION_LINE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r"(?m)^[ \t>*-]*[A-Za-z][\w.\- ]{0,40}(?::\s*|==|\s+)(?:v?\d+(?:\.\d+)+\S*|None|\d+)\s*(?:\(.*)?$",
    )
});
/// `from pkg.mod import a, b as c` and `import pkg.mod as m`.
static FROM_IMPORT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(r"(?m)^[ \t>]*from[ \t]+([A-Za-z_][A-Za-z0-9_.]*)[ \t]+import[ \t]+\(?([A-Za-z0-9_, \t]+)")
});
static IMPORT_AS: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(r"(?m)^[ \t>]*import[ \t]+([A-Za-z_][A-Za-z0-9_.]*)[ \t]+as[ \t]+([A-Za-z_][A-Za-z0-9_]*)")
});
static CALL: LazyLock<Option<Regex>> = LazyLock::new(|| re(r"([A-Za-z_][A-Za-z0-9_]*)\("));
/// `ValueError: message`, `UserWarning: message`, `error: message` lines.
static ERROR_LINE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r"(?m)(?:^|\s)(?:[A-Za-z_][A-Za-z0-9_.]*(?:Error|Exception|Warning)|[Ee]rror|[Ww]arning|WARNING|ERROR|panicked at [^:]+:\d+:\d+):[ \t]+([^\n]{12,300})$",
    )
});
/// Text in double quotes (or single quotes around several words).
static QUOTED: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r#""([^"\n]{12,200})"|'([^'\n]{12,200})'"#));

/// A title asking for work on tests (lowercased): `add tests for`, `fix the
/// failing test`, `tests for the parser`, `test coverage`, `tests:` as a prefix.
static TEST_WORK: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r"\b(?:add|adds|adding|added|write|writes|writing|fix|fixes|fixing|improve|improves|improving|missing|more|new|update|updates|updating|broken|flaky|failing|increase|refactor|rewrite|extend|expand|cover|remove|delete|skip|speed up)\s+(?:(?:the|a|an|some|our|its|more|unit|integration|e2e|end-to-end|regression|missing|failing|flaky|broken|slow|[a-z0-9_.-]+)\s+){0,2}(?:unit)?tests?\b|\btests?\s+(?:for|of|coverage|suite|cases?)\b|\btest\s+coverage\b|^\s*(?:tests?|testing)\s*[:(\]]|\bunit\s+tests?\b|\btesting\s+(?:the|of|for)\b",
    )
});

/// `--tag`, `--dry-run`: command-line flags, whatever the language around them.
static FLAG: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r"(?:^|[^A-Za-z0-9_-])--([A-Za-z][A-Za-z0-9_-]*)"));

/// Japanese / Chinese programming vocabulary → the English words code uses
/// (`glossary.tsv`: term, tab, words).
static GLOSSARY: LazyLock<Vec<(&'static str, &'static str)>> = LazyLock::new(|| {
    include_str!("glossary.tsv")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('\t'))
        .map(|(term, words)| (term.trim(), words.trim()))
        .filter(|(term, words)| !term.is_empty() && !words.is_empty())
        .collect()
});

/// Weight of an English word the glossary adds for a CJK term: a prose word.
const GLOSSARY_WEIGHT: f32 = 1.0;

fn has_cjk(text: &str) -> bool {
    text.chars().any(|c| {
        matches!(c as u32, 0x3040..=0x30ff | 0x3400..=0x4dbf | 0x4e00..=0x9fff | 0xf900..=0xfaff)
    })
}

fn is_identifier_shaped(w: &str) -> bool {
    if w.len() < 3 {
        return false;
    }
    let inner_upper = w.chars().skip(1).any(char::is_uppercase);
    let has_lower = w.chars().any(char::is_lowercase);
    let underscore = w.trim_matches('_').contains('_');
    (inner_upper && has_lower) || underscore
}

/// Whether the word at `start..end` of a code block looks like code rather than
/// output: snake_case / camelCase, called (`f(`), an attribute (`.x`), or a
/// dotted path's component.
fn code_shaped(span: &str, start: usize, end: usize) -> bool {
    let word = &span[start..end];
    if is_identifier_shaped(word) {
        return true;
    }
    let before = span[..start].chars().next_back();
    let after = span[end..].chars().next();
    // `x.attr`, `f(`, `Class.method`; not `np.` / `sympy.` (a module or variable).
    let class_like =
        word.chars().next().is_some_and(char::is_uppercase) && word.chars().any(char::is_lowercase);
    matches!(before, Some('.'))
        || (matches!(after, Some('(')) && !is_builtin_call(word))
        || (class_like && matches!(after, Some('.')))
}

/// Builtins a reporter's example calls everywhere (`print(`, `len(`): not names
/// of the code under change.
/// Modules of the languages' standard libraries whose members a reporter's
/// code calls (`os.chdir`, `json.dumps`, `fmt.Println`, `Math.max`): their
/// names are not the project's.
const STDLIB_MODULES: &[&str] = &[
    // Python
    "os",
    "sys",
    "re",
    "json",
    "pathlib",
    "subprocess",
    "shutil",
    "collections",
    "itertools",
    "functools",
    "math",
    "time",
    "datetime",
    "random",
    "tempfile",
    "io",
    "typing",
    "logging",
    "warnings",
    "copy",
    "pickle",
    "glob",
    "string",
    "textwrap",
    "inspect",
    "argparse",
    "csv",
    "decimal",
    "fractions",
    "operator",
    "threading",
    "multiprocessing",
    "socket",
    "urllib",
    "uuid",
    "hashlib",
    "base64",
    "struct",
    "enum",
    "dataclasses",
    "abc",
    "contextlib",
    "traceback",
    "platform",
    "locale",
    "gc",
    "weakref",
    "heapq",
    "bisect",
    "queue",
    "signal",
    "codecs",
    "unicodedata",
    "importlib",
    "pprint",
    "difflib",
    "fnmatch",
    "zipfile",
    "tarfile",
    "gzip",
    "sqlite3",
    "zlib",
    "asyncio",
    "ctypes",
    "builtins",
    "cmath",
    "statistics",
    "timeit",
    "shlex",
    "getpass",
    "errno",
    "stat",
    "atexit",
    "sysconfig",
    "site",
    // JavaScript / TypeScript
    "console",
    "Math",
    "JSON",
    "Object",
    "Array",
    "Promise",
    "Number",
    "Reflect",
    "process",
    // Go
    "fmt",
    "strings",
    "strconv",
    "errors",
    "ioutil",
    "filepath",
    "bytes",
    "sort",
    // Rust
    "std",
    "core",
    "alloc",
];

fn is_stdlib_module(w: &str) -> bool {
    STDLIB_MODULES.contains(&w)
}

/// The text before `start` ends with a standard-library module and a dot
/// (`os.`, `os.path.`): the name at `start` is that module's.
fn after_stdlib_module(text: &str, start: usize) -> bool {
    let Some(before) = text[..start].strip_suffix('.') else {
        return false;
    };
    let head: String = before
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    head.split('.').next().is_some_and(is_stdlib_module)
}

/// Issue-template lines about the reporter's environment ("output of
/// `pip list`", `xr.show_versions()`, `import platform; print(platform.platform())`).
static TEMPLATE_LINE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r"(?im)^[^\n]*(?:\bpip\s+(?:list|freeze|show)\b|\bconda\s+(?:list|info|env)\b|show_versions|print_versions|sys\.version|platform\.(?:platform|python_version|system)|python\s+-m\s+pip)[^\n]*$",
    )
});

/// Words of the prose that say the request is about how something is printed
/// or rendered (`print(` calls of a reproducer do not count).
static RENDERING: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:prints|printed|printing|printer|pretty[- ]?print\w*|pprint|repr|__repr__|__str__|latex|mathml|rendered|renders|rendering|renderer)\b",
    )
});

fn is_builtin_call(w: &str) -> bool {
    matches!(
        w,
        "print"
            | "len"
            | "range"
            | "list"
            | "dict"
            | "set"
            | "tuple"
            | "str"
            | "int"
            | "float"
            | "bool"
            | "type"
            | "isinstance"
            | "repr"
            | "open"
            | "super"
            | "getattr"
            | "setattr"
            | "hasattr"
            | "sorted"
            | "enumerate"
            | "zip"
            | "map"
            | "filter"
            | "abs"
            | "min"
            | "max"
            | "sum"
            | "round"
    )
}

/// How much each part of a request counts.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct QueryWeights {
    /// Extra weight of a word of the first line.
    pub title_boost: f32,
    /// Weight of words inside fenced code blocks (reproducers, logs) relative to
    /// prose.
    pub code_block_weight: f32,
    /// Extra weight of an identifier-shaped name.
    pub identifier_boost: f32,
    /// Inside fenced code blocks only code-shaped words are identifiers
    /// (snake_case / camelCase, calls `f(`, attributes `.x`, imported names);
    /// the plain words of a log or a repr (`data`, `time`, `Dimensions`) are
    /// not. 0 = every word of a block is an identifier (the old behaviour).
    pub fence_code_identifiers: f32,
    /// Drop HTML comments (issue-template instructions) before reading (1) or not (0).
    pub strip_html_comments: f32,
    /// Tests mode needs the title to ask for work on tests (`add tests for`,
    /// `fix the failing test`, `test coverage`), not just to contain the word
    /// (`xfail marker in test no longer …` is a bug in the test runner) (1), or
    /// any test word switches it (0).
    pub strict_tests_mode: f32,
    /// Names of the language's standard library and builtins that the
    /// reporter's code calls (`os.chdir`, `list`, `json.dumps`) are not the
    /// project's identifiers (1), or they are (0).
    pub stdlib_names: f32,
    /// The plain English words of a quoted error message (`cannot`, `convert`,
    /// `value`) are not identifiers, and issue-template boilerplate lines
    /// ("output of `pip list`") are dropped (1), or they count (0).
    pub message_words: f32,
    /// Double-backtick spans (``` ``x`` ```) are one code span (1), or the
    /// single-backtick expression reads them (0), pairing their inner
    /// backticks so the prose between two spans becomes code. Off by default
    /// until the second stage is refitted (docs/retrieval.md, issue 26
    /// session 3).
    pub double_backtick_spans: f32,
}

impl Default for QueryWeights {
    fn default() -> Self {
        QueryWeights {
            title_boost: 2.0,
            code_block_weight: 0.5,
            identifier_boost: 3.0,
            fence_code_identifiers: 1.0,
            strip_html_comments: 1.0,
            strict_tests_mode: 1.0,
            stdlib_names: 0.0,
            message_words: 1.0,
            double_backtick_spans: 0.0,
        }
    }
}

/// Analyses a request or issue text with the default [`QueryWeights`].
pub fn analyze(text: &str) -> QueryAnalysis {
    analyze_with(text, &QueryWeights::default())
}

/// Analyses a request or issue text.
pub fn analyze_with(text: &str, qw: &QueryWeights) -> QueryAnalysis {
    let uncommented = match HTML_COMMENT.as_ref() {
        Some(r) if qw.strip_html_comments > 0.0 => r.replace_all(text, ""),
        _ => std::borrow::Cow::Borrowed(text),
    };
    let text: &str = &uncommented;
    let cleaned = VERSION_LINE
        .as_ref()
        .map(|r| r.replace_all(text, ""))
        .unwrap_or(std::borrow::Cow::Borrowed(text));
    let text: &str = &cleaned;
    let untemplated = match TEMPLATE_LINE.as_ref() {
        Some(r) if qw.message_words > 0.0 => r.replace_all(text, ""),
        _ => std::borrow::Cow::Borrowed(text),
    };
    let text: &str = &untemplated;
    let stdlib = qw.stdlib_names > 0.0;
    let mut weights: FxHashMap<String, f32> = FxHashMap::default();
    let add = |tok: &str, w: f32, weights: &mut FxHashMap<String, f32>| {
        *weights.entry(tok.to_string()).or_default() += w;
    };
    // Prose and fenced code blocks are counted apart.
    let (prose, code) = match FENCE.as_ref() {
        Some(r) => {
            let code: Vec<&str> = r.find_iter(text).map(|m| m.as_str()).collect();
            (r.replace_all(text, "\n").into_owned(), code.join("\n"))
        }
        None => (text.to_string(), String::new()),
    };
    for (part, weight) in [(&prose, 1.0), (&code, qw.code_block_weight)] {
        let mut counts: FxHashMap<String, u32> = FxHashMap::default();
        tokenize(part, TokenOptions::TEXT, &mut |t| {
            *counts.entry(t.to_string()).or_default() += 1;
        });
        for (t, c) in &counts {
            add(t, weight * (1.0 + (*c as f32).ln()), &mut weights);
        }
    }
    // Cross-language requests: Japanese / Chinese terms reach English code through
    // the glossary.
    if has_cjk(text) {
        for (term, words) in GLOSSARY.iter() {
            if text.contains(term) {
                tokenize(words, TokenOptions::TEXT, &mut |t| {
                    add(t, GLOSSARY_WEIGHT, &mut weights);
                });
            }
        }
    }
    // The title says what the request is about more densely than the body.
    let mut title_terms: Vec<String> = Vec::new();
    tokenize(
        text.lines().next().unwrap_or(""),
        TokenOptions::TEXT,
        &mut |t| {
            if !title_terms.iter().any(|x| x == t) {
                title_terms.push(t.to_string());
            }
        },
    );
    for t in &title_terms {
        add(t, qw.title_boost, &mut weights);
    }

    let mut identifiers: Vec<String> = Vec::new();
    let push_ident = |s: &str, out: &mut Vec<String>| {
        if s.len() >= 3 && !out.iter().any(|x| x == s) {
            out.push(s.to_string());
        }
    };

    // Stack frames.
    let mut frames = Vec::new();
    if let Some(r) = FRAME_PY.as_ref() {
        for c in r.captures_iter(text) {
            let path = c.get(1).map_or("", |m| m.as_str()).replace('\\', "/");
            let func = c.get(2).map(|m| m.as_str().to_string());
            if let Some(f) = &func
                && f != "<module>"
            {
                push_ident(f, &mut identifiers);
            }
            frames.push((path, func));
        }
    }
    if let Some(r) = FRAME_COLON.as_ref() {
        for c in r.captures_iter(text) {
            let path = c.get(1).map_or("", |m| m.as_str()).replace('\\', "/");
            if !frames.iter().any(|(p, _)| *p == path) {
                frames.push((path, None));
            }
        }
    }

    // Code spans: every identifier inside is a strong hint.
    let mut code_text = String::new();
    let backtick = if qw.double_backtick_spans > 0.0 {
        BACKTICK_PAIRED.as_ref()
    } else {
        BACKTICK.as_ref()
    };
    if let Some(r) = backtick {
        for m in r.find_iter(text) {
            let fenced = m.as_str().starts_with("```");
            let span = m.as_str().trim_matches('`');
            code_text.push_str(span);
            code_text.push('\n');
            if let Some(ir) = IDENT.as_ref() {
                for w in ir.find_iter(span) {
                    let word = w.as_str();
                    if word.len() < 3 || super::tokenize::is_stopword(&word.to_ascii_lowercase()) {
                        continue;
                    }
                    if fenced
                        && qw.fence_code_identifiers > 0.0
                        && !code_shaped(span, w.start(), w.end())
                    {
                        continue;
                    }
                    if stdlib
                        && (after_stdlib_module(span, w.start())
                            || is_stdlib_module(word)
                            || is_builtin_call(word))
                    {
                        continue;
                    }
                    push_ident(word, &mut identifiers);
                }
            }
        }
    }
    // Identifier-shaped words and calls in prose.
    if let Some(ir) = IDENT.as_ref() {
        for w in ir.find_iter(text) {
            if is_identifier_shaped(w.as_str()) {
                push_ident(w.as_str(), &mut identifiers);
            }
        }
    }
    if let Some(cr) = CALL.as_ref() {
        for c in cr.captures_iter(text) {
            if let Some(m) = c.get(1) {
                let w = m.as_str();
                let method = text[..m.start()].ends_with('.');
                if stdlib && after_stdlib_module(text, m.start()) {
                    continue;
                }
                if !super::tokenize::is_stopword(&w.to_ascii_lowercase())
                    && (method || !is_builtin_call(w))
                {
                    push_ident(w, &mut identifiers);
                }
            }
        }
    }

    // Paths and dotted modules.
    let mut paths: Vec<String> = Vec::new();
    if let Some(r) = PATH.as_ref() {
        for m in r.find_iter(text) {
            let mut p = m.as_str().trim_start_matches("./").to_string();
            // A path from the reporter's machine (`/home/me/x/setup.py`,
            // `~/proj/a.py`, `C:\\x\\a.py`) keeps its leading slash.
            if text[..m.start()].ends_with(['/', '~', '\\']) {
                p.insert(0, '/');
            }
            if !paths.contains(&p) {
                paths.push(p);
            }
        }
    }
    if let Some(r) = SLASH_PATH.as_ref() {
        for m in r.find_iter(text) {
            let p = m.as_str().trim_end_matches('/').to_string();
            if !paths.iter().any(|x| x.starts_with(&p)) {
                paths.push(p);
            }
        }
    }
    let mut modules: Vec<String> = Vec::new();
    if let Some(r) = DOTTED.as_ref() {
        for m in r.find_iter(text) {
            let s = m.as_str();
            if stdlib && s.split('.').next().is_some_and(is_stdlib_module) {
                continue;
            }
            if PATH
                .as_ref()
                .is_some_and(|p| p.is_match(s) && p.find(s).is_some_and(|x| x.len() == s.len()))
            {
                continue;
            }
            if !modules.iter().any(|x| x == s) {
                modules.push(s.to_string());
            }
            // The components of `a.b.Name` are identifiers too.
            for part in s.split('.').skip(1) {
                if is_identifier_shaped(part) || part.chars().next().is_some_and(char::is_uppercase)
                {
                    push_ident(part, &mut identifiers);
                }
            }
        }
    }

    // Imports in the reporter's code: `from pkg.mod import name` names the module
    // and a name it defines; `import pkg.mod as m` makes `m.f` mean `pkg.mod.f`.
    if let Some(r) = FROM_IMPORT.as_ref() {
        for c in r.captures_iter(text) {
            let (Some(module), Some(names)) = (c.get(1), c.get(2)) else {
                continue;
            };
            let module = module.as_str().trim_end_matches('.');
            if module.is_empty() || module.starts_with('.') {
                continue;
            }
            for name in names.as_str().split(',') {
                let Some(name) = name.split_whitespace().next() else {
                    continue;
                };
                if name == "*" || name.len() < 3 {
                    continue;
                }
                push_ident(name, &mut identifiers);
                let dotted = format!("{module}.{name}");
                if !modules.contains(&dotted) {
                    modules.push(dotted);
                }
            }
        }
    }
    if let Some(r) = IMPORT_AS.as_ref() {
        let aliases: Vec<(String, String)> = r
            .captures_iter(text)
            .filter_map(|c| {
                Some((
                    c.get(1)?.as_str().to_string(),
                    c.get(2)?.as_str().to_string(),
                ))
            })
            .filter(|(module, alias)| module != alias)
            .collect();
        let mut expanded = Vec::new();
        for m in &modules {
            for (module, alias) in &aliases {
                if let Some(rest) = m.strip_prefix(alias.as_str())
                    && rest.starts_with('.')
                {
                    expanded.push(format!("{module}{rest}"));
                }
            }
        }
        for m in expanded {
            if !modules.contains(&m) {
                modules.push(m);
            }
        }
    }

    // Flags are code identifiers (`--tag` names the `tag` option).
    if let Some(r) = FLAG.as_ref() {
        for c in r.captures_iter(text) {
            if let Some(m) = c.get(1) {
                tokenize(m.as_str(), TokenOptions::TEXT, &mut |t| {
                    add(t, qw.identifier_boost, &mut weights);
                });
            }
        }
    }
    // Quoted messages: error/warning lines and quoted text of several words.
    let mut messages: Vec<String> = Vec::new();
    for r in [ERROR_LINE.as_ref(), QUOTED.as_ref()].into_iter().flatten() {
        for c in r.captures_iter(text) {
            let Some(m) = c.get(1).or(c.get(2)) else {
                continue;
            };
            let msg = m.as_str().trim();
            if msg.split_whitespace().count() >= 3 && !messages.iter().any(|x| x == msg) {
                messages.push(msg.to_string());
            }
        }
    }
    // The plain English words of a quoted error message (`cannot`, `convert`,
    // `type(s)`) are not names, unless the text also writes them as code
    // outside the message.
    if qw.message_words > 0.0
        && let Some(r) = ERROR_LINE.as_ref()
    {
        let mut message_words: Vec<&str> = Vec::new();
        for c in r.captures_iter(text) {
            if let Some(m) = c.get(1) {
                for w in m
                    .as_str()
                    .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                {
                    if !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase()) {
                        message_words.push(w);
                    }
                }
            }
        }
        let rest = r.replace_all(text, "");
        identifiers.retain(|ident| {
            !message_words.contains(&ident.as_str())
                || rest.contains(&format!("`{ident}"))
                || rest.contains(&format!(".{ident}("))
                || rest.contains(&format!("def {ident}"))
        });
    }
    if stdlib {
        identifiers.retain(|ident| !is_builtin_call(ident) && !is_stdlib_module(ident));
    }
    // Identifiers weigh more than prose words.
    for ident in &identifiers {
        let lower = ident.to_lowercase();
        let lower = lower.trim_matches('_');
        if !lower.is_empty() {
            add(lower, qw.identifier_boost, &mut weights);
        }
    }
    let lower = text.to_lowercase();
    let title = lower.lines().next().unwrap_or("");
    let about_docs = [
        "documentation",
        "docs",
        "readme",
        "typo",
        "ドキュメント",
        "文档",
    ]
    .iter()
    .any(|w| {
        title.split(|c: char| !c.is_alphanumeric()).any(|t| t == *w)
            || (!w.is_ascii() && title.contains(w))
    });
    // A path quoted in the reporter's example (`index.rst`, their `test_foo.py`) is
    // a hint, not a mode switch: only the title's own words say the request is
    // about docs or tests.
    let test_word = title
        .split(|c: char| !c.is_alphanumeric())
        .any(|t| matches!(t, "test" | "tests" | "testing" | "unittest" | "unittests"));
    let test_work =
        qw.strict_tests_mode <= 0.0 || TEST_WORK.as_ref().is_some_and(|r| r.is_match(title));
    let about_tests =
        (test_word && test_work) || ["テスト", "测试"].iter().any(|w| title.contains(w));

    let about_rendering = RENDERING.as_ref().is_some_and(|r| r.is_match(&prose));
    let mut compounds: Vec<String> = Vec::new();
    let words: Vec<&str> = prose
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| !w.is_empty())
        .collect();
    for pair in words.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if a.len() >= 3
            && b.len() >= 3
            && a.chars().all(|c| c.is_ascii_lowercase())
            && b.chars().all(|c| c.is_ascii_lowercase())
            && !super::tokenize::is_stopword(a)
            && !super::tokenize::is_stopword(b)
        {
            let joined = format!("{a}{b}");
            if !compounds.contains(&joined) {
                compounds.push(joined);
            }
        }
    }
    let mut terms: Vec<(String, f32)> = weights.into_iter().collect();
    terms.sort_by(|a, b| a.0.cmp(&b.0));
    let literal_text = match TRACEBACK_HEADER.as_ref() {
        Some(r) => r.replace_all(text, ""),
        None => std::borrow::Cow::Borrowed(text),
    };
    let normalised = super::literals::normalise(&literal_text);
    let literal_keys = super::literals::text_keys(&normalised);
    QueryAnalysis {
        title: text
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .to_string(),
        normalised,
        literal_keys,
        terms,
        identifiers,
        paths,
        modules,
        frames,
        messages,
        about_tests,
        about_docs,
        about_rendering,
        compounds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pulls_out_paths_modules_frames_and_identifiers() {
        let q = analyze(
            "QuerySet.defer() crashes in django/db/models/query.py\n\
             Using `Model.objects.select_related('x').defer('y')` fails.\n\
             See django.db.models.sql.query for details.\n\
             Traceback:\n  File \"/usr/lib/python3/site-packages/django/db/models/sql/query.py\", line 745, in deferred_to_data\n",
        );
        assert!(
            q.paths.contains(&"django/db/models/query.py".to_string()),
            "{:?}",
            q.paths
        );
        assert!(
            q.modules
                .contains(&"django.db.models.sql.query".to_string()),
            "{:?}",
            q.modules
        );
        assert_eq!(q.frames.len(), 1);
        assert_eq!(q.frames[0].1.as_deref(), Some("deferred_to_data"));
        for id in ["QuerySet", "select_related", "deferred_to_data", "defer"] {
            assert!(
                q.identifiers.iter().any(|x| x == id),
                "{id} in {:?}",
                q.identifiers
            );
        }
        assert!(!q.about_tests);
    }

    #[test]
    fn drops_version_report_lines() {
        let q = analyze(
            "Bug in merge\nINSTALLED VERSIONS\nnumpy: 1.17.2\nlibhdf5: None\nrequests==2.31.0\npandas 1.0.3\nValueError: bad merge",
        );
        let has = |t: &str| q.terms.iter().any(|(x, _)| x == t);
        assert!(
            !has("numpy") && !has("libhdf5") && !has("panda"),
            "{:?}",
            q.terms
        );
        assert!(has("merg") && has("valueerror"), "{:?}", q.terms);
    }

    #[test]
    fn double_backtick_spans_are_one_span() {
        let text =
            "Fix ``foo_bar`` producing doubled output with ``baz_qux``\n`one_span` and ``a`b``\n";
        let single = analyze(text);
        let paired = analyze_with(
            text,
            &QueryWeights {
                double_backtick_spans: 1.0,
                ..QueryWeights::default()
            },
        );
        // The single-backtick expression pairs the inner backticks of two
        // ``x`` spans and reads the prose between them as code.
        assert!(single.identifiers.iter().any(|x| x == "producing"));
        assert!(
            !paired.identifiers.iter().any(|x| x == "producing"),
            "{:?}",
            paired.identifiers
        );
        for id in ["foo_bar", "baz_qux", "one_span"] {
            assert!(paired.identifiers.iter().any(|x| x == id), "{id}");
        }
    }

    #[test]
    fn japanese_request_terms() {
        let q = analyze("ログイン機能のテストを追加する");
        assert!(q.terms.iter().any(|(t, _)| t == "機能"));
        assert!(q.about_tests);
    }
}
