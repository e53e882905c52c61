use pretty_assertions::assert_eq;

use dandori_repo::eval::{LocalizeOptions, load_dataset, run};

use super::support::{commit_all, git, write};

/// A clone at `repos/acme__shop` with two commits, and a dataset whose first
/// instance is at the first commit.
fn fixture() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let clone = dir.path().join("repos/acme__shop");
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
    write(&clone, "README.md", "# shop\n");
    let first = commit_all(&clone, "one");
    write(
        &clone,
        "shop/shipping.py",
        "def shipping_cost(weight):\n    return weight * 2\n",
    );
    let second = commit_all(&clone, "two");
    let patch =
        |f: &str| format!("diff --git a/{f} b/{f}\n--- a/{f}\n+++ b/{f}\n@@ -1 +1 @@\n-a\n+b\n");
    let dataset = serde_json::json!([
        {"instance_id": "acme__shop-1", "repo": "acme/shop", "base_commit": first,
         "problem_statement": "Cart.total() is wrong when the cart is empty", "patch": patch("shop/cart.py")},
        {"instance_id": "acme__shop-2", "repo": "acme/shop", "base_commit": second,
         "problem_statement": "shipping_cost ignores the weight unit", "golden_patch": patch("shop/shipping.py")},
        {"instance_id": "acme__shop-3", "repo": "acme/shop", "base_commit": first,
         "problem_statement": "PaymentGateway.charge should round", "patch_files": ["shop/payment.py"]},
        {"instance_id": "other__x-1", "repo": "other/x", "base_commit": first,
         "problem_statement": "x", "patch_files": ["x.py"]}
    ]);
    let path = dir.path().join("dataset.json");
    std::fs::write(&path, serde_json::to_string(&dataset).unwrap()).unwrap();
    (dir, path)
}

#[test]
fn evaluates_clones_at_base_commits_without_touching_them() {
    let (dir, dataset) = fixture();
    let clone = dir.path().join("repos/acme__shop");
    let head_before = git(&clone, &["rev-parse", "HEAD"]);
    let report = run(
        &LocalizeOptions {
            dataset,
            repos: dir.path().join("repos"),
            baseline: true,
            limit: None,
            scan: Default::default(),
            split: Default::default(),
        },
        &mut |_| {},
    )
    .unwrap();
    assert_eq!((report.evaluated, report.skipped), (3, 1));
    assert_eq!(report.dandori.hit_at_1, 1.0);
    // Every evaluated instance is timed; the skipped one is not.
    assert!(report.instances[..3].iter().all(|r| {
        r.timing
            .is_some_and(|t| t.index_ms > 0.0 && t.query_ms > 0.0)
    }));
    assert!(report.instances[3].timing.is_none());
    assert!(report.latency.request_p95_ms >= report.latency.request_p50_ms);
    assert!(report.latency.request_p50_ms >= report.latency.query_p50_ms);
    assert_eq!(report.dandori.target_recall, 1.0);
    assert!(report.baseline.is_some());
    let skipped = report.instances[3].skipped.as_deref().unwrap();
    assert!(
        skipped.starts_with("CHECKOUT_FAILED: other__x-1"),
        "{skipped}"
    );
    // Instance 1 saw the tree of the first commit: no shipping.py there.
    let ranked = &report.instances[0].dandori.as_ref().unwrap().ranked;
    assert!(
        !ranked.iter().any(|p| p == "shop/shipping.py"),
        "{ranked:?}"
    );
    // The clone is untouched: same HEAD, clean status, no worktrees.
    assert_eq!(git(&clone, &["rev-parse", "HEAD"]), head_before);
    assert_eq!(git(&clone, &["status", "--porcelain"]), "");
    assert_eq!(git(&clone, &["worktree", "list"]).lines().count(), 1);
}

#[test]
fn dataset_errors_name_the_location() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("d.jsonl");
    std::fs::write(
        &p,
        "{\"instance_id\":\"a\",\"repo\":\"o/n\",\"base_commit\":\"c\",\"problem_statement\":\"p\",\"patch_files\":[\"a.py\"]}\n{\"instance_id\":\"b\",\"repo\":\"o/n\",\"base_commit\":\"c\"}\n",
    )
    .unwrap();
    let err = load_dataset(&p).unwrap_err().to_string();
    assert!(
        err.starts_with("DATASET_INVALID") && err.contains("d.jsonl at line 2"),
        "{err}"
    );
    assert!(err.contains("problem_statement"), "{err}");
}
