use dandori_repo::retrieval::{Bm25Baseline, RankingWeights};
use dandori_repo::{Index, ScanOptions, scan, target_paths_for};

use super::support::write;

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write(
        r,
        "shop/models/query.py",
        "class QuerySet:\n    \"\"\"A lazy database lookup.\"\"\"\n\n    def select_related(self, *fields):\n        return self._clone(fields)\n\n    def only(self, *fields):\n        return self\n",
    );
    write(
        r,
        "shop/views.py",
        "from shop.models.query import QuerySet\n\ndef list_items(request):\n    qs = QuerySet()\n    return qs.select_related('owner')\n",
    );
    write(
        r,
        "shop/auth/login.py",
        "# ログイン機能: ユーザー認証とセッション管理\ndef authenticate_user(name, password):\n    \"\"\"Check the password of a user and open a session.\"\"\"\n    return check_password(name, password)\n",
    );
    write(
        r,
        "shop/payment/gateway.py",
        "class PaymentGateway:\n    def charge(self, amount):\n        raise PaymentDeclined(amount)\n",
    );
    write(
        r,
        "tests/test_query.py",
        "from shop.models.query import QuerySet\n\ndef test_select_related():\n    assert QuerySet().select_related('x')\n",
    );
    write(
        r,
        "docs/queries.md",
        "# QuerySet\nselect_related follows foreign keys.\n",
    );
    dir
}

fn top(index: &Index, q: &str) -> Vec<String> {
    index.search(q, 5).into_iter().map(|h| h.path).collect()
}

#[test]
fn definition_beats_usage_and_tests() {
    let dir = repo();
    let s = scan(dir.path(), &ScanOptions::default()).unwrap();
    let index = Index::build(&s);
    let hits = index.search("QuerySet.select_related() ignores the fields passed", 5);
    assert_eq!(hits[0].path, "shop/models/query.py", "{hits:#?}");
    let test_rank = hits.iter().position(|h| h.path == "tests/test_query.py");
    assert!(test_rank.is_none_or(|r| r > 1), "{hits:#?}");
    assert!(
        hits[0].reasons.iter().any(|r| r == "defines QuerySet"),
        "{:?}",
        hits[0].reasons
    );
    // The snippet shows the definition.
    let snip = &hits[0].snippets[0];
    assert!(
        snip.text.contains("def select_related") || snip.text.contains("class QuerySet"),
        "{snip:?}"
    );
    assert!(snip.start_line >= 1 && snip.end_line >= snip.start_line);
}

#[test]
fn mentioned_path_module_and_frames_rank_first() {
    let dir = repo();
    let s = scan(dir.path(), &ScanOptions::default()).unwrap();
    let index = Index::build(&s);
    assert_eq!(
        top(&index, "Please fix the bug in payment/gateway.py")[0],
        "shop/payment/gateway.py"
    );
    assert_eq!(
        top(&index, "Importing shop.auth.login fails")[0],
        "shop/auth/login.py"
    );
    let trace = "Traceback (most recent call last):\n  File \"/srv/app/shop/views.py\", line 5, in list_items\n  File \"/srv/app/shop/payment/gateway.py\", line 3, in charge\nPaymentDeclined: 10";
    let hits = index.search(trace, 5);
    let first_two: Vec<&str> = hits.iter().take(2).map(|h| h.path.as_str()).collect();
    assert!(
        first_two.contains(&"shop/payment/gateway.py") && first_two.contains(&"shop/views.py"),
        "{hits:#?}"
    );
    let gateway = hits
        .iter()
        .find(|h| h.path == "shop/payment/gateway.py")
        .unwrap();
    assert!(
        gateway.reasons.iter().any(|r| r == "stack frame in charge"),
        "{:?}",
        gateway.reasons
    );
}

#[test]
fn japanese_request_finds_japanese_comment() {
    let dir = repo();
    let s = scan(dir.path(), &ScanOptions::default()).unwrap();
    let index = Index::build(&s);
    let hits = index.search("ログイン機能のセッション管理を改善する", 3);
    assert_eq!(hits[0].path, "shop/auth/login.py", "{hits:#?}");
    assert_eq!(hits[0].snippets[0].start_line, 1);
}

#[test]
fn tests_rank_when_the_request_is_about_tests() {
    let dir = repo();
    let s = scan(dir.path(), &ScanOptions::default()).unwrap();
    let index = Index::build(&s);
    let hits = top(
        &index,
        "Add tests for test_select_related in tests/test_query.py",
    );
    assert_eq!(hits[0], "tests/test_query.py");
}

#[test]
fn target_paths_and_baseline() {
    let dir = repo();
    let s = scan(dir.path(), &ScanOptions::default()).unwrap();
    let index = Index::build(&s);
    let hits = index.search("PaymentGateway.charge raises PaymentDeclined", 10);
    let targets = target_paths_for(&hits);
    assert_eq!(targets[0], "shop/payment/gateway.py");
    assert!(targets.len() <= dandori_repo::retrieval::TARGET_PATHS_MAX);

    let baseline = Bm25Baseline::build(&s);
    let b = baseline.search("PaymentGateway charge", 3);
    assert_eq!(b[0].path, "shop/payment/gateway.py");
    assert!(baseline.search("", 3).is_empty());
    assert!(index.search("zzzz qqqq", 3).is_empty());
}

/// Many files mention the same words; only one holds the message's format
/// string, and the issue quotes the message with the values filled in.
#[test]
fn a_formatted_message_finds_the_file_that_emits_it() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    for i in 0..6 {
        write(
            r,
            &format!("pkg/units/unit{i}.py"),
            "def convert(value, unit):\n    \"\"\"Convert a value to another unit; raise if the units are incompatible.\"\"\"\n    return value * scale(unit)\n",
        );
    }
    write(
        r,
        "pkg/core/quantity.py",
        "def to(self, other):\n    if not compatible(self, other):\n        raise UnitConversionError(\n            f\"'{self.unit}' ({self.kind}) and '{other}' are not convertible\"\n        )\n    warnings.warn('Quantity %s was rounded to %d digits when converting' % (q, n))\n",
    );
    let s = scan(r, &ScanOptions::default()).unwrap();
    let index = Index::build(&s);
    let issue = "Converting units fails\n\nConverting a value to another unit:\n\n```\n>>> q.to('m')\nUnitConversionError: 's' (time) and 'm' (length) are not convertible\n```\n";
    let hits = index.search(issue, 5);
    assert_eq!(hits[0].path, "pkg/core/quantity.py", "{hits:#?}");
    assert!(
        hits[0]
            .reasons
            .iter()
            .any(|r| r.starts_with("emits \"are not convertible")),
        "{:?}",
        hits[0].reasons
    );
    // A %-formatted warning quoted in prose, with its values.
    let hits = index.search(
        "I get a warning: Quantity 3 m was rounded to 2 digits when converting, why?",
        5,
    );
    assert_eq!(hits[0].path, "pkg/core/quantity.py", "{hits:#?}");
}

/// A `src/` layout, a reporter's script that shares a file name with the
/// repository, and an installed copy of the package in the traceback.
fn src_layout_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write(
        r,
        "src/pkgx/render.py",
        "def render_page(doc):\n    return layout_blocks(doc)\n",
    );
    write(
        r,
        "src/pkgx/layout.py",
        "def layout_blocks(doc):\n    raise KeyError(doc)\n",
    );
    write(
        r,
        "src/pkgx/cli.py",
        "def main(argv):\n    return render_page(argv)\n",
    );
    write(
        r,
        "repro.py",
        "print('the project has a repro script too')\n",
    );
    write(
        r,
        "src/pkgx/units/convert.py",
        "def to_metres(value):\n    return value\n",
    );
    write(
        r,
        "src/pkgx/units/__init__.py",
        "from pkgx.units.convert import to_metres\n",
    );
    dir
}

#[test]
fn installed_package_frames_map_to_a_src_layout_and_the_innermost_frame_wins() {
    let dir = src_layout_repo();
    let s = scan(dir.path(), &ScanOptions::default()).unwrap();
    let index = Index::build(&s);
    let trace = "It crashes:\n\nTraceback (most recent call last):\n  \
        File \"/home/me/work/repro.py\", line 3, in <module>\n  \
        File \"/opt/venv/lib/python3.11/site-packages/pkgx/cli.py\", line 2, in main\n  \
        File \"/opt/venv/lib/python3.11/site-packages/pkgx/render.py\", line 2, in render_page\n  \
        File \"/opt/venv/lib/python3.11/site-packages/pkgx/layout.py\", line 2, in layout_blocks\n\
        KeyError: 'x'\n";
    let hits = index.search(trace, 6);
    assert_eq!(hits[0].path, "src/pkgx/layout.py", "{hits:#?}");
    assert!(
        hits[0]
            .reasons
            .iter()
            .any(|r| r == "stack frame in layout_blocks"),
        "{:?}",
        hits[0].reasons
    );
    // In the first stage, outer frames rank below inner ones (`frame_decay`);
    // the re-ranker weighs a frame with the rest of the file's evidence.
    let mut first_stage = Index::build(&s);
    first_stage.set_weights(RankingWeights {
        rerank: 0.0,
        ..RankingWeights::default()
    });
    let first = first_stage.search(trace, 6);
    let rank = |p: &str| first.iter().position(|h| h.path == p);
    assert!(
        rank("src/pkgx/render.py") < rank("src/pkgx/cli.py"),
        "{first:#?}"
    );
    // The reporter's script is not the repository's `repro.py`.
    assert!(
        hits.iter()
            .find(|h| h.path == "repro.py")
            .is_none_or(|h| !h.reasons.iter().any(|r| r.starts_with("stack frame"))),
        "{hits:#?}"
    );
}

#[test]
fn imports_in_the_reporters_code_name_modules_and_aliases_expand() {
    let q = dandori_repo::retrieval::analyze(
        "Wrong result\n\n```python\nfrom pkgx.units import to_metres, other_name as o\nimport pkgx.units.convert as cv\ncv.to_metres(3)\n```\n",
    );
    assert!(q.identifiers.iter().any(|i| i == "to_metres"), "{q:?}");
    assert!(q.identifiers.iter().any(|i| i == "other_name"), "{q:?}");
    assert!(
        q.modules.iter().any(|m| m == "pkgx.units.to_metres"),
        "{:?}",
        q.modules
    );
    assert!(
        q.modules
            .iter()
            .any(|m| m == "pkgx.units.convert.to_metres"),
        "{:?}",
        q.modules
    );
    let dir = src_layout_repo();
    let s = scan(dir.path(), &ScanOptions::default()).unwrap();
    let index = Index::build(&s);
    let hits = index.search(
        "Wrong result\n\n```python\nimport pkgx.units.convert as cv\nprint(cv.to_metres(3))\n```\n",
        5,
    );
    assert_eq!(hits[0].path, "src/pkgx/units/convert.py", "{hits:#?}");
    assert!(
        hits[0].reasons.iter().any(|r| r.starts_with("module ")),
        "{:?}",
        hits[0].reasons
    );
}

#[test]
fn definition_specificity_discounts_names_used_all_over_the_code() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    // `run` is defined once but called from every module; `fold_spans` is
    // defined in two files and used nowhere else.
    write(r, "app/runner.py", "def run(job):\n    return job\n");
    write(
        r,
        "app/spans.py",
        "def fold_spans(spans):\n    return spans\n",
    );
    write(
        r,
        "app/old_spans.py",
        "def fold_spans(spans):\n    return None\n",
    );
    for i in 0..30 {
        write(
            r,
            &format!("app/mod{i}.py"),
            format!("from app.runner import run\n\ndef step{i}(job):\n    return run(job)\n"),
        );
    }
    let s = scan(r, &ScanOptions::default()).unwrap();
    let mut index = Index::build(&s);
    let query = "`run` then `fold_spans`";
    // runner.py's score relative to spans.py's: the definition of `run` counts
    // less once its specificity does.
    let ratio = |index: &Index| {
        let hits = index.search(query, 10);
        let score = |p: &str| hits.iter().find(|h| h.path == p).unwrap().score;
        score("app/runner.py") / score("app/spans.py")
    };
    // The first stage's scores: what the knob weighs.
    let plain = RankingWeights {
        rerank: 0.0,
        ..RankingWeights::default()
    };
    assert_eq!(plain.definition_specificity, 0.0);
    index.set_weights(plain);
    let before = ratio(&index);
    index.set_weights(RankingWeights {
        definition_specificity: 1.0,
        ..plain
    });
    let after = ratio(&index);
    assert!(after < before * 0.8, "{before} -> {after}");
}

#[test]
fn a_module_named_several_times_counts_once() {
    let dir = src_layout_repo();
    let s = scan(dir.path(), &ScanOptions::default()).unwrap();
    let index = Index::build(&s);
    let score = |q: &str| {
        index
            .search(q, 10)
            .into_iter()
            .find(|h| h.path == "src/pkgx/units/__init__.py")
            .map(|h| (h.score, h.reasons))
            .unwrap()
    };
    // `pkgx.units` as a dotted path and again through the names imported from it.
    let (once, reasons) = score("Wrong value\n\nimport pkgx.units\n");
    let (many, _) =
        score("Wrong value\n\nimport pkgx.units\nfrom pkgx.units import alpha_one, beta_two\n");
    assert!(
        reasons.iter().any(|r| r == "module pkgx.units"),
        "{reasons:?}"
    );
    assert!((many - once).abs() < 0.5, "{once} vs {many}");
}

#[test]
fn the_second_stage_reorders_the_first_stages_best_files() {
    use dandori_repo::retrieval::analyze;
    use dandori_repo::retrieval::rerank::RERANK_MIN_FILES;
    use dandori_repo::retrieval::rerank::{FEATURE_NAMES, FEATURES};
    let dir = src_layout_repo();
    // Enough files for the second stage to apply.
    for i in 0..RERANK_MIN_FILES {
        write(
            dir.path(),
            &format!("src/pkgx/page{i}.py"),
            format!(
                "from pkgx.render import render_page

def page{i}(doc):
    return render_page(doc)
"
            ),
        );
    }
    let s = scan(dir.path(), &ScanOptions::default()).unwrap();
    let mut index = Index::build(&s);
    let q = analyze("render_page fails\n\nThe page layout raises in `layout_blocks`.");
    let features = index.rank_features(&q, 50);
    assert_eq!(FEATURE_NAMES.len(), FEATURES);
    assert!(!features.is_empty());
    assert!(features.iter().all(|(_, f)| f.len() == FEATURES));
    // In first-stage order: the first file's first-stage score is the best.
    assert_eq!(features[0].1[0], 1.0);
    let paths = |hits: Vec<dandori_repo::Hit>| {
        let mut p: Vec<String> = hits.into_iter().map(|h| h.path).collect();
        p.sort();
        p
    };
    let second = index.search_analyzed(&q, 50);
    assert!(second.windows(2).all(|w| w[0].score >= w[1].score));
    index.set_weights(RankingWeights {
        rerank: 0.0,
        ..RankingWeights::default()
    });
    let first = index.search_analyzed(&q, 50);
    assert_eq!(first[0].path, features[0].0);
    // The same files, possibly in another order.
    assert_eq!(paths(second), paths(first));
}
