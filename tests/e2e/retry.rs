//! Provider failures: retried with backoff when retryable, reported honestly when not.

use std::time::Duration;

use serde_json::{Value, json};

use hermes_testkit::ScriptedReply;

use crate::harness::{Team, answer_text, ask};

/// Acme's "helper", whose provider answers its next call with `status`.
async fn refused_with(status: u16) -> Team {
    let team = Team::acme("helper").await;
    team.env.llm.push(ScriptedReply::error(status));
    team
}

#[tokio::test]
async fn two_provider_500s_then_success_still_answers() {
    let Team { env, key, .. } = Team::acme("helper").await;
    env.llm.push(ScriptedReply::error(500));
    env.llm.push(ScriptedReply::error(502));
    env.llm.push(ScriptedReply::text("third time lucky"));
    let started = std::time::Instant::now();
    let body = env.answered(&key, "helper", "hi").await;
    assert_eq!(answer_text(&body), "third time lucky");
    assert_eq!(env.llm.requests().len(), 3);
    // Backoff: at least the first two delays (base 50 ms, x2, -25 % jitter) passed.
    assert!(started.elapsed() >= Duration::from_millis(110), "{:?}", started.elapsed());
    assert_eq!(env.count("SELECT count(*) FROM messages WHERE role = 'assistant'").await, 1);
    env.stop().await;
}

#[tokio::test]
async fn a_provider_that_keeps_failing_gives_a_502_agent_incomplete_and_a_failed_turn() {
    let Team { env, key, .. } = refused_with(401).await;
    let resp = env.chat(&key, ask("helper", "hi")).await;
    assert_eq!(resp.status(), 502);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "agent_incomplete");
    assert!(body["error"]["message"].as_str().unwrap().contains("credentials"), "{body}");
    assert_eq!(body["error"]["hermes"]["error_code"], "provider_auth_failed", "{body}");
    assert_eq!(env.llm.requests().len(), 1, "an auth failure is not retried");
    assert_eq!(env.count("SELECT count(*) FROM turns WHERE status = 'failed'").await, 1);
    env.stop().await;
}

#[tokio::test]
async fn a_failed_streaming_turn_ends_with_an_error_chunk_then_done() {
    let Team { env, key, .. } = refused_with(403).await;
    let resp = env
        .chat(&key, json!({"model": "helper", "stream": true, "messages": [{"role": "user", "content": "hi"}]}))
        .await;
    assert_eq!(resp.status(), 200, "the stream had started");
    let events = crate::harness::sse_events(&resp.text().await.unwrap());
    assert_eq!(events.last().unwrap().1, "[DONE]");
    let last: Value = serde_json::from_str(&events[events.len() - 2].1).unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "error");
    assert_eq!(last["error"]["code"], "provider_auth_failed", "SDKs raise this as an API error: {last}");
    env.stop().await;
}
