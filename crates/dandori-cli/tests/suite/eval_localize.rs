//! `dandori eval localize` end to end on a synthetic dataset over a local git
//! clone made here (no network).

use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git on PATH");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn fixture(dir: &Path) -> std::path::PathBuf {
    let clone = dir.join("repos/acme/shop");
    std::fs::create_dir_all(&clone).unwrap();
    write(
        &clone,
        "shop/cart.py",
        "class Cart:\n    def total(self):\n        return sum(self.items)\n",
    );
    write(
        &clone,
        "shop/payment.py",
        "class PaymentGateway:\n    def charge(self, amount):\n        return amount\n",
    );
    write(
        &clone,
        "tests/test_cart.py",
        "from shop.cart import Cart\n\ndef test_total():\n    assert Cart().total() == 0\n",
    );
    git(&clone, &["init", "-q", "-b", "main"]);
    git(&clone, &["add", "-A"]);
    git(&clone, &["commit", "-q", "-m", "one"]);
    let commit = git(&clone, &["rev-parse", "HEAD"]).trim().to_string();
    let lines = [
        serde_json::json!({"instance_id": "acme__shop-1", "repo": "acme/shop", "base_commit": commit,
            "problem_statement": "Cart.total() is wrong for an empty cart",
            "patch": "diff --git a/shop/cart.py b/shop/cart.py\n--- a/shop/cart.py\n+++ b/shop/cart.py\n"}),
        serde_json::json!({"instance_id": "acme__shop-2", "repo": "acme/shop", "base_commit": commit,
            "problem_statement": "PaymentGateway.charge must round amounts",
            "patch_files": ["shop/payment.py"]}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let dataset = dir.join("dataset.jsonl");
    std::fs::write(&dataset, text).unwrap();
    dataset
}

fn dandori(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dandori"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn eval_localize_json_and_table() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = fixture(dir.path());
    let repos = dir.path().join("repos");
    let (d, r) = (dataset.to_str().unwrap(), repos.to_str().unwrap());

    let out = dandori(&[
        "eval",
        "localize",
        d,
        "--repos",
        r,
        "--json",
        "--baseline",
        "bm25",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["evaluated"], 2);
    assert_eq!(report["skipped"], 0);
    assert_eq!(report["dandori"]["hit_at_1"], 1.0);
    assert_eq!(report["dandori"]["target_recall"], 1.0);
    assert_eq!(report["baseline"]["instances"], 2);
    assert_eq!(
        report["instances"][0]["dandori"]["ranked"][0],
        "shop/cart.py"
    );
    assert_eq!(report["by_repo"]["acme/shop"], 2);

    let out = dandori(&["eval", "localize", d, "--repos", r, "--limit", "1"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].ends_with("1 instances evaluated, 0 skipped (acme/shop 1)"),
        "{table}"
    );
    assert!(
        lines[1].starts_with("method") && lines[1].contains("hit@10"),
        "{table}"
    );
    assert!(
        lines[2].starts_with("dandori") && lines[2].contains("1.000"),
        "{table}"
    );
    assert!(lines[3].starts_with("per request: ranking p50 "), "{table}");
    assert_eq!(
        lines.len(),
        4,
        "no baseline row without --baseline: {table}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("[1/1] acme__shop-1"));

    // The held-out half is the instances at odd positions of the file.
    let out = dandori(&[
        "eval", "localize", d, "--repos", r, "--split", "held-out", "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["evaluated"], 1);
    assert_eq!(report["instances"][0]["instance_id"], "acme__shop-2");
    assert!(report["latency"]["request_p50_ms"].as_f64().unwrap() > 0.0);
    assert!(
        report["instances"][0]["timing"]["index_ms"]
            .as_f64()
            .is_some()
    );
}

#[test]
fn eval_localize_errors() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "[{\"instance_id\": 1}]").unwrap();
    let out = dandori(&[
        "eval",
        "localize",
        bad.to_str().unwrap(),
        "--repos",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("DATASET_INVALID")
            && err.contains("bad.json at [0]")
            && err.contains("`instance_id`"),
        "{err}"
    );

    let out = dandori(&[
        "eval",
        "localize",
        bad.to_str().unwrap(),
        "--repos",
        dir.path().to_str().unwrap(),
        "--baseline",
        "tfidf",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bm25"));
}
