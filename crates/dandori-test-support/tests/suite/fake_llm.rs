use std::time::Duration;

use dandori_test_support::{FakeLlmServer, Reply};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|err| panic!("tokio runtime: {err}"))
}

fn chat_body() -> Value {
    json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
}

#[test]
fn serves_script_in_order_and_records_requests() {
    let server = FakeLlmServer::start(vec![Reply::rate_limited(2), Reply::openai_text("hello")])
        .expect_api_key("sk-test");
    let url = format!("{}/chat/completions", server.base_url());
    rt().block_on(async {
        let client = reqwest::Client::new();
        let first = client
            .post(&url)
            .bearer_auth("sk-test")
            .json(&chat_body())
            .send()
            .await
            .unwrap();
        assert_eq!(first.status().as_u16(), 429);
        assert_eq!(first.headers()["retry-after"], "2");
        let second: Value = client
            .post(&url)
            .bearer_auth("sk-test")
            .json(&chat_body())
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(second["choices"][0]["message"]["content"], "hello");
    });
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].header("authorization"), Some("Bearer sk-test"));
    assert_eq!(requests[1].body, chat_body());
    server.assert_no_violations();
}

#[test]
fn reports_broken_invariants() {
    let server = FakeLlmServer::start(vec![Reply::openai_text("x")]).expect_api_key("sk-test");
    let url = format!("{}/chat/completions", server.base_url());
    rt().block_on(async {
        reqwest::Client::new()
            .post(&url)
            .header("authorization", "Token nope")
            .json(&json!({"model": "", "messages": [],
                "tools": [{"type": "function", "function": {"name": "bad name", "parameters": {"type": "string"}}}]}))
            .send()
            .await
            .unwrap();
        // Script exhausted is a violation too.
        reqwest::Client::new()
            .post(&url)
            .bearer_auth("sk-test")
            .json(&chat_body())
            .send()
            .await
            .unwrap();
    });
    assert_eq!(
        server.violations(),
        vec![
            "request 1 /v1/chat/completions: `model` missing or empty".to_string(),
            "request 1 /v1/chat/completions: `messages` missing or empty".to_string(),
            "request 1 /v1/chat/completions: `Authorization` is not `Bearer <key>`".to_string(),
            "request 1 /v1/chat/completions: tools[0] name Some(String(\"bad name\")) is not ^[a-zA-Z0-9_-]{1,64}$".to_string(),
            "request 1 /v1/chat/completions: tools[0] schema is not a JSON schema of type object".to_string(),
            "request 2: script exhausted".to_string(),
        ]
    );
}

#[test]
fn streams_sse_frames_and_cuts_streams() {
    let server = FakeLlmServer::start(vec![
        Reply::anthropic_stream("hello world", 3),
        Reply::openai_stream_cut("hello world"),
        Reply::slow(Duration::from_millis(200), Reply::anthropic_text("late")),
    ]);
    let url = format!("{}/messages", server.base_url());
    rt().block_on(async {
        let client = reqwest::Client::new();
        let body = json!({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]});
        let text = client
            .post(&url)
            .header("x-api-key", "k")
            .header("anthropic-version", "2023-06-01")
            .json(&body)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(text.starts_with("event: message_start\ndata: "), "{text}");
        assert!(text.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
        assert_eq!(text.matches("text_delta").count(), 3);

        let cut = client
            .post(format!("{}/chat/completions", server.base_url()))
            .json(&chat_body())
            .send()
            .await
            .unwrap()
            .text()
            .await;
        assert!(cut.is_err(), "a cut stream must fail to read: {cut:?}");

        let started = std::time::Instant::now();
        let slow = client
            .post(&url)
            .header("x-api-key", "k")
            .header("anthropic-version", "2023-06-01")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(started.elapsed() >= Duration::from_millis(200));
        assert_eq!(slow.status().as_u16(), 200);
    });
    server.assert_no_violations();
    assert_eq!(server.remaining(), 0);
}
