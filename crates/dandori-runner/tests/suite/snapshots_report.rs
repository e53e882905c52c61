//! report.md and errors.json of a run with a done, a failed and a skipped step,
//! as snapshots (commit hashes, durations and the timeline are filtered).

use serde_json::json;

use super::support::*;

#[test]
fn report_and_errors_snapshot() {
    let repo = Repo::new();
    let agent = repo.agent(r#"mkdir -p "src/$1"; echo "$1" > "src/$1/out.txt""#);
    let run_dir = repo.write_plan(&planning(
        vec![
            S::new("S01").acs(&["AC-01"]),
            S::new("S02")
                .deps(&["S01"])
                .acs(&["AC-02"])
                .unit("echo 'assertion failed'; exit 1"),
            S::new("S03").deps(&["S02"]).acs(&["AC-03"]),
        ],
        json!({}),
    ));
    let mut opts = options(
        &repo,
        &run_dir,
        Some(format!("sh {} {{step_id}}", agent.display())),
    );
    opts.config.planning.reflection.trigger_interval = Some(0);
    run(&opts).unwrap();
    let report = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    let errors = std::fs::read_to_string(run_dir.join("errors.json")).unwrap();
    insta::with_settings!({filters => vec![
        (r"`[0-9a-f]{10}`", "`[commit]`"),
        (r"\([0-9a-f]{10}\)", "([commit])"),
        (r"\| [0-9]+\.[0-9] s \|", "| [duration] |"),
        (r"(?m)^    (S0[0-9]) : (\w+, )?S0[0-9], [0-9]+, [0-9]+$", "    $1 : [span]"),
        (r#"/tmp/[^ \n"]*"#, "[path]"),
    ]}, {
        insta::assert_snapshot!("report_md", report);
        insta::assert_snapshot!("errors_json", errors);
    });
}
