//! Tenants never see each other: other tenants' sessions and agents answer 404.

use serde_json::{Value, json};

use hermes_testkit::ScriptedReply;

use crate::harness::TestEnv;

#[tokio::test]
async fn a_tenant_cannot_read_or_continue_another_tenants_session_or_see_its_agents() {
    let env = TestEnv::start().await;
    let (_, _, key_a) = env.tenant("alpha", "alpha-bot").await;
    let (_, _, key_b) = env.tenant("beta", "beta-bot").await;
    env.llm.push(ScriptedReply::text("B's private answer"));
    let resp =
        env.chat(&key_b, json!({"model": "beta-bot", "messages": [{"role": "user", "content": "secret"}]})).await;
    assert_eq!(resp.status(), 200);
    let b_session = resp.headers()["x-hermes-session-id"].to_str().unwrap().to_owned();
    let requests_before = env.llm.requests().len();
    let turns_before = env.count("SELECT count(*) FROM turns").await;

    // A cannot use B's model...
    let resp = env.chat(&key_a, json!({"model": "beta-bot", "messages": [{"role": "user", "content": "hi"}]})).await;
    assert_eq!(resp.status(), 404);
    let err: Value = resp.json().await.unwrap();
    assert_eq!(err["error"]["code"], "model_not_found");

    // ...nor continue B's session with its own model...
    let resp = env
        .chat_with(
            &key_a,
            json!({"model": "alpha-bot", "messages": [{"role": "user", "content": "what did B say?"}]}),
            Some(&b_session),
        )
        .await;
    assert_eq!(resp.status(), 404);
    let err: Value = resp.json().await.unwrap();
    assert_eq!(err["error"]["code"], "session_not_found");

    // ...and B's agents are not in A's model list.
    let models: Value = env
        .http
        .get(format!("{}/v1/models", env.api_url))
        .bearer_auth(&key_a)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = models["data"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["alpha-bot"]);

    assert_eq!(env.llm.requests().len(), requests_before, "no model call was made for A");
    assert_eq!(env.count("SELECT count(*) FROM turns").await, turns_before, "nothing was written");
    env.stop().await;
}

#[tokio::test]
async fn a_key_restricted_to_one_agent_cannot_use_another() {
    let env = TestEnv::start().await;
    let (tenant, agent, _) = env.tenant("alpha", "first").await;
    env.store
        .create_agent(
            tenant,
            hermes_store::NewAgent {
                name: "second".into(),
                model: "m".into(),
                provider_base_url: env.llm.base_url(),
                provider_key: None,
                soul: None,
                system_message: None,
                provider_key_hosts: vec![],
                fallbacks: vec![],
                api_mode: None,
                auxiliary: None,
                context_window: None,
                toolsets: vec![],
            },
            None,
        )
        .await
        .unwrap();
    let (_, key) = env.store.create_api_key(tenant, Some(agent.id), "narrow", None).await.unwrap();
    let resp = env.chat(&key, json!({"model": "second", "messages": [{"role": "user", "content": "hi"}]})).await;
    assert_eq!(resp.status(), 404);
    // With no model named, the only agent the key may use is chosen.
    env.llm.push(ScriptedReply::text("from first"));
    let resp = env.chat(&key, json!({"messages": [{"role": "user", "content": "hi"}]})).await;
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["model"], "first");
    env.stop().await;
}
