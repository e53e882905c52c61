//! Issue 39: every form of a known secret (the eleven encodings and the split
//! forms of dandori_test_support::secret_forms) is refused before a commit when an
//! agent writes it, and masked in every artefact a run leaves when a plan's unit
//! command carries it: the agent's and the unit's logs, `evidence/Sxx.json`, the
//! step commit's message and `Dandori-Check` trailers, the trace, the report.

use std::collections::BTreeMap;
use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::*;
use dandori_test_support::secret_forms::{SECRET, SECRET_VAR, forms};
use dandori_trace::Masker;

fn masker() -> Masker {
    let env = BTreeMap::from([(SECRET_VAR.to_string(), SECRET.to_string())]);
    Masker::default().with_env_secrets(&env)
}

/// Every file below `dir` with the secret in any form, named with the form found.
fn files_holding_secret(dir: &Path, m: &Masker, out: &mut Vec<String>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            files_holding_secret(&p, m, out);
        } else if let Ok(bytes) = std::fs::read(&p)
            && m.holds_secret(&String::from_utf8_lossy(&bytes))
        {
            out.push(p.display().to_string());
        }
    }
}

fn options_with_secret(repo: &Repo, run_dir: &Path, agent: &Path) -> dandori_runner::RunOptions {
    let mut opts = options(
        repo,
        run_dir,
        Some(format!("sh {} {{step_id}}", agent.display())),
    );
    opts.base_env
        .insert(SECRET_VAR.to_string(), SECRET.to_string());
    opts
}

#[test]
fn every_form_an_agent_writes_is_refused_before_a_commit() {
    let m = masker();
    let mut failures = Vec::new();
    for (name, text) in forms(SECRET) {
        let repo = Repo::new();
        // The agent writes the form into a file and prints it into its own log.
        let agent = repo.agent(&format!(
            "mkdir -p src\ncat > src/out.txt <<'PLANTED'\nfirst line\n{text}\nlast line\nPLANTED\ncat src/out.txt"
        ));
        let run_dir = repo.write_plan(&planning(vec![S::new("S01")], json!({})));
        run(&options_with_secret(&repo, &run_dir, &agent)).unwrap();
        let reason = stage(&run_dir)["steps"][0]["reason_code"].clone();
        if reason != "SECRET_DETECTED" {
            failures.push(format!("{name}: {reason}"));
            continue;
        }
        assert_eq!(repo.commits("dandori/RQ-1/run-1"), vec![], "{name}");
        let history = repo.git(&["log", "--all", "-p", "--format=%H %s%n%b"]);
        assert!(!m.holds_secret(&history), "{name} in git history");
        let mut held = Vec::new();
        files_holding_secret(&run_dir, &m, &mut held);
        if !held.is_empty() {
            failures.push(format!("{name} kept in {held:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_form_in_a_unit_command_is_masked_in_evidence_trailers_and_logs() {
    let m = masker();
    let repo = Repo::new();
    let agent = repo.agent("mkdir -p src && echo done > src/S01");
    let units: Vec<String> = forms(SECRET)
        .into_iter()
        .map(|(_, text)| format!("echo '{text}'"))
        .collect();
    let mut step = S::new("S01");
    for u in &units {
        step = step.unit(u);
    }
    let run_dir = repo.write_plan(&planning(vec![step], json!({})));
    run(&options_with_secret(&repo, &run_dir, &agent)).unwrap();
    assert_eq!(statuses(&run_dir), vec![("S01".into(), "done".into())]);
    let message = repo.git(&["log", "-1", "--format=%B", "dandori/RQ-1/run-1"]);
    let checks: Vec<&str> = message
        .lines()
        .filter(|l| l.starts_with("Dandori-Check: "))
        .collect();
    assert_eq!(checks.len(), units.len(), "{message}");
    for check in &checks {
        assert!(check.contains("***"), "{check}");
    }
    assert!(!m.holds_secret(&message), "{message}");
    let history = repo.git(&["log", "--all", "-p", "--format=%H %s%n%b"]);
    assert!(!m.holds_secret(&history), "{history}");
    let evidence = std::fs::read_to_string(run_dir.join("evidence/S01.json")).unwrap();
    assert!(!m.holds_secret(&evidence), "{evidence}");
    // Still the evidence: one run per unit command.
    let v: serde_json::Value = serde_json::from_str(&evidence).unwrap();
    assert_eq!(v["runs"].as_array().map(Vec::len), Some(units.len()), "{v}");
    // Nothing the run wrote holds it (planning.json is the input, as given).
    let mut held = Vec::new();
    files_holding_secret(&run_dir, &m, &mut held);
    held.retain(|p| !p.ends_with("/planning.json"));
    assert_eq!(held, Vec::<String>::new());
}
