//! Issue 36: steps are units of work. On four small repositories built here
//! (Python with unittest, Python with pytest, Node with `node --test`, Rust),
//! a corpus of requests of every shape (a prose feature with criteria, an
//! enumeration, a bug report with a traceback, a rename or refactor, docs only,
//! Japanese, a feature across files) plans so that
//!
//! * no step is made from a criterion: no title holds a criterion's "then"
//!   clause, no step is "Make it so that …";
//! * every criterion of the plan is linked by a step;
//! * every step has a target path;
//! * a feature stays one step and a real enumeration splits (per request; a
//!   task small enough that seed 003's chunking keeps it whole is one step).
//!
//! The figures (steps per request, criteria linked) are in docs/planner.md.

use std::collections::BTreeMap;
use std::path::Path;

use dandori_planner::{PlanOptions, RequestSource};

fn write(root: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

/// The four repositories, by name.
fn repos(root: &Path) -> BTreeMap<&'static str, std::path::PathBuf> {
    let mut out = BTreeMap::new();
    let py_unittest = root.join("py-unittest");
    write(
        &py_unittest,
        &[
            (
                "pyproject.toml",
                "[project]\nname = \"wordkit\"\nversion = \"0.1.0\"\n\n[tool.setuptools]\npackages = [\"wordkit\"]\n",
            ),
            ("README.md", "# wordkit\n\nSmall text utilities.\n"),
            (
                "wordkit/__init__.py",
                "from .count import count_words\n\n__all__ = [\"count_words\"]\n",
            ),
            (
                "wordkit/count.py",
                "def count_words(text):\n    \"\"\"Number of whitespace-separated words.\"\"\"\n    return len(text.split())\n",
            ),
            (
                "wordkit/clean.py",
                "def strip_punctuation(text):\n    return \"\".join(c for c in text if c.isalnum() or c.isspace())\n",
            ),
            (
                "tests/test_count.py",
                "import unittest\n\nfrom wordkit import count_words\n\n\nclass CountTest(unittest.TestCase):\n    def test_count(self):\n        self.assertEqual(count_words(\"a b\"), 2)\n",
            ),
        ],
    );
    out.insert("py-unittest", py_unittest);
    let py_pytest = root.join("py-pytest");
    write(
        &py_pytest,
        &[
            ("requirements.txt", "pytest\n"),
            (
                "README.md",
                "# stock\n\nInventory of a small shop.\n\n## Usage\n\n`python -m stock list`\n",
            ),
            ("stock/__init__.py", ""),
            (
                "stock/inventory.py",
                "class Inventory:\n    def __init__(self):\n        self.items = {}\n\n    def add(self, sku, qty):\n        self.items[sku] = self.items.get(sku, 0) + qty\n\n    def remove(self, sku, qty):\n        self.items[sku] -= qty\n",
            ),
            (
                "stock/cli.py",
                "import argparse\n\n\ndef main(argv=None):\n    parser = argparse.ArgumentParser(prog=\"stock\")\n    sub = parser.add_subparsers(dest=\"cmd\")\n    sub.add_parser(\"list\")\n    return parser.parse_args(argv)\n",
            ),
            (
                "stock/report.py",
                "def total_units(inventory):\n    return sum(inventory.items.values())\n",
            ),
            (
                "tests/test_inventory.py",
                "from stock.inventory import Inventory\n\n\ndef test_add():\n    inv = Inventory()\n    inv.add(\"a\", 2)\n    assert inv.items == {\"a\": 2}\n",
            ),
        ],
    );
    out.insert("py-pytest", py_pytest);
    let node = root.join("node-api");
    write(
        &node,
        &[
            (
                "package.json",
                "{\n  \"name\": \"notes-api\",\n  \"version\": \"1.0.0\",\n  \"type\": \"module\",\n  \"scripts\": { \"test\": \"node --test\" }\n}\n",
            ),
            ("README.md", "# notes-api\n\nA tiny notes HTTP API.\n"),
            (
                "src/server.js",
                "import http from 'node:http';\nimport { route } from './routes.js';\n\nexport function start(port = 3000) {\n  return http.createServer(route).listen(port);\n}\n",
            ),
            (
                "src/routes.js",
                "import { listNotes } from './store.js';\n\nexport function route(req, res) {\n  if (req.method === 'GET' && req.url === '/notes') {\n    res.end(JSON.stringify(listNotes()));\n    return;\n  }\n  res.statusCode = 404;\n  res.end();\n}\n",
            ),
            (
                "src/store.js",
                "const notes = [];\n\nexport function listNotes() {\n  return notes;\n}\n\nexport function addNote(text) {\n  notes.push({ id: notes.length + 1, text });\n}\n",
            ),
            (
                "test/routes.test.js",
                "import test from 'node:test';\nimport assert from 'node:assert';\nimport { listNotes } from '../src/store.js';\n\ntest('starts empty', () => {\n  assert.deepStrictEqual(listNotes(), []);\n});\n",
            ),
        ],
    );
    out.insert("node-api", node);
    let rust = root.join("rs-units");
    write(
        &rust,
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"units\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
            ),
            ("README.md", "# units\n\nParse and convert lengths.\n"),
            (
                "src/lib.rs",
                "pub mod convert;\npub mod parse;\n\npub use parse::parse_length;\n",
            ),
            (
                "src/parse.rs",
                "/// Parses `\"12m\"` into metres.\npub fn parse_length(s: &str) -> Option<f64> {\n    s.strip_suffix('m')?.parse().ok()\n}\n",
            ),
            (
                "src/convert.rs",
                "pub fn metres_to_feet(m: f64) -> f64 {\n    m * 3.28084\n}\n",
            ),
            (
                "tests/parse.rs",
                "use units::parse_length;\n\n#[test]\nfn metres() {\n    assert_eq!(parse_length(\"12m\"), Some(12.0));\n}\n",
            ),
        ],
    );
    out.insert("rs-units", rust);
    out
}

struct Case {
    id: &'static str,
    repo: &'static str,
    shape: &'static str,
    text: &'static str,
    /// Steps the plan must have at least / at most.
    steps: (usize, usize),
}

const fn case(
    id: &'static str,
    repo: &'static str,
    shape: &'static str,
    steps: (usize, usize),
    text: &'static str,
) -> Case {
    Case {
        id,
        repo,
        shape,
        text,
        steps,
    }
}

const CASES: &[Case] = &[
    // Python, unittest.
    case(
        "u-01",
        "py-unittest",
        "prose feature",
        (1, 1),
        "# Longest word\n\nAdd `longest_word(text)` to `wordkit/count.py` returning the longest word of the text (the first one on a tie), and export it from `wordkit`.\n\n## Acceptance criteria\n- Given \"a bbb cc\", when `longest_word` is called, then it returns \"bbb\"\n- Given \"ab cd\", when `longest_word` is called, then it returns \"ab\"\n- Given the package, when `from wordkit import longest_word` runs, then the import succeeds\n",
    ),
    case(
        "u-02",
        "py-unittest",
        "prose feature",
        (1, 1),
        "Make `count_words` ignore punctuation-only tokens such as `--` and `...`.\n\n## Acceptance criteria\n- `count_words(\"a -- b\")` returns 2\n- `count_words(\"...\")` returns 0\n",
    ),
    case(
        "u-03",
        "py-unittest",
        "enumeration",
        (2, 3),
        "# More text helpers\n\n- Add `count_sentences(text)` to `wordkit/count.py`\n- Add `title_case(text)` to `wordkit/clean.py`\n- Export both from the package and add unittest tests for them\n\n## Acceptance criteria\n- `count_sentences(\"Hi. Bye.\")` returns 2\n- `title_case(\"hello world\")` returns \"Hello World\"\n",
    ),
    case(
        "u-04",
        "py-unittest",
        "bug report",
        (1, 1),
        "# count_words crashes on None\n\nCalling `count_words(None)` from our importer crashes:\n\n```\nTraceback (most recent call last):\n  File \"importer.py\", line 12, in <module>\n    n = count_words(row.get(\"body\"))\n  File \"wordkit/count.py\", line 3, in count_words\n    return len(text.split())\nAttributeError: 'NoneType' object has no attribute 'split'\n```\n\nIt should return 0 for `None`.\n",
    ),
    case(
        "u-05",
        "py-unittest",
        "rename",
        (1, 1),
        "Rename `strip_punctuation` to `remove_punctuation` in `wordkit/clean.py` and keep the old name as a deprecated alias.",
    ),
    case(
        "u-06",
        "py-unittest",
        "docs only",
        (1, 1),
        "# Usage docs\n\nAdd a Usage section to the README showing `count_words` on a short example. No code changes.\n",
    ),
    case(
        "u-07",
        "py-unittest",
        "japanese",
        (1, 1),
        "# 単語の頻度\n\n`wordkit/count.py` に `word_frequencies(text)` を追加し、単語ごとの出現回数を辞書で返す。パッケージから公開する。\n\n## 受け入れ基準\n- 「a b a」を渡すと {\"a\": 2, \"b\": 1} を返す\n- 空文字列を渡すと空の辞書を返す\n",
    ),
    case(
        "u-08",
        "py-unittest",
        "multi-file feature",
        (1, 1),
        "# Unicode-aware counting\n\nTeach `wordkit/count.py` to count words separated by any Unicode whitespace, and have `wordkit/clean.py` normalise non-breaking spaces first.\n\n## Acceptance criteria\n- `count_words(\"a\\u00a0b\")` returns 2\n",
    ),
    case(
        "u-09",
        "py-unittest",
        "enumeration",
        (3, 3),
        "Add the following helpers to wordkit:\n\n1. a `reverse_words` function\n2. a `unique_words` function\n3. a `truncate_words(text, n)` function\n",
    ),
    case(
        "u-10",
        "py-unittest",
        "japanese",
        (2, 2),
        "# 文字数\n\n以下を実装する:\n\n- 文字数を数える `count_chars` を追加する\n- 空白を除いた文字数を数える `count_letters` を追加する\n- それぞれのテストを追加する\n",
    ),
    case(
        "u-11",
        "py-unittest",
        "refactor",
        (1, 1),
        "Refactor `wordkit/count.py` so that the tokenising lives in one private `_tokens(text)` helper used by `count_words`; behaviour must not change.",
    ),
    // Python, pytest.
    case(
        "p-01",
        "py-pytest",
        "prose feature",
        (1, 1),
        "# Low stock\n\nAdd `Inventory.low_stock(threshold)` that returns the SKUs whose quantity is below the threshold, sorted by SKU.\n\n## Acceptance criteria\n- Given a=1 and b=5, when `low_stock(3)` is called, then it returns [\"a\"]\n- Given an empty inventory, when `low_stock(3)` is called, then it returns []\n- Given c=0 and a=0, when `low_stock(1)` is called, then it returns [\"a\", \"c\"]\n",
    ),
    case(
        "p-02",
        "py-pytest",
        "bug report",
        (1, 1),
        "# Removing more than we have goes negative\n\n```\n>>> inv.remove(\"a\", 5)\n>>> inv.items\n{'a': -3}\n```\n\n`Inventory.remove` should raise `ValueError` when the quantity would go below zero, and leave the stock unchanged.\n\n## Acceptance criteria\n- removing 5 of 2 raises ValueError\n- after the error the quantity is still 2\n",
    ),
    case(
        "p-03",
        "py-pytest",
        "enumeration",
        (2, 2),
        "# CLI commands\n\n- Add an `add SKU QTY` subcommand to `stock/cli.py`\n- Add a `total` subcommand that prints `total_units`\n- Tests for both commands\n",
    ),
    case(
        "p-04",
        "py-pytest",
        "inline enumeration",
        (2, 2),
        "Add a `--json` flag to the `list` command and a `--sku` filter to it, with tests for both.",
    ),
    case(
        "p-05",
        "py-pytest",
        "rename",
        (1, 1),
        "Move `total_units` from `stock/report.py` to `stock/inventory.py` as a method `Inventory.total()` and update every caller.",
    ),
    case(
        "p-06",
        "py-pytest",
        "docs only",
        (1, 1),
        "Document the `add` and `remove` methods of `Inventory` with docstrings explaining the arguments; do not change behaviour.",
    ),
    case(
        "p-07",
        "py-pytest",
        "japanese",
        (1, 1),
        "# 在庫の移動\n\n`Inventory` に `move(sku, qty, other)` を追加して、別の在庫へ数量を移せるようにする。\n\n## 受け入れ基準\n- a が 3 ある在庫から 2 を移すと、移動元は 1、移動先は 2 になる\n- 在庫より多く移そうとすると ValueError になる\n",
    ),
    case(
        "p-08",
        "py-pytest",
        "multi-file feature",
        (1, 1),
        "# CSV export\n\nAdd a `stock/export.py` module with `to_csv(inventory)` and an `export` subcommand in `stock/cli.py` that prints it. Mention the command in the README.\n\n## Acceptance criteria\n- the CSV has a `sku,qty` header\n- `stock export` prints one line per SKU after the header\n",
    ),
    case(
        "p-09",
        "py-pytest",
        "enumeration",
        (3, 3),
        "# Reporting\n\n1. `value(inventory, prices)` returning the total stock value\n2. `top_skus(inventory, n)` returning the n largest quantities\n3. `empty_skus(inventory)` returning SKUs with zero quantity\n\nAll in `stock/report.py`.\n",
    ),
    case(
        "p-10",
        "py-pytest",
        "japanese",
        (2, 2),
        "1. `stock/cli.py` に `remove` サブコマンドを追加\n2. `stock/report.py` に `summary(inventory)` を実装\n3. README に使い方を追記\n",
    ),
    case(
        "p-11",
        "py-pytest",
        "prose feature",
        (1, 1),
        "When `Inventory.add` is given a negative quantity it should raise `ValueError` instead of silently lowering the stock. The error message names the SKU.",
    ),
    // Node.
    case(
        "n-01",
        "node-api",
        "prose feature",
        (1, 1),
        "# Create notes\n\nSupport `POST /notes` with a JSON body `{\"text\": \"...\"}`: it stores the note through `addNote` and answers 201 with the note.\n\n## Acceptance criteria\n- Given an empty store, when POST /notes has text \"hi\", then the answer is 201 with id 1\n- Given a body without text, when POST /notes is called, then the answer is 400\n",
    ),
    case(
        "n-02",
        "node-api",
        "inline enumeration",
        (2, 2),
        "Add endpoints `GET /notes/:id` and `DELETE /notes/:id`, with tests for both.",
    ),
    case(
        "n-03",
        "node-api",
        "enumeration",
        (3, 3),
        "# Notes API v2\n\n- `GET /notes?search=term` filters notes by text\n- `PATCH /notes/:id` edits a note's text\n- `GET /health` answers 200 with `{\"ok\": true}`\n- Cover all of them with node:test tests\n\n## Acceptance criteria\n- searching \"milk\" returns only notes containing milk\n- patching note 1 changes its text\n- /health answers 200\n",
    ),
    case(
        "n-04",
        "node-api",
        "bug report",
        (1, 1),
        "# Unknown routes hang\n\n`curl -X PUT localhost:3000/notes` never returns. Node prints:\n\n```\nTypeError: Cannot read properties of undefined (reading 'end')\n    at route (src/routes.js:9:7)\n```\n\nEvery unknown method or path should answer 404 immediately.\n",
    ),
    case(
        "n-05",
        "node-api",
        "rename",
        (1, 1),
        "Rename `src/store.js` to `src/notes-store.js` and update the imports in `src/routes.js` and the tests.",
    ),
    case(
        "n-06",
        "node-api",
        "docs only",
        (1, 1),
        "Write an API section in the README listing every endpoint with an example curl call.",
    ),
    case(
        "n-07",
        "node-api",
        "japanese",
        (1, 1),
        "# ノートの件数\n\n`GET /notes/count` を追加し、保存されているノートの件数を `{\"count\": n}` で返す。\n\n## 受け入れ基準\n- ノートが 2 件あるとき、`{\"count\": 2}` を返す\n- ノートがないとき、`{\"count\": 0}` を返す\n",
    ),
    case(
        "n-08",
        "node-api",
        "multi-file feature",
        (1, 1),
        "# Persist notes\n\nKeep notes in a JSON file: `src/store.js` loads `notes.json` at start and writes it on every change, and `src/server.js` takes the file path from `NOTES_FILE`.\n\n## Acceptance criteria\n- a note added before a restart is listed after it\n",
    ),
    case(
        "n-09",
        "node-api",
        "refactor",
        (1, 1),
        "Refactor `src/routes.js` into a small table of `[method, path, handler]` entries instead of the if-chain, without changing any response.",
    ),
    case(
        "n-10",
        "node-api",
        "japanese",
        (3, 3),
        "ノート API に次の機能を追加してください。\n\n- タグ付け\n- タグでの絞り込み\n- ノートの並べ替え\n",
    ),
    case(
        "n-11",
        "node-api",
        "prose feature",
        (1, 1),
        "Limit note text to 280 characters: `POST /notes` with longer text answers 413 and stores nothing. Add a test for the limit.",
    ),
    // Rust.
    case(
        "r-01",
        "rs-units",
        "prose feature",
        (1, 1),
        "# Centimetres\n\nTeach `parse_length` to accept a `cm` suffix (\"150cm\" is 1.5 metres) as well as `m`.\n\n## Acceptance criteria\n- `parse_length(\"150cm\")` returns Some(1.5)\n- `parse_length(\"2m\")` still returns Some(2.0)\n- `parse_length(\"cm\")` returns None\n",
    ),
    case(
        "r-02",
        "rs-units",
        "enumeration",
        (2, 2),
        "# Conversions\n\n- Add `feet_to_metres(ft: f64) -> f64` to `src/convert.rs`\n- Add `parse_feet(s: &str) -> Option<f64>` to `src/parse.rs` for values like \"6ft\"\n- Re-export both from `src/lib.rs` and add integration tests\n",
    ),
    case(
        "r-03",
        "rs-units",
        "bug report",
        (1, 1),
        "# Panic on a lone suffix\n\n```\nthread 'main' panicked at src/parse.rs:3:28:\ncalled `Option::unwrap()` on a `None` value\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n```\n\nhappens when our CLI passes \" m\" (with a space). `parse_length` should trim the input and return None for anything that is not a number.\n",
    ),
    case(
        "r-04",
        "rs-units",
        "rename",
        (1, 1),
        "Rename the `convert` module to `imperial` (`src/convert.rs` → `src/imperial.rs`) and update `src/lib.rs`.",
    ),
    case(
        "r-05",
        "rs-units",
        "docs only",
        (1, 2),
        "Add rustdoc examples to `parse_length` and `metres_to_feet`, and a short usage snippet to the README.",
    ),
    case(
        "r-06",
        "rs-units",
        "japanese",
        (1, 1),
        "# キロメートル対応\n\n`parse_length` で `km` の接尾辞（\"2km\" は 2000 メートル）を受け付けるようにする。\n\n## 受け入れ基準\n- `parse_length(\"2km\")` が Some(2000.0) を返す\n- `parse_length(\"km\")` が None を返す\n",
    ),
    case(
        "r-07",
        "rs-units",
        "multi-file feature",
        (1, 1),
        "# A Length type\n\nIntroduce a `Length` newtype in `src/parse.rs` that `parse_length` returns, and make `src/convert.rs` take `Length` instead of `f64`. Update `src/lib.rs` exports.\n",
    ),
    case(
        "r-08",
        "rs-units",
        "enumeration",
        (1, 3),
        "Add three conversions to `src/convert.rs`:\n\n- metres to yards\n- metres to inches\n- metres to miles\n",
    ),
    case(
        "r-09",
        "rs-units",
        "refactor",
        (1, 1),
        "Replace the `Option` returned by `parse_length` with a `Result<f64, ParseError>` carrying why the input was rejected; keep the tests passing.",
    ),
    case(
        "r-10",
        "rs-units",
        "japanese",
        (1, 2),
        "1. `src/convert.rs` に `feet_to_metres` を実装\n2. `src/parse.rs` に `parse_inches` を追加\n",
    ),
    case(
        "r-11",
        "rs-units",
        "prose feature",
        (1, 1),
        "Make `metres_to_feet` round to two decimal places, so `metres_to_feet(1.0)` is 3.28, and update its test.",
    ),
];

/// Whether `title` was made from the criterion's "then" clause.
fn from_then(title: &str, then: &str) -> bool {
    let then = then.trim().trim_end_matches(['.', '。']);
    title.starts_with("Make it so that")
        || title.ends_with("ようにする") && then.chars().count() >= 4 && title.contains(then)
        || (then.chars().count() >= 8 && title.contains(then))
}

#[derive(Default)]
struct Figures {
    requests: usize,
    steps: usize,
    max_steps: usize,
    criteria: usize,
    linked: usize,
}

#[test]
fn every_request_plans_units_of_work_with_every_criterion_linked() {
    assert!(CASES.len() >= 40, "{} requests", CASES.len());
    let root = tempfile::tempdir().unwrap();
    let repos = repos(root.path());
    let runs = tempfile::tempdir().unwrap();
    let mut failures: Vec<String> = Vec::new();
    let mut by_shape: BTreeMap<&str, Figures> = BTreeMap::new();
    for c in CASES {
        let mut opts = PlanOptions::new(&repos[c.repo], RequestSource::Text(c.text.to_string()));
        opts.runs_root = Some(runs.path().to_path_buf());
        opts.toolchain = Some(dandori_planner::gathering::Toolchain::with(&[
            "python", "pip", "node", "npm", "cargo",
        ]));
        let o = match dandori_planner::plan(&opts) {
            Ok(o) => o,
            Err(e) => {
                failures.push(format!("{}: {e}", c.id));
                continue;
            }
        };
        let p = &o.planning;
        let titles: Vec<&str> = p.steps.iter().map(|s| s.title.as_str()).collect();
        if !o.validation.ok {
            failures.push(format!(
                "{}: invalid plan {:?}",
                c.id, o.validation.findings
            ));
        }
        let (min, max) = c.steps;
        if p.steps.len() < min || p.steps.len() > max {
            failures.push(format!(
                "{} ({}): {} step(s), wanted {min}..={max}: {titles:?}",
                c.id,
                c.shape,
                p.steps.len()
            ));
        }
        let stated = dandori_planner::Request::from_text(c.text)
            .unwrap()
            .acceptance_criteria;
        for s in &p.steps {
            if s.scope.target_paths.is_empty() {
                failures.push(format!("{}: {} has no target path", c.id, s.step_id));
            }
            if s.intent.starts_with("Make it so that") {
                failures.push(format!("{}: {} intent from a criterion", c.id, s.step_id));
            }
            if let Some(t) = stated.iter().find(|t| from_then(&s.title, &t.then)) {
                failures.push(format!(
                    "{}: {} {:?} is made from the criterion {:?}",
                    c.id, s.step_id, s.title, t.then
                ));
            }
        }
        let criteria = &p.context.acceptance_criteria;
        let linked = criteria
            .iter()
            .filter(|a| p.steps.iter().any(|s| s.links_to_ac.contains(&a.id)))
            .count();
        if linked < criteria.len() {
            failures.push(format!(
                "{}: {} of {} criteria linked",
                c.id,
                linked,
                criteria.len()
            ));
        }
        let f = by_shape.entry(c.shape).or_default();
        f.requests += 1;
        f.steps += p.steps.len();
        f.max_steps = f.max_steps.max(p.steps.len());
        f.criteria += criteria.len();
        f.linked += linked;
    }
    // The table in docs/planner.md.
    eprintln!("| Shape | Requests | Steps (mean) | Steps (max) | Criteria linked |");
    eprintln!("|---|---|---|---|---|");
    let mut total = Figures::default();
    for (shape, f) in &by_shape {
        eprintln!(
            "| {shape} | {} | {:.1} | {} | {}/{} |",
            f.requests,
            f.steps as f64 / f.requests as f64,
            f.max_steps,
            f.linked,
            f.criteria
        );
        total.requests += f.requests;
        total.steps += f.steps;
        total.max_steps = total.max_steps.max(f.max_steps);
        total.criteria += f.criteria;
        total.linked += f.linked;
    }
    eprintln!(
        "| all | {} | {:.1} | {} | {}/{} |",
        total.requests,
        total.steps as f64 / total.requests.max(1) as f64,
        total.max_steps,
        total.linked,
        total.criteria
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
