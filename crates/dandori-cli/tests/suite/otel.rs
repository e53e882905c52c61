//! OpenTelemetry and the human log, end to end: a real `dandori plan` and
//! `dandori run --executor llm` against the fake model server, exporting over
//! OTLP/HTTP to a receiver that decodes the payload (JSON, then protobuf); the span
//! tree, the GenAI attributes, the headers, and that no secret leaves; then the
//! seed §16.4.1 log lines at the configured `planning.logging.level`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dandori_test_support::{FakeLlmServer, OtlpReceiver, ReceivedSpan};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::run_llm::{calc_project, calc_script, dandori};

const KEY: &str = "sk-test-otel0123456789abcdefFAKE";
const OTEL_TOKEN: &str = "otel-secret-token-5566";

/// plan + run with these extra environment variables and config lines; returns
/// the run directory and the stderr of both commands.
fn plan_and_run(
    repo: &Path,
    home: &Path,
    env: &[(&str, &str)],
    config_extra: &str,
) -> (PathBuf, String) {
    let server = FakeLlmServer::start(calc_script()).expect_api_key(KEY);
    let config = home.join("llm.yaml");
    std::fs::write(
        &config,
        format!(
            "llm:\n  default_provider: fake\n  providers:\n    - name: fake\n      kind: openai\n      base_url: {}\n      api_key_env: TEST_OTEL_KEY\n      model: fake-coder\n      stream: false\n      max_retries: 0\n{config_extra}",
            server.base_url()
        ),
    )
    .unwrap();
    let cfg = config.to_str().unwrap();
    // The offline planner (no provider in the plan's config).
    let plan_config = home.join("plan.yaml");
    std::fs::write(
        &plan_config,
        format!("runs:\n  root: .dandori/runs\n{config_extra}"),
    )
    .unwrap();
    let plan = dandori(
        &[
            "plan",
            "requests/RQ-7.md",
            "--json",
            "--config",
            plan_config.to_str().unwrap(),
        ],
        repo,
        home,
        env,
    );
    assert!(
        plan.status.success(),
        "{}",
        String::from_utf8_lossy(&plan.stderr)
    );
    let plan_json: Value = serde_json::from_slice(&plan.stdout).unwrap();
    let run_dir = PathBuf::from(plan_json["run_dir"].as_str().unwrap());
    let mut run_env = env.to_vec();
    run_env.push(("TEST_OTEL_KEY", KEY));
    let run = dandori(
        &[
            "run",
            run_dir.to_str().unwrap(),
            "--executor",
            "llm",
            "--json",
            "--config",
            cfg,
            // A periodic reflection after every third action (a model call).
            "-c",
            "planning.reflection.trigger_interval=3",
        ],
        repo,
        home,
        &run_env,
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let summary: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(summary["status"], json!("completed"), "{summary:#}");
    assert_eq!(server.remaining(), 0);
    (
        run_dir,
        format!(
            "{}{}",
            String::from_utf8_lossy(&plan.stderr),
            String::from_utf8_lossy(&run.stderr)
        ),
    )
}

fn children<'a>(spans: &'a [ReceivedSpan], parent: &ReceivedSpan) -> Vec<&'a ReceivedSpan> {
    spans
        .iter()
        .filter(|s| s.parent_span_id.as_deref() == Some(parent.span_id.as_str()))
        .collect()
}

fn names(spans: &[&ReceivedSpan]) -> Vec<String> {
    spans.iter().map(|s| s.name.clone()).collect()
}

fn assert_span_tree(spans: &[ReceivedSpan]) {
    // One trace for the run: plan and run share the trace id.
    let trace_ids: std::collections::BTreeSet<&str> =
        spans.iter().map(|s| s.trace_id.as_str()).collect();
    assert_eq!(trace_ids.len(), 1, "{trace_ids:?}");
    let ids: std::collections::BTreeSet<&str> = spans.iter().map(|s| s.span_id.as_str()).collect();
    assert_eq!(ids.len(), spans.len(), "span ids are unique");
    for s in spans {
        if let Some(p) = &s.parent_span_id {
            assert!(ids.contains(p.as_str()), "{} has an unknown parent", s.name);
        }
        assert!(s.end_ns >= s.start_ns, "{}", s.name);
        assert_eq!(s.resource["service.name"], json!("dandori-under-test"));
    }
    let roots: Vec<&ReceivedSpan> = spans
        .iter()
        .filter(|s| s.parent_span_id.is_none())
        .collect();
    assert_eq!(names(&roots), vec!["dandori.plan", "dandori.run"]);
    let (plan, run) = (roots[0], roots[1]);
    assert_eq!(plan.attributes["dandori.request_id"], json!("RQ-7"));
    assert_eq!(plan.attributes["dandori.planner"], json!("offline"));
    assert_eq!(
        names(&children(spans, plan)),
        vec![
            "planning.understand_goal",
            "planning.decompose_task",
            "planning.generate_action_plan"
        ]
    );
    assert_eq!(run.attributes["dandori.status"], json!("completed"));
    assert_eq!(run.status_code, 0);
    let run_children = children(spans, run);
    assert_eq!(
        names(&run_children),
        vec![
            "environment.setup",
            "execution.execute_action",
            "execution.execute_action"
        ]
    );
    let steps: Vec<&ReceivedSpan> = run_children[1..].to_vec();
    assert_eq!(steps[0].attributes["dandori.step.id"], json!("S01"));
    assert_eq!(steps[1].attributes["dandori.step.id"], json!("S02"));
    for s in &steps {
        assert_eq!(s.attributes["dandori.step.status"], json!("done"));
        assert!(s.attributes.contains_key("dandori.step.commit"));
    }
    // S01: 4 execution turns (3 tools, completion), a reflection call, a unit test.
    let s1 = children(spans, steps[0]);
    let s1_names = names(&s1);
    assert_eq!(
        s1_names.iter().filter(|n| *n == "chat fake-coder").count(),
        4,
        "{s1_names:?}"
    );
    let tools: Vec<&String> = s1_names
        .iter()
        .filter(|n| n.starts_with("execute_tool"))
        .collect();
    assert_eq!(
        tools,
        vec![
            "execute_tool read_file",
            "execute_tool write_file",
            "execute_tool run_command"
        ]
    );
    assert!(s1_names.contains(&"unit_test".to_string()), "{s1_names:?}");
    let reflection = s1
        .iter()
        .find(|s| s.name == "reflection.evaluate_action")
        .expect("a reflection span");
    assert_eq!(names(&children(spans, reflection)), vec!["chat fake-coder"]);
    // GenAI semantic conventions on every model call; tokens as the fake server counts them.
    let chats: Vec<&ReceivedSpan> = spans
        .iter()
        .filter(|s| s.name.starts_with("chat "))
        .collect();
    assert_eq!(chats.len(), 8, "every model call is a span");
    for c in &chats {
        assert_eq!(c.kind, 3, "client span");
        assert_eq!(c.attributes["gen_ai.operation.name"], json!("chat"));
        assert_eq!(c.attributes["gen_ai.system"], json!("openai"));
        assert_eq!(c.attributes["gen_ai.provider.name"], json!("openai"));
        assert_eq!(c.attributes["gen_ai.request.model"], json!("fake-coder"));
        assert!(c.attributes["gen_ai.usage.input_tokens"].as_i64().unwrap() > 0);
        assert!(c.attributes["gen_ai.usage.output_tokens"].as_i64().unwrap() > 0);
    }
    let tool_spans: Vec<&ReceivedSpan> = spans
        .iter()
        .filter(|s| s.name.starts_with("execute_tool "))
        .collect();
    assert_eq!(tool_spans.len(), 5);
    for t in tool_spans {
        assert_eq!(t.attributes["gen_ai.operation.name"], json!("execute_tool"));
        assert!(t.attributes.contains_key("gen_ai.tool.name"));
    }
}

#[test]
fn plan_and_run_export_the_span_tree_over_otlp_json_and_protobuf() {
    for protocol in ["http/json", "http/protobuf"] {
        let receiver = OtlpReceiver::start();
        let repo = calc_project();
        let home = tempfile::tempdir().unwrap();
        let endpoint = receiver.endpoint();
        let headers = format!("Authorization=Bearer%20{OTEL_TOKEN},x-tenant=t1");
        let (run_dir, stderr) = plan_and_run(
            repo.path(),
            home.path(),
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol),
                ("OTEL_EXPORTER_OTLP_HEADERS", headers.as_str()),
                ("OTEL_SERVICE_NAME", "dandori-under-test"),
            ],
            "",
        );
        assert_eq!(receiver.errors(), Vec::<String>::new(), "{protocol}");
        let exports = receiver.exports();
        assert_eq!(exports.len(), 2, "one export per command ({protocol})");
        let want_type = if protocol == "http/json" {
            "application/json"
        } else {
            "application/x-protobuf"
        };
        for e in &exports {
            assert_eq!(e.content_type, want_type);
            assert_eq!(e.headers["authorization"], format!("Bearer {OTEL_TOKEN}"));
            assert_eq!(e.headers["x-tenant"], "t1");
            // No secret in any span: not the model key, not the exporter's header.
            let body = String::from_utf8_lossy(&e.body);
            assert!(
                !body.contains(KEY) && !body.contains(OTEL_TOKEN),
                "{protocol}"
            );
        }
        assert!(!stderr.contains(OTEL_TOKEN), "{stderr}");
        assert_span_tree(&receiver.spans());
        // Nothing of the export reaches the run's own files.
        for f in ["trace.jsonl", "dandori.log"] {
            let text = std::fs::read_to_string(run_dir.join(f)).unwrap();
            assert!(!text.contains(OTEL_TOKEN) && !text.contains(KEY), "{f}");
        }
    }
}

#[test]
fn config_endpoint_exports_and_a_dead_receiver_only_warns() {
    // telemetry.otlp_endpoint from the config (no OTEL_* variable).
    let receiver = OtlpReceiver::start();
    let repo = calc_project();
    let home = tempfile::tempdir().unwrap();
    let extra = format!(
        "telemetry:\n  otlp_endpoint: {}\n  service_name: dandori-under-test\n",
        receiver.endpoint()
    );
    plan_and_run(repo.path(), home.path(), &[], &extra);
    assert_span_tree(&receiver.spans());

    // A receiver that is gone: the commands still succeed, with a warning that
    // names the reason code and never the header value.
    let dead = {
        let r = OtlpReceiver::start();
        r.endpoint()
    };
    let repo = calc_project();
    let home = tempfile::tempdir().unwrap();
    let headers = format!("Authorization={OTEL_TOKEN}");
    let (_, stderr) = plan_and_run(
        repo.path(),
        home.path(),
        &[
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                &format!("{dead}/v1/traces"),
            ),
            ("OTEL_EXPORTER_OTLP_HEADERS", &headers),
        ],
        "",
    );
    assert!(stderr.contains("OTLP_EXPORT_FAILED"), "{stderr}");
    assert!(!stderr.contains(OTEL_TOKEN), "{stderr}");
}

/// `[YYYY-MM-DD HH:MM:SS] [LEVEL] [Category] message`.
fn parse_log(text: &str) -> Vec<(String, String, String)> {
    let re = regex::Regex::new(
        r"^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\] \[(DEBUG|INFO|WARN|ERROR)\] \[([A-Za-z]+)\] (.+)$",
    )
    .unwrap();
    text.lines()
        .map(|l| {
            let c = re
                .captures(l)
                .unwrap_or_else(|| panic!("not in the seed log format: {l:?}"));
            (c[1].to_string(), c[2].to_string(), c[3].to_string())
        })
        .collect()
}

#[test]
fn the_human_log_follows_the_seed_format_at_the_configured_level() {
    let mut by_level: BTreeMap<&str, Vec<(String, String, String)>> = BTreeMap::new();
    for level in ["INFO", "DEBUG", "ERROR"] {
        let repo = calc_project();
        let home = tempfile::tempdir().unwrap();
        let extra = format!("planning:\n  logging:\n    level: {level}\n");
        let (run_dir, _) = plan_and_run(repo.path(), home.path(), &[], &extra);
        // No line at or above the level: no file.
        let text = std::fs::read_to_string(run_dir.join("dandori.log")).unwrap_or_default();
        assert!(!text.contains(KEY));
        by_level.insert(level, parse_log(&text));
    }
    let info = &by_level["INFO"];
    let has = |lines: &[(String, String, String)], level: &str, cat: &str, msg: &str| {
        lines
            .iter()
            .any(|(l, c, m)| l == level && c == cat && m.starts_with(msg))
    };
    assert!(
        has(info, "INFO", "Planning", "Task started: RQ-7"),
        "{info:#?}"
    );
    assert!(has(
        info,
        "INFO",
        "Planning",
        "Task decomposition: 2 subtasks"
    ));
    assert!(has(
        info,
        "INFO",
        "Planning",
        "Action plan generated: 2 execution group(s)"
    ));
    assert!(has(
        info,
        "INFO",
        "Reflection",
        "Evaluating action: run_command"
    ));
    assert!(has(
        info,
        "INFO",
        "Execution",
        "Step started: S01 (attempt 1)"
    ));
    assert!(has(info, "INFO", "Execution", "Step done: S02 (commit "));
    assert!(has(info, "INFO", "Execution", "Run completed"));
    assert!(
        info.iter().all(|(l, _, _)| l != "DEBUG"),
        "INFO hides DEBUG"
    );
    let debug = &by_level["DEBUG"];
    assert!(
        has(debug, "DEBUG", "LLM", "execution call to fake-model"),
        "{debug:#?}"
    );
    assert!(has(debug, "DEBUG", "Execution", "Action: read_file"));
    assert!(debug.len() > info.len());
    // A clean run has nothing at ERROR.
    assert_eq!(by_level["ERROR"], Vec::<(String, String, String)>::new());
}
