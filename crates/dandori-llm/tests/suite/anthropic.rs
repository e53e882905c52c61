use dandori_config::ProviderKind;
use dandori_llm::{ChatRequest, Message, Phase, ResponseSchema, ToolCall, ToolSpec};
use dandori_test_support::{FakeLlmServer, Reply};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::{KEY, client, provider, rt};

fn request() -> ChatRequest {
    ChatRequest::new(
        Phase::Planning,
        vec![
            Message::system("be brief"),
            Message::user("say hi"),
            Message::user("please"),
        ],
    )
}

#[test]
fn streamed_text() {
    let server = FakeLlmServer::start(vec![Reply::anthropic_stream("hello from claude", 4)])
        .expect_api_key(KEY);
    let client = client(&provider(ProviderKind::Anthropic, &server.base_url()));
    let response = rt().block_on(client.chat(&request())).unwrap();
    assert_eq!(response.text, "hello from claude");
    assert_eq!(response.usage.prompt_tokens, 120);
    assert_eq!(response.usage.completion_tokens, 60);
    assert_eq!(response.finish_reason.as_deref(), Some("end_turn"));
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(
        sent.body,
        json!({"model": "fake-model", "max_tokens": 4096, "system": "be brief",
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "say hi"}, {"type": "text", "text": "please"}]}],
            "stream": true})
    );
    server.assert_no_violations();
}

#[test]
fn json_message_and_tool_use() {
    let input = json!({"path": "README.md"});
    let server = FakeLlmServer::start(vec![
        Reply::anthropic_text("plain"),
        Reply::anthropic_stream_tool_use("read_file", &input, 4),
    ])
    .expect_api_key(KEY);
    let mut config = provider(ProviderKind::Anthropic, &server.base_url());
    config.stream = false;
    let plain = client(&config);
    assert_eq!(rt().block_on(plain.chat(&request())).unwrap().text, "plain");

    let streaming = client(&provider(ProviderKind::Anthropic, &server.base_url()));
    let mut req = request();
    req.tools.push(ToolSpec {
        name: "read_file".into(),
        description: "Read a file".into(),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    });
    let response = rt().block_on(streaming.chat(&req)).unwrap();
    assert_eq!(
        response.tool_calls,
        vec![ToolCall {
            id: "toolu_1".into(),
            name: "read_file".into(),
            arguments: input.to_string()
        }]
    );
    server.assert_no_violations();
}

#[test]
fn forced_tool_carries_structured_output() {
    let answer = json!({"answer": "42"});
    let server = FakeLlmServer::start(vec![Reply::anthropic_stream_tool_use("answer", &answer, 3)])
        .expect_api_key(KEY);
    let client = client(&provider(ProviderKind::Anthropic, &server.base_url()));
    let mut req = request();
    req.response_schema = Some(ResponseSchema {
        name: "answer".into(),
        schema: json!({"type": "object", "properties": {"answer": {"type": "string"}}}),
    });
    let response = rt().block_on(client.chat(&req)).unwrap();
    assert_eq!(
        response.structured.as_deref(),
        Some(answer.to_string().as_str())
    );
    assert_eq!(response.answer_text(), answer.to_string());
    assert!(response.tool_calls.is_empty());
    let body = &server.requests()[0].body;
    assert_eq!(
        body["tool_choice"],
        json!({"type": "tool", "name": "answer"})
    );
    assert_eq!(body["tools"][0]["name"], json!("answer"));
    server.assert_no_violations();
}
