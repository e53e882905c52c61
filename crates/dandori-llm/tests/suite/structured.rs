use dandori_config::ProviderKind;
use dandori_llm::structured::chat_structured;
use dandori_llm::{ChatRequest, LlmError, Message, Phase, ResponseSchema};
use dandori_test_support::{FakeLlmServer, Reply};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{client, provider, rt};

fn request() -> ChatRequest {
    let mut req = ChatRequest::new(Phase::Planning, vec![Message::user("estimate")]);
    req.response_schema = Some(ResponseSchema {
        name: "size_estimation".into(),
        schema: json!({"type": "object", "required": ["complexity_score"],
            "properties": {"complexity_score": {"type": "integer", "minimum": 1, "maximum": 10}}}),
    });
    req
}

#[test]
fn repairs_slips_without_reasking() {
    let server = FakeLlmServer::start(vec![Reply::openai_stream(
        "Sure! Here you go:\n```json\n{complexity_score: 4,}\n```",
        3,
    )]);
    let client = client(&provider(ProviderKind::Openai, &server.base_url()));
    let out = rt()
        .block_on(chat_structured(&client, &request(), &|_| Vec::new()))
        .unwrap();
    assert_eq!(out.value, json!({"complexity_score": 4}));
    assert_eq!(out.responses.len(), 1);
    assert_eq!(server.request_count(), 1);
}

#[test]
fn reasks_once_quoting_problems() {
    let server = FakeLlmServer::start(vec![
        Reply::openai_stream("{\"complexity_score\": \"high\"", 2),
        Reply::openai_stream("{\"complexity_score\": 12}", 2),
        Reply::openai_stream("{\"complexity_score\": 9}", 2),
        Reply::openai_stream("{\"complexity_score\": 7}", 2),
    ]);
    let client = client(&provider(ProviderKind::Openai, &server.base_url()));
    // Malformed, then out of range: one re-ask only, then an error.
    let err = rt()
        .block_on(chat_structured(&client, &request(), &|_| Vec::new()))
        .unwrap_err();
    match &err {
        LlmError::InvalidStructuredOutput { problems, .. } => {
            assert_eq!(
                problems,
                &vec!["$.complexity_score: 12 is above the maximum 10".to_string()]
            )
        }
        other => panic!("{other:?}"),
    }
    let reask = &server.requests()[1].body["messages"];
    let last = reask.as_array().unwrap().last().unwrap();
    let text = last["content"].as_str().unwrap();
    assert!(text.starts_with("Your previous answer could not be used. Problems found:\n- the answer is not valid JSON"), "{text}");
    // Domain checks are quoted the same way.
    let out = rt()
        .block_on(chat_structured(&client, &request(), &|v: &Value| {
            if v["complexity_score"] == json!(9) {
                vec!["$.complexity_score: 9 is too much".to_string()]
            } else {
                Vec::new()
            }
        }))
        .unwrap();
    assert_eq!(out.value, json!({"complexity_score": 7}));
    assert_eq!(
        out.reasked_for,
        Some(vec!["$.complexity_score: 9 is too much".to_string()])
    );
    assert_eq!(server.remaining(), 0);
    server.assert_no_violations();
}
