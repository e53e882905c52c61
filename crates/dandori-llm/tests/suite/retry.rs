use std::time::{Duration, Instant};

use dandori_config::ProviderKind;
use dandori_llm::{CancellationToken, ChatRequest, LlmError, Message, Phase};
use dandori_test_support::{FakeLlmServer, Reply};
use pretty_assertions::assert_eq;

use super::{KEY, client, provider, rt};

fn request() -> ChatRequest {
    ChatRequest::new(Phase::Planning, vec![Message::user("say hi")])
}

/// Runs the script against an OpenAI provider; returns (text, attempts, elapsed).
fn run(kind: ProviderKind, script: Vec<Reply>) -> (Result<String, LlmError>, usize, Duration) {
    let server = FakeLlmServer::start(script).expect_api_key(KEY);
    let client = client(&provider(kind, &server.base_url()));
    let started = Instant::now();
    let result = rt().block_on(client.chat(&request())).map(|r| {
        assert_eq!(r.attempts as usize, server.request_count());
        r.text
    });
    server.assert_no_violations();
    (result, server.request_count(), started.elapsed())
}

#[test]
fn honours_retry_after_seconds() {
    let (text, calls, elapsed) = run(
        ProviderKind::Openai,
        vec![Reply::rate_limited(1), Reply::openai_stream("ok", 2)],
    );
    assert_eq!(text.unwrap(), "ok");
    assert_eq!(calls, 2);
    assert!(elapsed >= Duration::from_secs(1), "{elapsed:?}");
}

#[test]
fn prefers_retry_after_ms() {
    let (text, calls, elapsed) = run(
        ProviderKind::Openai,
        vec![Reply::rate_limited_ms(30), Reply::openai_stream("ok", 2)],
    );
    assert_eq!(text.unwrap(), "ok");
    assert_eq!(calls, 2);
    // Retry-After: 30 was also sent; the finer header wins.
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
}

#[test]
fn retries_server_errors_overload_cut_streams_and_garbage() {
    let (text, calls, _) = run(
        ProviderKind::Openai,
        vec![
            Reply::server_error(),
            Reply::openai_stream_cut("partial answer"),
            Reply::malformed_body(),
            Reply::openai_stream("ok", 2),
        ],
    );
    assert_eq!(text.unwrap(), "ok");
    assert_eq!(calls, 4);

    let (text, calls, _) = run(
        ProviderKind::Anthropic,
        vec![
            Reply::overloaded(),
            Reply::anthropic_stream_cut("partial answer"),
            Reply::anthropic_stream("ok", 2),
        ],
    );
    assert_eq!(text.unwrap(), "ok");
    assert_eq!(calls, 3);
}

#[test]
fn stream_ending_without_final_event_is_retried() {
    let mut frames = match Reply::anthropic_stream("hello", 2) {
        Reply::Sse { frames, .. } => frames,
        other => panic!("{other:?}"),
    };
    frames.pop(); // no message_stop
    let (text, calls, _) = run(
        ProviderKind::Anthropic,
        vec![
            Reply::Sse {
                frames,
                gap: Duration::ZERO,
                cut: false,
            },
            Reply::anthropic_stream("ok", 1),
        ],
    );
    assert_eq!(text.unwrap(), "ok");
    assert_eq!(calls, 2);
}

#[test]
fn slow_response_and_idle_stream_time_out_then_recover() {
    let (text, calls, elapsed) = run(
        ProviderKind::Openai,
        vec![
            Reply::slow(Duration::from_secs(3), Reply::openai_stream("late", 1)),
            Reply::openai_stream_stalled("stalls", Duration::from_secs(3)),
            Reply::openai_stream("ok", 2),
        ],
    );
    assert_eq!(text.unwrap(), "ok");
    assert_eq!(calls, 3);
    assert!(
        elapsed >= Duration::from_secs(2) && elapsed < Duration::from_secs(3),
        "{elapsed:?}"
    );
}

#[test]
fn quota_and_client_errors_are_not_retried() {
    let (result, calls, _) = run(ProviderKind::Openai, vec![Reply::quota_exhausted()]);
    assert!(
        matches!(result, Err(LlmError::QuotaExhausted { .. })),
        "{result:?}"
    );
    assert_eq!(calls, 1);
    let (result, calls, _) = run(
        ProviderKind::Openai,
        vec![Reply::status(400, "bad request")],
    );
    match result {
        Err(LlmError::Http { status, .. }) => assert_eq!(status, 400),
        other => panic!("{other:?}"),
    }
    assert_eq!(calls, 1);
}

#[test]
fn gives_up_after_max_retries() {
    let (result, calls, _) = run(
        ProviderKind::Openai,
        vec![
            Reply::server_error(),
            Reply::server_error(),
            Reply::server_error(),
            Reply::server_error(),
        ],
    );
    let err = result.unwrap_err();
    assert!(
        err.to_string().starts_with("provider `fake`: gave up after 4 attempts: provider `fake`: HTTP 500 from http://127.0.0.1:"),
        "{err}"
    );
    assert_eq!(calls, 4);
}

#[test]
fn cancellation_stops_a_call() {
    let server = FakeLlmServer::start(vec![Reply::slow(
        Duration::from_secs(10),
        Reply::openai_text("never"),
    )]);
    let mut config = provider(ProviderKind::Openai, &server.base_url());
    config.request_timeout_secs = 30;
    let client = client(&config);
    let cancel = CancellationToken::new();
    let started = Instant::now();
    let result = rt().block_on(async {
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            trigger.cancel();
        });
        client.chat_cancellable(&request(), &cancel).await
    });
    assert!(
        matches!(result, Err(LlmError::Cancelled { phase: "planning" })),
        "{result:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[test]
fn connection_refused_is_retried_then_reported() {
    // Bind and drop to get a port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = provider(ProviderKind::Openai, &format!("http://127.0.0.1:{port}/v1"));
    let client = client(&config);
    let err = rt().block_on(client.chat(&request())).unwrap_err();
    match &err {
        LlmError::RetriesExhausted { attempts, last, .. } => {
            assert_eq!(*attempts, 4);
            assert_eq!(last.kind(), "connect");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn error_events_inside_a_stream() {
    // Anthropic reports overload mid-stream as an `error` event: transient, retried.
    let overloaded = Reply::Sse {
        frames: vec![
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":5}}}".to_string(),
            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}".to_string(),
        ],
        gap: Duration::ZERO,
        cut: false,
    };
    let (text, calls, _) = run(
        ProviderKind::Anthropic,
        vec![overloaded, Reply::anthropic_stream("ok", 1)],
    );
    assert_eq!(text.unwrap(), "ok");
    assert_eq!(calls, 2);

    // An invalid-request error inside an OpenAI stream is not retried.
    let invalid = Reply::Sse {
        frames: vec![
            "data: {\"error\":{\"type\":\"invalid_request_error\",\"message\":\"context too long\"}}"
                .to_string(),
        ],
        gap: Duration::ZERO,
        cut: false,
    };
    let (result, calls, _) = run(ProviderKind::Openai, vec![invalid]);
    match result {
        Err(LlmError::StreamError {
            kind, transient, ..
        }) => {
            assert_eq!(kind, "invalid_request_error");
            assert!(!transient);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(calls, 1);
}
