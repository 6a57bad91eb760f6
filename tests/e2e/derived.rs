//! Requests without `X-Hermes-Session-Id` map to a session derived from the conversation's
//! start, as upstream does, so clients that resend the whole history (Open WebUI, LibreChat)
//! stay in one session; the end user, the system text and the first message keep others apart.

use serde_json::{Value, json};

use hermes_testkit::ScriptedReply;

use crate::harness::{Team, TestEnv};

async fn send(env: &TestEnv, key: &str, user: Option<&str>, messages: Value) -> (String, Value) {
    let mut req = env.http.post(format!("{}/v1/chat/completions", env.api_url)).bearer_auth(key);
    if let Some(user) = user {
        req = req.header("X-Hermes-Session-Key", user);
    }
    let resp = req.json(&json!({"model": "ops", "messages": messages})).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let session = resp.headers()["x-hermes-session-id"].to_str().unwrap().to_owned();
    (session, resp.json().await.unwrap())
}

#[tokio::test]
async fn clients_that_resend_the_whole_history_stay_in_one_session() {
    let Team { env, key, .. } = Team::acme("ops").await;
    env.llm.push(ScriptedReply::text("Friday works."));
    let (first, _) = send(&env, &key, None, json!([{"role": "user", "content": "Plan the offsite"}])).await;
    env.llm.push(ScriptedReply::text("Budget added."));
    let resent = json!([
        {"role": "user", "content": "Plan the offsite"},
        {"role": "assistant", "content": "Friday works."},
        {"role": "user", "content": "Add a budget"}
    ]);
    let (second, _) = send(&env, &key, None, resent).await;
    assert_eq!(second, first, "the same conversation");
    let seen: Vec<String> =
        env.llm.requests()[1].messages().iter().skip(1).map(|m| m["content"].as_str().unwrap().to_owned()).collect();
    assert_eq!(seen, ["Plan the offsite", "Friday works.", "Add a budget"], "the history comes once, from the server");
    assert_eq!(env.count(&format!("SELECT count(*) FROM messages WHERE session_id = '{first}'")).await, 4);

    // Another first message, another end user or another system text: other conversations.
    env.llm.push(ScriptedReply::text("ok"));
    let (other_start, _) = send(&env, &key, None, json!([{"role": "user", "content": "Something else"}])).await;
    env.llm.push(ScriptedReply::text("ok"));
    let (other_user, _) = send(&env, &key, Some("bob"), json!([{"role": "user", "content": "Plan the offsite"}])).await;
    env.llm.push(ScriptedReply::text("ok"));
    let with_system =
        json!([{"role": "system", "content": "Answer in French."}, {"role": "user", "content": "Plan the offsite"}]);
    let (other_system, _) = send(&env, &key, None, with_system).await;
    let mut all = vec![first.clone(), other_start, other_user, other_system];
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 4, "four different sessions");

    // Another tenant's identical conversation is its own.
    let (_, _, stranger) = env.tenant("globex", "ops").await;
    env.llm.push(ScriptedReply::text("ok"));
    let (theirs, _) = send(&env, &stranger, None, json!([{"role": "user", "content": "Plan the offsite"}])).await;
    assert_ne!(theirs, first);
    env.stop().await;
}
