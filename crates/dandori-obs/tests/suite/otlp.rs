//! OTLP settings from the environment and config, and the two encodings decoded
//! by the test receiver's independent readers.

use std::collections::BTreeMap;

use dandori_config::TelemetryConfig;
use dandori_obs::otlp::{self, OtlpConfig, Protocol};
use dandori_test_support::otlp_receiver;
use dandori_trace::TraceEvent;
use pretty_assertions::assert_eq;
use serde_json::json;

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn off_without_an_endpoint_and_when_disabled() {
    let none = OtlpConfig::resolve(&env(&[]), &TelemetryConfig::default()).unwrap();
    assert_eq!(none, None);
    let disabled = OtlpConfig::resolve(
        &env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_SDK_DISABLED", "true"),
        ]),
        &TelemetryConfig::default(),
    )
    .unwrap();
    assert_eq!(disabled, None);
}

#[test]
fn variables_win_over_config_and_headers_stay_masked() {
    let cfg = TelemetryConfig {
        otlp_endpoint: Some("http://from-config:4318/".to_string()),
        otlp_protocol: Some("http/protobuf".to_string()),
        service_name: Some("cfg-name".to_string()),
    };
    let c = OtlpConfig::resolve(&env(&[]), &cfg).unwrap().unwrap();
    assert_eq!(c.url, "http://from-config:4318/v1/traces");
    assert_eq!(c.protocol, Protocol::HttpProtobuf);
    assert_eq!(c.service_name, "cfg-name");

    let c = OtlpConfig::resolve(
        &env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "https://traces.example/custom",
            ),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=s3cr3t%2Cx,tenant=a"),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "tenant=b"),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "deployment=x,service.name=res-name",
            ),
        ]),
        &cfg,
    )
    .unwrap()
    .unwrap();
    assert_eq!(c.url, "https://traces.example/custom");
    assert_eq!(c.protocol, Protocol::HttpJson);
    assert_eq!(c.service_name, "res-name");
    assert_eq!(
        c.headers,
        vec![
            ("api-key".to_string(), "s3cr3t,x".to_string()),
            ("tenant".to_string(), "b".to_string())
        ]
    );
    let shown = format!("{c:?}");
    assert!(
        !shown.contains("s3cr3t") && shown.contains("api-key=***"),
        "{shown}"
    );
}

#[test]
fn bad_settings_name_the_problem_but_never_a_header_value() {
    for (k, v, want) in [
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "grpc"),
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            "token-without-equals-SECRET",
            "entry 1",
        ),
    ] {
        let e = OtlpConfig::resolve(
            &env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"), (k, v)]),
            &TelemetryConfig::default(),
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("OTLP_CONFIG_INVALID") && text.contains(want),
            "{text}"
        );
        assert!(!text.contains("SECRET"), "{text}");
    }
    let e = OtlpConfig::resolve(
        &env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "file:///etc/passwd")]),
        &TelemetryConfig::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("OTLP_CONFIG_INVALID"));
}

fn ev(event: &str, ts: &str, data: serde_json::Value) -> TraceEvent {
    TraceEvent {
        event: event.to_string(),
        visibility: None,
        timestamp: ts.to_string(),
        session_id: "20260101-000000-abcdef".to_string(),
        task_id: "RQ-1".to_string(),
        data,
    }
}

#[test]
fn json_and_protobuf_encodings_carry_the_same_spans() {
    let events = vec![
        ev(
            "EXECUTION_START",
            "2026-01-01T00:00:00.000Z",
            json!({"steps": 1}),
        ),
        ev(
            "ENVIRONMENT_SETUP",
            "2026-01-01T00:00:01.000Z",
            json!({"status": "failed"}),
        ),
        ev(
            "STEP_START",
            "2026-01-01T00:00:02.000Z",
            json!({"step_id": "S01", "attempt": 1}),
        ),
        ev(
            "LLM_CALL",
            "2026-01-01T00:00:04.000Z",
            json!({"step_id": "S01", "purpose": "execution",
            "provider_kind": "anthropic", "request_model": "m", "model": "m-2026",
            "started_at": "2026-01-01T00:00:02.500Z", "duration_ms": 1000, "ok": true,
            "usage": {"prompt_tokens": 12, "completion_tokens": 3}}),
        ),
        ev(
            "TOOL_CALL",
            "2026-01-01T00:00:04.000Z",
            json!({"step_id": "S01", "tool": "write_file",
            "started_at": "2026-01-01T00:00:03.600Z", "duration_ms": 5, "ok": false,
            "reason_code": "OUTSIDE_WORKTREE"}),
        ),
        ev(
            "REFLECTION",
            "2026-01-01T00:00:04.500Z",
            json!({"step_id": "S01",
            "reflection": {"status": "failure", "plan_revision_needed": true}}),
        ),
        ev(
            "STEP_END",
            "2026-01-01T00:00:05.000Z",
            json!({"step_id": "S01", "status": "failed",
            "reason_code": "AGENT_FAILED"}),
        ),
        ev(
            "EXECUTION_END",
            "2026-01-01T00:00:06.000Z",
            json!({"status": "failed"}),
        ),
    ];
    let spans = otlp::spans(&events);
    let from_json = otlp_receiver::from_json(&otlp::encode_json(&spans, "svc")).unwrap();
    let from_pb = otlp_receiver::from_protobuf(&otlp::proto::encode(&spans, "svc")).unwrap();
    assert_eq!(from_json, from_pb);
    let names: Vec<&str> = from_json.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "dandori.run",
            "environment.setup",
            "execution.execute_action",
            "chat m",
            "execute_tool write_file",
            "reflection.revise_plan"
        ]
    );
    let by = |n: &str| from_json.iter().find(|s| s.name == n).unwrap();
    assert_eq!(by("dandori.run").status_code, 2);
    assert_eq!(by("environment.setup").status_code, 2);
    let step = by("execution.execute_action");
    assert_eq!(step.status_message, "AGENT_FAILED");
    assert_eq!(step.event_names, vec!["reflection"]);
    assert_eq!(step.end_ns - step.start_ns, 3_000_000_000);
    let chat = by("chat m");
    assert_eq!(chat.parent_span_id.as_deref(), Some(step.span_id.as_str()));
    assert_eq!(chat.end_ns - chat.start_ns, 1_000_000_000);
    assert_eq!(chat.attributes["gen_ai.provider.name"], json!("anthropic"));
    assert_eq!(chat.attributes["gen_ai.response.model"], json!("m-2026"));
    assert_eq!(chat.attributes["gen_ai.usage.input_tokens"], json!(12));
    assert_eq!(chat.attributes["gen_ai.usage.output_tokens"], json!(3));
    assert_eq!(
        by("execute_tool write_file").status_message,
        "OUTSIDE_WORKTREE"
    );
    assert_eq!(chat.resource["service.name"], json!("svc"));
    // The same run's trace id whatever the command.
    assert_eq!(
        chat.trace_id,
        otlp::hex(&otlp::trace_id("RQ-1", "20260101-000000-abcdef"))
    );
}
