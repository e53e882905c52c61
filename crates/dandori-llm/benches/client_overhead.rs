//! The client's added overhead per call against a raw reqwest round trip to the same
//! fake server (same body size, same reply). Target: under 1 ms per call.

use criterion::{Criterion, criterion_group, criterion_main};
use dandori_config::{ProviderConfig, ProviderKind, TokenBudgets};
use dandori_llm::{ChatRequest, Client, Message, Phase};
use dandori_test_support::{FakeLlmServer, Reply};

fn budgets() -> TokenBudgets {
    TokenBudgets {
        planning: u64::MAX / 4,
        planning_context: 0,
        reflection: u64::MAX / 4,
        task: u64::MAX / 2,
        conversation: u64::MAX / 4,
        ..TokenBudgets::default()
    }
}

fn request() -> ChatRequest {
    ChatRequest::new(
        Phase::Planning,
        vec![
            Message::system("You are the planning engine of dandori.".repeat(20)),
            Message::user("Add a --verbose flag to the CLI.".repeat(20)),
        ],
    )
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    let answer = "{\"phase\":\"planning\",\"comment\":\"ok\"}".repeat(20);
    let json_server = FakeLlmServer::start_repeating(Reply::openai_text(&answer));
    let sse_server = FakeLlmServer::start_repeating(Reply::openai_stream(&answer, 40));
    let mut group = c.benchmark_group("chat_round_trip");

    // Raw: build the same body by hand, POST, read and parse.
    let raw = reqwest::Client::new();
    let raw_body = serde_json::json!({"model": "m", "max_tokens": 4096, "messages": [
        {"role": "system", "content": request().messages[0].content},
        {"role": "user", "content": request().messages[1].content}]})
    .to_string();
    let url = format!("{}/chat/completions", json_server.base_url());
    group.bench_function("raw_reqwest_json", |b| {
        b.iter(|| {
            rt.block_on(async {
                let bytes = raw
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(raw_body.clone())
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("{e}"))
                    .bytes()
                    .await
                    .unwrap_or_else(|e| panic!("{e}"));
                let v: serde_json::Value =
                    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{e}"));
                v
            })
        })
    });

    let mut config =
        ProviderConfig::new("bench", ProviderKind::Openai, &json_server.base_url(), "m");
    config.stream = false;
    let client =
        Client::from_config(&config, &budgets(), &|_| None).unwrap_or_else(|e| panic!("{e}"));
    let req = request();
    group.bench_function("client_json", |b| {
        b.iter(|| {
            rt.block_on(client.chat(&req))
                .unwrap_or_else(|e| panic!("{e}"))
        })
    });

    let sse_url = format!("{}/chat/completions", sse_server.base_url());
    group.bench_function("raw_reqwest_sse_bytes", |b| {
        b.iter(|| {
            rt.block_on(async {
                raw.post(&sse_url)
                    .header("content-type", "application/json")
                    .body(raw_body.clone())
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("{e}"))
                    .bytes()
                    .await
                    .unwrap_or_else(|e| panic!("{e}"))
            })
        })
    });
    let sse_config =
        ProviderConfig::new("bench", ProviderKind::Openai, &sse_server.base_url(), "m");
    let sse_client =
        Client::from_config(&sse_config, &budgets(), &|_| None).unwrap_or_else(|e| panic!("{e}"));
    group.bench_function("client_sse", |b| {
        b.iter(|| {
            rt.block_on(sse_client.chat(&req))
                .unwrap_or_else(|e| panic!("{e}"))
        })
    });
    group.finish();
    json_server.assert_no_violations();
    sse_server.assert_no_violations();
}

criterion_group!(benches, bench);
criterion_main!(benches);
