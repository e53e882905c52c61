use dandori_config::{ProviderKind, TokenBudgets};
use dandori_llm::{ChatRequest, Client, LlmError, Message, Phase};
use dandori_test_support::{FakeLlmServer, Reply};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::{env, provider, rt};

#[test]
fn budgets_cap_completions_and_refuse_calls() {
    let server = FakeLlmServer::start(vec![Reply::openai_text("one"), Reply::openai_text("two")]);
    let budgets = TokenBudgets {
        planning: 200,
        planning_context: 100,
        reflection: 50,
        task: 1000,
        conversation: 1000,
        ..TokenBudgets::default()
    };
    let env = env();
    let client = Client::from_config(
        &provider(ProviderKind::Openai, &server.base_url()),
        &budgets,
        &|k| env.get(k).cloned(),
    )
    .unwrap();
    let req = ChatRequest::new(Phase::Planning, vec![Message::user("x".repeat(400))]);
    rt().block_on(client.chat(&req)).unwrap();
    // 300 allowed, 100 prompt tokens estimated: the completion is capped at 200.
    assert_eq!(server.requests()[0].body["max_tokens"], json!(200));
    // The fake reported 150 tokens used; another 100-token prompt fits (150+101 <= 300).
    rt().block_on(client.chat(&req)).unwrap();
    assert_eq!(server.requests()[1].body["max_tokens"], json!(50));
    // Now 300 used: refused before anything is sent.
    let err = rt().block_on(client.chat(&req)).unwrap_err();
    assert!(
        matches!(
            err,
            LlmError::BudgetExceeded {
                phase: Phase::Planning,
                scope: "phase",
                used: 300,
                limit: 300,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "token budget exceeded for planning: 300 used + 101 needed > 300 (phase)"
    );
    assert_eq!(server.request_count(), 2);
    let usage = client.usage();
    assert_eq!(usage.phase(Phase::Planning).calls, 2);
    assert_eq!(usage.total(), 300);
}
