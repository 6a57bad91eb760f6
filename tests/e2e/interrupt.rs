//! A client that goes away stops its turn (upstream's behaviour), or lets it finish when the
//! installation says so; nothing partial is ever stored.

use std::time::Duration;

use serde_json::json;

use hermes_testkit::ScriptedReply;

use crate::harness::{Roles, Team, TestEnv, ask, poll_until};

async fn turn_status(env: &TestEnv) -> String {
    sqlx::query_scalar::<_, String>("SELECT status::text FROM turns ORDER BY created_at DESC LIMIT 1")
        .fetch_one(&env.db)
        .await
        .unwrap()
}

async fn wait_for_status(env: &TestEnv, want: &str) -> String {
    match poll_until(async || Some(turn_status(env).await).filter(|s| s == want)).await {
        Some(reached) => reached,
        None => turn_status(env).await,
    }
}

/// A chat completion request as `key`, from a client that gives up after `patience`.
fn impatient_chat(env: &TestEnv, key: &str, patience: Duration) -> reqwest::RequestBuilder {
    let impatient = reqwest::Client::builder().timeout(patience).build().unwrap();
    impatient.post(format!("{}/v1/chat/completions", env.api_url)).bearer_auth(key)
}

#[tokio::test]
async fn a_client_that_disconnects_stops_its_turn_and_nothing_partial_is_stored() {
    let Team { env, key, .. } = Team::acme("helper").await;
    env.llm.push(ScriptedReply::text("too late").after(Duration::from_secs(20)));
    let gone = impatient_chat(&env, &key, Duration::from_millis(700)).json(&ask("helper", "take forever")).send().await;
    assert!(gone.is_err(), "the client gave up");
    assert_eq!(wait_for_status(&env, "cancelled").await, "cancelled", "the worker stopped the turn");
    let roles =
        sqlx::query_scalar::<_, String>("SELECT role FROM messages ORDER BY seq").fetch_all(&env.db).await.unwrap();
    assert_eq!(roles, ["user"], "no partial answer");
    assert_eq!(env.llm.requests().len(), 1);

    // The session is still usable: the next turn runs normally.
    env.llm.push(ScriptedReply::text("back again"));
    let session: String = sqlx::query_scalar("SELECT id::text FROM sessions").fetch_one(&env.db).await.unwrap();
    let resp = env.chat_with(&key, ask("helper", "hello?"), Some(&session)).await;
    assert_eq!(resp.status(), 200);
    env.stop().await;
}

#[tokio::test]
async fn a_streaming_client_that_leaves_stops_the_turn() {
    let Team { env, key, .. } = Team::acme("helper").await;
    env.llm.push(ScriptedReply::text("never streamed").after(Duration::from_secs(20)));
    let mut resp = env
        .chat(
            &key,
            json!({"model": "helper", "stream": true, "messages": [{"role": "user", "content": "stream slowly"}]}),
        )
        .await;
    assert_eq!(resp.status(), 200);
    let first = resp.chunk().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("\"role\":\"assistant\""));
    drop(resp);
    assert_eq!(wait_for_status(&env, "cancelled").await, "cancelled");
    env.stop().await;
}

#[tokio::test]
async fn with_on_disconnect_finish_the_turn_completes_in_the_background() {
    let env =
        TestEnv::start_with(Roles::default(), |c| c.api.on_disconnect = hermes_config::OnDisconnect::Finish).await;
    let (_, _, key) = env.tenant("acme", "helper").await;
    env.llm.push(ScriptedReply::text("finished anyway").after(Duration::from_millis(1500)));
    let _ =
        impatient_chat(&env, &key, Duration::from_millis(300)).json(&ask("helper", "go on without me")).send().await;
    assert_eq!(wait_for_status(&env, "completed").await, "completed");
    let answer: String = sqlx::query_scalar("SELECT content #>> '{}' FROM messages WHERE role = 'assistant'")
        .fetch_one(&env.db)
        .await
        .unwrap();
    assert_eq!(answer, "finished anyway");
    env.stop().await;
}

/// A client with an `Idempotency-Key` that times out retries and joins its own turn: the
/// disconnect must not stop the turn the retry is waiting for (before, the first request's
/// disconnect cancelled it and the retry got a cancelled answer).
#[tokio::test]
async fn a_client_that_retries_with_an_idempotency_key_is_not_stopped_by_its_own_disconnect() {
    let Team { env, key, .. } = Team::acme("helper").await;
    env.llm.push(ScriptedReply::text("worth the wait").after(Duration::from_secs(2)));
    let body = ask("helper", "take a while");
    let gone = impatient_chat(&env, &key, Duration::from_millis(500))
        .header("Idempotency-Key", "retry-me-1")
        .json(&body)
        .send()
        .await;
    assert!(gone.is_err(), "the client gave up");
    let retry = env
        .http
        .post(format!("{}/v1/chat/completions", env.api_url))
        .bearer_auth(&key)
        .header("Idempotency-Key", "retry-me-1")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(retry.status(), 200);
    let answer: serde_json::Value = retry.json().await.unwrap();
    assert_eq!(answer["choices"][0]["message"]["content"], "worth the wait", "{answer}");
    assert_eq!(turn_status(&env).await, "completed");
    assert_eq!(env.llm.requests().len(), 1, "one turn for both requests");
    env.stop().await;
}
