//! Issue 10, session 4: what in an issue text is evidence and what is noise —
//! issue-template comments, the plain words of a log in a code block, a test
//! word in a title, the traceback header, exception class names, the title's
//! own names, a list of modules, common-word literals, `Class.member`.

use dandori_repo::retrieval::{RankingWeights, analyze};
use dandori_repo::{Index, ScanOptions, scan};

use super::support::write;

fn index_of(files: &[(&str, &str)]) -> (tempfile::TempDir, Index) {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        write(dir.path(), path, text);
    }
    let s = scan(dir.path(), &ScanOptions::default()).unwrap();
    let index = Index::build(&s);
    (dir, index)
}

fn rank(index: &Index, query: &str, path: &str) -> Option<usize> {
    index.search(query, 20).iter().position(|h| h.path == path)
}

#[test]
fn html_comments_of_an_issue_template_are_not_read() {
    let q = analyze(
        "Crash in `render_page`\n<!-- Please check `validate_config` and the\n```python\nother_helper()\n```\nbefore you submit -->\nIt crashes.",
    );
    assert!(q.identifiers.iter().any(|i| i == "render_page"), "{q:?}");
    for hidden in ["validate_config", "other_helper"] {
        assert!(
            !q.identifiers.iter().any(|i| i == hidden),
            "{hidden}: {q:?}"
        );
    }
}

#[test]
fn only_code_shaped_words_of_a_code_block_are_identifiers() {
    let q = analyze(
        "polyval gives wrong results\n\n```python\nimport xarray as xr\nvalues = xr.polyval(coords, params)\nprint(values)\n```\n\n```\n<xarray.DataArray (azimuth_time: 6)>\nDimensions: time\nCoordinates: data\n```\n",
    );
    let has = |n: &str| q.identifiers.iter().any(|i| i == n);
    // Calls, attributes and snake_case names are code.
    assert!(has("polyval") && has("azimuth_time"), "{:?}", q.identifiers);
    // The words of a repr, the fence's language tag, a module alias and a
    // builtin the example calls are not.
    for noise in [
        "Dimensions",
        "Coordinates",
        "data",
        "time",
        "python",
        "xr",
        "print",
    ] {
        assert!(!has(noise), "{noise} in {:?}", q.identifiers);
    }
    // A method named like a builtin is still a name of the code.
    let q = analyze("Wrong rows\n\n```\nqs = Item.objects.filter(x=1)\n```\n");
    assert!(
        q.identifiers.iter().any(|i| i == "filter"),
        "{:?}",
        q.identifiers
    );
}

#[test]
fn a_test_word_in_a_bug_title_is_not_a_request_about_tests() {
    for title in [
        "Dynamically adding xfail marker in test no longer ignores failure",
        "unittest.TestCase.tearDown executed for classes marked with `unittest.skip`",
        "URLValidator tests failing on Python versions patched for bpo-43882",
    ] {
        assert!(!analyze(title).about_tests, "{title}");
    }
    for title in [
        "Add tests for the date parser",
        "Fix the flaky test in test_session.py",
        "Increase test coverage of the CLI",
        "tests: cover the empty config",
        "Write unit tests for `parse_range`",
        "ログイン機能のテストを追加する",
    ] {
        assert!(analyze(title).about_tests, "{title}");
    }
}

#[test]
fn the_traceback_header_is_not_a_message_of_the_formatter() {
    let (_dir, index) = index_of(&[
        (
            "app/debug.py",
            "def format_exc(tb):\n    lines = ['Traceback (most recent call last):']\n    return lines\n",
        ),
        (
            "app/orders.py",
            "def place_order(cart):\n    raise ValueError('the cart holds no priced items')\n",
        ),
    ]);
    let hits = index.search(
        "Order crash\n\nTraceback (most recent call last):\n  File \"/srv/app/orders.py\", line 2, in place_order\nValueError: the cart holds no priced items\n",
        5,
    );
    assert_eq!(hits[0].path, "app/orders.py", "{hits:#?}");
    let debug = hits.iter().find(|h| h.path == "app/debug.py");
    assert!(
        debug.is_none_or(|h| !h.reasons.iter().any(|r| r.starts_with("emits"))),
        "{hits:#?}"
    );
}

#[test]
fn an_exception_class_name_is_weak_evidence_of_where_the_change_goes() {
    let files = [
        (
            "db/utils.py",
            "class ProgrammingError(Exception):\n    pass\n\nclass OperationalError(Exception):\n    pass\n",
        ),
        (
            "db/compiler.py",
            "class SQLCompiler:\n    def as_sql(self):\n        return self.group_by_clause()\n\n    def group_by_clause(self):\n        return 'GROUP BY'\n",
        ),
        ("db/expressions.py", "class Value:\n    pass\n"),
    ];
    let (_dir, mut index) = index_of(&files);
    let issue = "Constant expressions end up in the GROUP BY clause\n\nThe query built by `group_by_clause` fails with django.db.utils.ProgrammingError: aggregate functions are not allowed in GROUP BY\n";
    assert_eq!(rank(&index, issue, "db/compiler.py"), Some(0));
    let defaults = RankingWeights::default();
    assert!(defaults.exception_name < 1.0);
    index.set_weights(RankingWeights {
        exception_name: 1.0,
        ..defaults
    });
    let hits = index.search(issue, 5);
    let score = |p: &str| hits.iter().find(|h| h.path == p).map_or(0.0, |h| h.score);
    let full = score("db/utils.py");
    index.set_weights(defaults);
    let hits = index.search(issue, 5);
    let discounted = hits
        .iter()
        .find(|h| h.path == "db/utils.py")
        .map_or(0.0, |h| h.score);
    assert!(discounted < full, "{full} -> {discounted}");
}

#[test]
fn names_in_the_title_outweigh_names_of_the_example() {
    let (_dir, mut index) = index_of(&[
        ("lib/zeta.py", "def polylog(s, z):\n    return s\n"),
        (
            "lib/core.py",
            "def expand_func(e):\n    return e\n\ndef nsimplify(e):\n    return e\n",
        ),
    ]);
    let issue =
        "Add evaluation for polylog\n\n```\n>>> nsimplify(expand_func(polylog(2, 1/2)))\n```\n";
    let ratio = |index: &Index| {
        let hits = index.search(issue, 5);
        let score = |p: &str| hits.iter().find(|h| h.path == p).unwrap().score;
        score("lib/zeta.py") / score("lib/core.py")
    };
    // The first stage's scores: what the knob weighs.
    let defaults = RankingWeights {
        rerank: 0.0,
        ..RankingWeights::default()
    };
    assert!(defaults.title_evidence > 1.0);
    index.set_weights(defaults);
    let with_title = ratio(&index);
    index.set_weights(RankingWeights {
        title_evidence: 1.0,
        ..defaults
    });
    let without = ratio(&index);
    assert!(with_title > without * 1.05, "{without} -> {with_title}");
}

#[test]
fn a_list_of_extension_modules_spreads_its_evidence() {
    let mut files: Vec<(String, String)> = (0..6)
        .map(|i| {
            (
                format!("docgen/ext/ext{i}/__init__.py"),
                format!("def setup_ext{i}(app):\n    return app\n"),
            )
        })
        .collect();
    files.push((
        "docgen/domains/python.py".into(),
        "def render_type_hint(annotation):\n    \"\"\"Render a type hint of a signature.\"\"\"\n    return annotation\n".into(),
    ));
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let (_dir, index) = index_of(&files);
    let issue = "Type hint of a signature is rendered without a link\n\nconf.py:\n\n```python\nextensions = ['docgen.ext.ext0', 'docgen.ext.ext1', 'docgen.ext.ext2', 'docgen.ext.ext3', 'docgen.ext.ext4', 'docgen.ext.ext5']\n```\n\nThe type hint in the signature has no link.";
    assert_eq!(rank(&index, issue, "docgen/domains/python.py"), Some(0));
}

#[test]
fn a_literal_of_common_words_says_less_than_a_specific_one() {
    let (_dir, mut index) = index_of(&[
        (
            "app/storage.py",
            "def load(path):\n    raise KeyError('does not exist in the store')\n",
        ),
        (
            "app/anchors.py",
            "def check_anchor(url):\n    raise ValueError('anchor not found in the response')\n",
        ),
        (
            "app/a.py",
            "def does(x):\n    return not x  # exist in the store\n",
        ),
        (
            "app/b.py",
            "def store(x):\n    return x  # does not exist\n",
        ),
        ("app/c.py", "def exist(x):\n    return x  # the store\n"),
    ]);
    let issue = "Checking fails: anchor not found in the response, although the page does not exist in the store";
    let ratio = |index: &Index| {
        let hits = index.search(issue, 10);
        let score = |p: &str| hits.iter().find(|h| h.path == p).unwrap().score;
        score("app/anchors.py") / score("app/storage.py")
    };
    let defaults = RankingWeights::default();
    assert!(defaults.literal_idf > 0.0);
    let weighted = ratio(&index);
    index.set_weights(RankingWeights {
        literal_idf: 0.0,
        ..defaults
    });
    let flat = ratio(&index);
    assert!(weighted > flat * 1.05, "{flat} -> {weighted}");
    assert!(weighted > 1.0, "{weighted}");
}

#[test]
fn class_dot_member_finds_the_file_defining_both() {
    let (_dir, index) = index_of(&[
        (
            "core/dataset.py",
            "class Dataset:\n    def to_stacked_array(self, dim):\n        return self\n\n    def merge(self, other):\n        return self\n",
        ),
        (
            "core/dataarray.py",
            "class DataArray:\n    def to_unstacked_dataset(self, dim):\n        return self\n\n    def to_stacked_array(self, dim):\n        return self\n",
        ),
        ("core/merge.py", "class Dataset:\n    pass\n"),
    ]);
    let hits = index.search(
        "Roundtrip fails for single-dimension variables\n\nCalling Dataset.to_stacked_array then DataArray.to_unstacked_dataset breaks.",
        5,
    );
    let ds = hits.iter().find(|h| h.path == "core/dataset.py").unwrap();
    assert!(
        ds.reasons
            .iter()
            .any(|r| r == "defines Dataset.to_stacked_array"),
        "{hits:#?}"
    );
}

// Issue 26: template boilerplate, message words, generic definitions, rendering.

#[test]
fn template_lines_and_the_words_of_an_error_message_are_not_names() {
    let q = analyze(
        "Merge fails on empty frames\n\n```\nTypeError: cannot convert type(s) of the value\n```\n\nOutput of `pip list`: numpy_extra 1.0\n\nCalling `merge_frames` raises it.",
    );
    let has = |n: &str| q.identifiers.iter().any(|i| i == n);
    assert!(has("merge_frames"), "{:?}", q.identifiers);
    for noise in ["type", "numpy_extra"] {
        assert!(!has(noise), "{noise} in {:?}", q.identifiers);
    }
    // A message word the text also writes as code stays a name.
    let q =
        analyze("Bad convert\n\nValueError: cannot convert x\n\nThe `convert` helper is wrong.");
    assert!(
        q.identifiers.iter().any(|i| i == "convert"),
        "{:?}",
        q.identifiers
    );
}

#[test]
fn a_file_defining_many_generic_names_does_not_win_on_them() {
    // A compatibility module redefining the library's common functions, each
    // also defined where it belongs.
    let compat = "def expand(x):\n    pass\n\ndef simplify(x):\n    pass\n\ndef evaluate(x):\n    pass\n\ndef series(x):\n    pass\n";
    let (_d, index) = index_of(&[
        ("lib/compat.py", compat),
        (
            "lib/core.py",
            "def expand(x):\n    pass\n\ndef simplify(x):\n    pass\n",
        ),
        (
            "lib/calc.py",
            "def evaluate(x):\n    pass\n\ndef series(x):\n    pass\n",
        ),
        (
            "lib/more.py",
            "def expand(x):\n    pass\n\ndef series(x):\n    pass\n\ndef evaluate(x):\n    pass\n\ndef simplify(x):\n    pass\n",
        ),
        ("lib/zeta.py", "def polylog(s, z):\n    pass\n"),
    ]);
    let q = "polylog is not expanded\n\n```python\npolylog(2, z).expand()\nsimplify(x)\nevaluate(x)\nseries(x)\n```";
    assert_eq!(rank(&index, q, "lib/zeta.py"), Some(0));
}

#[test]
fn a_report_about_printing_favours_the_printer() {
    let (_d, mut index) = index_of(&[
        (
            "pkg/matrix.py",
            "class Matrix:\n    def det(self):\n        pass\n",
        ),
        (
            "pkg/printing/pretty.py",
            "def pretty_matrix(m):\n    # Matrix rows between brackets\n    pass\n",
        ),
    ]);
    let q = analyze(
        "Matrix is printed without its brackets\n\nThe pretty printing of a `Matrix` drops the brackets.",
    );
    assert!(q.about_rendering);
    let top = index.search_analyzed(&q, 5);
    assert_eq!(top[0].path, "pkg/printing/pretty.py", "{top:?}");
    // Without the intent, the first stage puts the class's definition first.
    index.set_weights(RankingWeights {
        render_intent: 0.0,
        rerank: 0.0,
        ..RankingWeights::default()
    });
    assert_eq!(index.search_analyzed(&q, 5)[0].path, "pkg/matrix.py");
    // A reproducer's `print(` call is not a report about printing.
    assert!(
        !analyze("Matrix det is wrong\n\n```python\nprint(Matrix().det())\n```").about_rendering
    );
}
