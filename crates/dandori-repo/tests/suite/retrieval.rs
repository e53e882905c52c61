use dandori_repo::retrieval::Bm25Baseline;
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
