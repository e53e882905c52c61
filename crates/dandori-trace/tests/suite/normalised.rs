//! Every form of a planted secret (dandori_test_support::secret_forms: the eleven
//! encodings and the split forms) is refused by the pre-commit scan and masked by
//! the masker, through the one normalising matcher.

use std::collections::BTreeMap;

use dandori_test_support::secret_forms::{SECRET, SECRET_VAR, forms};
use dandori_trace::Masker;
use dandori_trace::secret_scan::{redact_patch, scan_diff};
use pretty_assertions::assert_eq;

fn masker() -> Masker {
    let env = BTreeMap::from([(SECRET_VAR.to_string(), SECRET.to_string())]);
    Masker::default().with_env_secrets(&env)
}

/// Whether `text` still holds the secret, as written or in any form the view
/// decodes or joins.
fn holds_secret(text: &str) -> bool {
    masker().holds_secret(text)
}

fn new_file_diff(path: &str, text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = format!(
        "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n",
        lines.len() + 2
    );
    out.push_str("+first line\n");
    for l in &lines {
        out.push_str(&format!("+{l}\n"));
    }
    out.push_str("+last line\n");
    out
}

#[test]
fn every_form_is_refused_before_a_commit() {
    let m = masker();
    for (name, text) in forms(SECRET) {
        let diff = new_file_diff("src/leak.txt", &text);
        let findings = scan_diff(&diff, &m.literal_secrets());
        let lines = text.lines().count() as u64;
        assert!(!findings.is_empty(), "{name} not found:\n{text}");
        for f in &findings {
            assert!(
                f.kind.starts_with(&format!("env_value:{SECRET_VAR}"))
                    || f.kind == "high_entropy_assignment",
                "{name}: {f:?}"
            );
            assert!(
                f.line >= 2 && f.end_line.unwrap_or(f.line) <= lines + 1,
                "{name}: {f:?}"
            );
        }
        // The patch kept for review loses every line the secret is on.
        let kept = redact_patch(&diff, &findings, &m);
        assert!(!holds_secret(&kept), "{name} kept in the patch:\n{kept}");
        assert!(
            kept.contains("+first line") && kept.contains("+last line"),
            "{kept}"
        );
    }
}

#[test]
fn every_form_is_masked() {
    let m = masker();
    for (name, text) in forms(SECRET) {
        let logged = format!("step S01: agent wrote\n{text}\nTOKEN_BUDGET_EXCEEDED done");
        let masked = m.mask_str(&logged);
        assert!(!holds_secret(&masked), "{name}:\n{masked}");
        assert!(masked.contains("***"), "{name}: {masked}");
        assert!(masked.contains("TOKEN_BUDGET_EXCEEDED done"), "{masked}");
        assert!(masked.starts_with("step S01: agent wrote\n"), "{masked}");
        // Inside a JSON value too (trace events, evidence, MCP answers).
        let v = m.mask_strings(serde_json::json!({"out": logged}));
        assert!(!holds_secret(v["out"].as_str().unwrap()), "{name}: {v}");
    }
}

#[test]
fn a_credential_shape_split_over_literals_is_found_and_masked() {
    let token = format!("ghp_{}", "a1B2c3D4e5F6g7H8".repeat(3));
    let (a, b) = token.split_at(12);
    let text = format!("TOKEN = \"{a}\" +\n    \"{b}\"\n");
    // The first half alone is a random-looking assignment; the whole token spans
    // both lines, so both are removed from the kept patch.
    let findings = scan_diff(&new_file_diff("cfg.py", &text), &[]);
    assert_eq!(
        findings
            .iter()
            .map(|f| (f.line, f.end_line, f.kind.as_str()))
            .collect::<Vec<_>>(),
        vec![
            (2, None, "high_entropy_assignment"),
            (2, Some(3), "github_token")
        ]
    );
    let masked = Masker::default().mask_str(&text);
    assert!(!masked.contains(a) && !masked.contains(b), "{masked}");
}

#[test]
fn every_form_is_held() {
    for (name, text) in forms(SECRET) {
        assert!(holds_secret(&text), "{name}: {text}");
    }
    assert!(!holds_secret(
        "TOKEN_BUDGET_EXCEEDED: nothing secret %41 \\u0041"
    ));
}

#[test]
fn reason_codes_and_ordinary_text_are_left_alone() {
    let m = masker();
    let text =
        "SECRET_DETECTED: S01\nPOLICY_SECRET_READ \"a\" + \"b\"\n100% done, see %PATH% and \\n";
    assert_eq!(m.mask_str(text), text);
    let diff = new_file_diff(
        "README.md",
        "encoded %41%42 and \\u0041 are fine\n\"ab\" \"cd\"",
    );
    assert_eq!(scan_diff(&diff, &m.literal_secrets()), vec![]);
}
