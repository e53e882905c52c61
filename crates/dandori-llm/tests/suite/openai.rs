use dandori_config::ProviderKind;
use dandori_llm::{ChatRequest, Message, Phase, ResponseSchema, ToolCall, ToolSpec, Usage};
use dandori_test_support::{FakeLlmServer, Reply};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::{KEY, client, provider, rt};

fn request() -> ChatRequest {
    ChatRequest::new(
        Phase::Planning,
        vec![Message::system("be brief"), Message::user("say hi")],
    )
}

#[test]
fn plain_json_completion() {
    let server = FakeLlmServer::start(vec![Reply::openai_text("hi there")]).expect_api_key(KEY);
    let mut config = provider(ProviderKind::Openai, &server.base_url());
    config.stream = false;
    config
        .headers
        .insert("x-team".to_string(), "dandori".to_string());
    let client = client(&config);
    let response = rt().block_on(client.chat(&request())).unwrap();
    assert_eq!(response.text, "hi there");
    assert_eq!(
        response.usage,
        Usage {
            prompt_tokens: 100,
            completion_tokens: 50,
            estimated: false
        }
    );
    assert_eq!(response.attempts, 1);
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("x-team"), Some("dandori"));
    assert_eq!(
        sent.body,
        json!({"model": "fake-model", "messages": [
            {"role": "system", "content": "be brief"}, {"role": "user", "content": "say hi"}],
            "max_tokens": 4096})
    );
    server.assert_no_violations();
    // The key never shows in Debug.
    assert!(!format!("{client:?}").contains(KEY));
}

#[test]
fn streamed_text_and_schema() {
    let server = FakeLlmServer::start(vec![Reply::openai_stream(
        "{\"answer\": \"héllo wörld\"}",
        7,
    )])
    .expect_api_key(KEY);
    let client = client(&provider(ProviderKind::Openai, &server.base_url()));
    let mut req = request();
    req.response_schema = Some(ResponseSchema {
        name: "answer".into(),
        schema: json!({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}),
    });
    let response = rt().block_on(client.chat(&req)).unwrap();
    assert_eq!(response.text, "{\"answer\": \"héllo wörld\"}");
    assert_eq!(response.answer_text(), response.text);
    assert_eq!(response.usage.total(), 180);
    assert_eq!(response.finish_reason.as_deref(), Some("stop"));
    let body = &server.requests()[0].body;
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["response_format"]["type"], json!("json_schema"));
    assert_eq!(
        body["response_format"]["json_schema"]["name"],
        json!("answer")
    );
    server.assert_no_violations();
}

#[test]
fn streamed_tool_call_deltas_accumulate() {
    let args = json!({"path": "src/lib.rs", "lines": [1, 2, 3]});
    let server = FakeLlmServer::start(vec![Reply::openai_stream_tool_call("read_file", &args, 5)])
        .expect_api_key(KEY);
    let client = client(&provider(ProviderKind::Openai, &server.base_url()));
    let mut req = request();
    req.tools.push(ToolSpec {
        name: "read_file".into(),
        description: "Read a file".into(),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    });
    let response = rt().block_on(client.chat(&req)).unwrap();
    assert_eq!(
        response.tool_calls,
        vec![ToolCall {
            id: "call_1".into(),
            name: "read_file".into(),
            arguments: args.to_string()
        }]
    );
    assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
    server.assert_no_violations();
}

#[test]
fn tool_round_trip_messages_are_valid() {
    let server = FakeLlmServer::start(vec![Reply::openai_text("done")]).expect_api_key(KEY);
    let client = client(&provider(ProviderKind::Openai, &server.base_url()));
    let mut req = request();
    let mut assistant = Message::assistant("");
    assistant.tool_calls.push(ToolCall {
        id: "call_1".into(),
        name: "read_file".into(),
        arguments: "{\"path\":\"a\"}".into(),
    });
    req.messages.push(assistant);
    req.messages
        .push(Message::tool_result("call_1", "contents"));
    rt().block_on(client.chat(&req)).unwrap();
    let body = &server.requests()[0].body;
    assert_eq!(
        body["messages"][2]["tool_calls"][0]["function"]["name"],
        json!("read_file")
    );
    assert_eq!(
        body["messages"][3],
        json!({"role": "tool", "content": "contents", "tool_call_id": "call_1"})
    );
    server.assert_no_violations();
}

#[test]
fn no_key_configured_sends_no_auth_header() {
    // Ollama-style local server.
    let server = FakeLlmServer::start(vec![Reply::openai_stream("ok", 1)]);
    let mut config = provider(ProviderKind::Openai, &server.base_url());
    config.api_key_env = None;
    let client = dandori_llm::Client::from_config(
        &config,
        &dandori_config::TokenBudgets::default(),
        &|_| None,
    )
    .unwrap();
    let response = rt().block_on(client.chat(&request())).unwrap();
    assert_eq!(response.text, "ok");
    assert_eq!(server.requests()[0].header("authorization"), None);
    server.assert_no_violations();
}

#[test]
fn missing_key_and_key_scrubbed_from_errors() {
    let config = provider(ProviderKind::Openai, "http://127.0.0.1:9/v1");
    let err = dandori_llm::Client::from_config(
        &config,
        &dandori_config::TokenBudgets::default(),
        &|_| None,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "provider `fake`: environment variable TEST_KEY (api_key_env) is not set"
    );

    let server = FakeLlmServer::start(vec![Reply::status(
        401,
        &format!("Incorrect API key provided: {KEY}"),
    )]);
    let client = client(&provider(ProviderKind::Openai, &server.base_url()));
    let err = rt().block_on(client.chat(&request())).unwrap_err();
    let text = format!("{err} {err:?}");
    assert!(!text.contains(KEY), "{text}");
    assert!(text.contains("HTTP 401"), "{text}");
    assert!(text.contains("Incorrect API key provided: ***"), "{text}");
    assert_eq!(server.request_count(), 1, "a 401 is not retried");
}

#[test]
fn usage_is_estimated_when_absent() {
    let server = FakeLlmServer::start(vec![Reply::json(
        200,
        &json!({"choices": [{"message": {"role": "assistant", "content": "abcdefgh"}, "finish_reason": "stop"}]}),
    )]);
    let mut config = provider(ProviderKind::Openai, &server.base_url());
    config.stream = false;
    let client = client(&config);
    let response = rt().block_on(client.chat(&request())).unwrap();
    assert_eq!(
        response.usage,
        Usage {
            prompt_tokens: 4, // "be briefsay hi" = 14 chars
            completion_tokens: 2,
            estimated: true
        }
    );
    assert_eq!(client.usage().phase(Phase::Planning).estimated_calls, 1);
}
