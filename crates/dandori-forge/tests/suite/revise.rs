use std::path::{Path, PathBuf};

use chrono::{Duration, Utc};
use dandori_config::RevisionConfig;
use dandori_forge::revise::{self, Edit, Feedback, FeedbackSource, Outcome};
use dandori_plan::Planning;
use dandori_plan::validation::CommandVerdict;

pub fn run_dir() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../dandori-plan/tests/fixtures/seed004_sample.json");
    let dir = t.path().join("run");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(src, dir.join("planning.json")).unwrap();
    (t, dir)
}

/// Offline edits, every command allowed.
pub fn revise_offline(
    dir: &Path,
    feedback: &[Feedback],
    cfg: &RevisionConfig,
    approval_needed: bool,
    now: chrono::DateTime<Utc>,
) -> Result<Outcome, dandori_forge::ForgeError> {
    let judge = |_: &str| -> Option<CommandVerdict> { None };
    revise::revise(dir, feedback, None, &judge, cfg, approval_needed, now)
}

pub fn planning(dir: &Path) -> Planning {
    serde_json::from_slice(&std::fs::read(dir.join("planning.json")).unwrap()).unwrap()
}

fn explicit(text: &str) -> Vec<Feedback> {
    vec![Feedback {
        source: FeedbackSource::Explicit,
        author: None,
        comment_id: None,
        text: text.into(),
    }]
}

#[test]
fn edits_are_parsed_from_plain_lines() {
    let e = revise::parse_edits(
        "Thanks! A few changes:\n- add files src/health.rs, `tests/health.rs` to S01\n- drop step S3\n\
         - add step: Document it in `docs/health.md`\nlanguage: Go\n- constraint: no new dependencies\nS02 を削除\n\
         please be careful",
    );
    assert_eq!(
        e,
        vec![
            Edit::AddFiles {
                step: Some("S01".into()),
                paths: vec!["src/health.rs".into(), "tests/health.rs".into()]
            },
            Edit::DropStep { step: "S03".into() },
            Edit::AddStep {
                title: "Document it in docs/health.md".into(),
                paths: vec!["docs/health.md".into()],
                before: None,
                commands: None,
            },
            Edit::Language {
                language: "go".into()
            },
            Edit::Constraint {
                text: "no new dependencies".into()
            },
            Edit::DropStep { step: "S02".into() },
        ]
    );
    assert!(revise::parse_edits("looks good to me").is_empty());
}

#[test]
fn a_revision_applies_edits_records_a_human_reflection_and_history() {
    let (_t, dir) = run_dir();
    let cfg = RevisionConfig::default();
    let out = revise_offline(
        &dir,
        &explicit("add file src/extra.py\nadd step: Write `docs/usage.md`"),
        &cfg,
        false,
        Utc::now(),
    )
    .unwrap();
    let Outcome::Applied { revision, changes } = out else {
        panic!("{out:?}")
    };
    assert_eq!(revision, 1);
    assert_eq!(changes.len(), 2, "{changes:?}");
    let p = planning(&dir);
    // The step budget follows the added step (a run would pause, exit 5, otherwise).
    assert!(
        p.limits.max_steps_per_run >= p.steps.len() as u64,
        "{} < {}",
        p.limits.max_steps_per_run,
        p.steps.len()
    );
    assert!(
        p.steps[0]
            .scope
            .target_paths
            .contains(&"src/extra.py".to_string())
    );
    assert_eq!(p.steps[1].step_id, "S02");
    assert_eq!(
        p.steps[1].depends_on.as_deref(),
        Some(&["S01".to_string()][..])
    );
    assert_eq!(p.steps[1].scope.target_paths, vec!["docs/usage.md"]);
    assert_eq!(
        p.extra.get("revision_attempts"),
        Some(&serde_json::json!(1))
    );
    assert!(
        dir.join("revisions/planning.r0.json").is_file(),
        "the old plan is kept"
    );
    let h = revise::load_history(&dir).unwrap();
    assert_eq!(h.revision_attempts, 1);
    let r = &h.entries[0].reflection;
    assert_eq!(r["feedback_type"], "human");
    assert_eq!(r["feedback_source"], "explicit");
    assert_eq!(r["reflection"]["plan_revision_needed"], true);
    assert_eq!(r["plan_revision"]["changes"].as_array().unwrap().len(), 2);
    // The revised plan validates.
    let text = std::fs::read_to_string(dir.join("planning.json")).unwrap();
    assert!(
        dandori_plan::validation::validate_str(&text)
            .findings
            .iter()
            .all(|f| f.severity != dandori_plan::validation::Severity::Fail)
    );
}

#[test]
fn nothing_to_apply_and_the_revision_limit_are_reason_codes() {
    let (_t, dir) = run_dir();
    let cfg = RevisionConfig {
        max_revisions: 2,
        max_history_in_memory: 1,
        max_history_on_disk: 2,
        ..RevisionConfig::default()
    };
    let e = revise_offline(&dir, &explicit("lgtm"), &cfg, false, Utc::now()).unwrap_err();
    assert_eq!(e.code(), "REVISION_NO_CHANGES");
    for i in 0..2 {
        revise_offline(
            &dir,
            &explicit(&format!("constraint: rule {i}")),
            &cfg,
            false,
            Utc::now(),
        )
        .unwrap();
    }
    let e =
        revise_offline(&dir, &explicit("constraint: more"), &cfg, false, Utc::now()).unwrap_err();
    assert_eq!(e.code(), "REVISION_LIMIT_REACHED");
    let h = revise::load_history(&dir).unwrap();
    assert_eq!(h.revision_attempts, 2);
    assert_eq!(h.entries.len(), 1, "max_history_in_memory");
    assert_eq!(h.summarized.len(), 1);
    assert!(h.summarized[0].contains("rule 0"));
}

#[test]
fn history_on_disk_is_bounded() {
    let (_t, dir) = run_dir();
    let cfg = RevisionConfig {
        max_revisions: 10,
        max_history_in_memory: 2,
        max_history_on_disk: 3,
        ..RevisionConfig::default()
    };
    for i in 0..6 {
        revise_offline(
            &dir,
            &explicit(&format!("constraint: c{i}")),
            &cfg,
            false,
            Utc::now(),
        )
        .unwrap();
    }
    let h = revise::load_history(&dir).unwrap();
    assert_eq!(h.entries.len(), 2);
    assert_eq!(h.entries.len() + h.summarized.len(), 3);
    let snapshots = std::fs::read_dir(dir.join("revisions"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("planning.r")
        })
        .count();
    assert_eq!(snapshots, 3);
}

#[test]
fn approval_pauses_the_revision_until_approved_or_timed_out() {
    let (_t, dir) = run_dir();
    let cfg = RevisionConfig {
        approval_timeout: 60,
        ..RevisionConfig::default()
    };
    let before = std::fs::read(dir.join("planning.json")).unwrap();
    let out = revise_offline(
        &dir,
        &explicit("constraint: keep it small"),
        &cfg,
        true,
        Utc::now(),
    )
    .unwrap();
    assert!(
        matches!(
            out,
            Outcome::AwaitingApproval {
                revision: 1,
                timeout: 60,
                ..
            }
        ),
        "{out:?}"
    );
    assert_eq!(
        std::fs::read(dir.join("planning.json")).unwrap(),
        before,
        "unchanged until approved"
    );
    let e =
        revise_offline(&dir, &explicit("constraint: other"), &cfg, true, Utc::now()).unwrap_err();
    assert_eq!(e.code(), "APPROVAL_PENDING");
    assert_eq!(revise::approve(&dir, "lead", &cfg, Utc::now()).unwrap(), 1);
    assert!(
        planning(&dir)
            .context
            .constraints
            .contains(&"keep it small".to_string())
    );
    assert_eq!(
        revise::load_history(&dir).unwrap().entries[0]
            .approved_by
            .as_deref(),
        Some("lead")
    );

    // Past approval_timeout the revision is dropped.
    revise_offline(&dir, &explicit("constraint: late"), &cfg, true, Utc::now()).unwrap();
    let e = revise::approve(&dir, "lead", &cfg, Utc::now() + Duration::seconds(61)).unwrap_err();
    assert_eq!(e.code(), "APPROVAL_TIMEOUT");
    assert!(revise::load_pending(&dir).unwrap().is_none());
    assert!(
        !planning(&dir)
            .context
            .constraints
            .contains(&"late".to_string())
    );
}

#[test]
fn language_change_renames_targets_and_sets_the_environment() {
    let (_t, dir) = run_dir();
    revise_offline(
        &dir,
        &explicit("add file app/main.py"),
        &RevisionConfig::default(),
        false,
        Utc::now(),
    )
    .unwrap();
    revise_offline(
        &dir,
        &explicit("use go instead"),
        &RevisionConfig::default(),
        false,
        Utc::now(),
    )
    .unwrap();
    let p = planning(&dir);
    assert!(
        p.steps[0]
            .scope
            .target_paths
            .contains(&"app/main.go".to_string())
    );
    assert_eq!(p.selected_environment.unwrap().name, "go");
    assert!(
        p.context
            .constraints
            .contains(&"Implement in go".to_string())
    );
}

#[test]
fn stage_follows_the_revised_steps_keeping_unchanged_done_steps() {
    let (_t, dir) = run_dir();
    let p = planning(&dir);
    let mut stage = dandori_plan::Stage::for_planning(&p, "2026-01-01T00:00:00Z");
    stage.steps[0].status = dandori_plan::StepStatus::Done;
    stage.steps[0].commit = Some("abc".into());
    stage.current_step_index = 1;
    std::fs::write(
        dir.join("stage.json"),
        serde_json::to_string(&stage).unwrap(),
    )
    .unwrap();
    revise_offline(
        &dir,
        &explicit("add step: Write `docs/more.md`"),
        &RevisionConfig::default(),
        false,
        Utc::now(),
    )
    .unwrap();
    let s: dandori_plan::Stage =
        serde_json::from_slice(&std::fs::read(dir.join("stage.json")).unwrap()).unwrap();
    let ids: Vec<&str> = s.steps.iter().map(|x| x.step_id.as_str()).collect();
    assert_eq!(ids, ["S01", "S02"]);
    assert_eq!(
        s.steps[0].commit.as_deref(),
        Some("abc"),
        "S01 is unchanged: its progress stays"
    );
    assert_eq!(s.steps[1].status, dandori_plan::StepStatus::Pending);
    assert_eq!(s.current_step_index, 1);
}
