//! `/api/sessions` over HTTP: create, list, continue, read, rename, fork, export and delete a
//! conversation; a busy session cannot be deleted; other tenants and agent-restricted keys
//! get 404 on every route.

use reqwest::Method;
use serde_json::{Value, json};

use hermes_testkit::ScriptedReply;

use crate::harness::{Roles, Team, TestEnv, ask, poll_until};

async fn call(env: &TestEnv, key: &str, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut req = env.http.request(method, format!("{}{path}", env.api_url)).bearer_auth(key);
    if let Some(body) = body {
        req = req.json(&body);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_conversation_is_a_resource_to_create_list_read_rename_fork_export_and_delete() {
    let Team { env, key, .. } = Team::acme("ops").await;
    let (status, created) =
        call(&env, &key, Method::POST, "/api/sessions", Some(json!({"model": "ops", "title": "Release"}))).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!((created["model"].as_str(), created["title"].as_str()), (Some("ops"), Some("Release")));
    let id = created["id"].as_str().unwrap().to_owned();

    for answer in ["first answer", "second answer"] {
        env.llm.push(ScriptedReply::text(answer));
        let resp = env.chat_with(&key, ask("ops", "go on"), Some(&id)).await;
        assert_eq!(resp.status(), 200);
    }
    let (_, list) = call(&env, &key, Method::GET, "/api/sessions?limit=10", None).await;
    assert_eq!(list["data"][0]["id"], id.as_str());
    assert_eq!(list["data"][0]["message_count"], 4);
    assert_eq!(list["has_more"], false);

    let (_, page) = call(&env, &key, Method::GET, &format!("/api/sessions/{id}/messages?limit=3"), None).await;
    let roles: Vec<&str> = page["data"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!((roles, page["has_more"].as_bool()), (vec!["user", "assistant", "user"], Some(true)));
    let (_, rest) = call(&env, &key, Method::GET, &format!("/api/sessions/{id}/messages?after=3"), None).await;
    assert_eq!(rest["data"][0]["content"], "second answer");

    let (status, renamed) =
        call(&env, &key, Method::PATCH, &format!("/api/sessions/{id}"), Some(json!({"title": "Release v2"}))).await;
    assert_eq!((status, renamed["title"].as_str()), (200, Some("Release v2")));

    let (status, fork) =
        call(&env, &key, Method::POST, &format!("/api/sessions/{id}/fork"), Some(json!({"up_to": 2}))).await;
    assert_eq!(status, 201, "{fork}");
    assert_eq!((fork["message_count"].as_i64(), fork["lineage"].as_str()), (Some(2), Some("fork")));
    let fork_id = fork["id"].as_str().unwrap().to_owned();
    // The fork goes on on its own.
    env.llm.push(ScriptedReply::text("a different path"));
    let resp = env.chat_with(&key, ask("ops", "try B"), Some(&fork_id)).await;
    assert_eq!(resp.status(), 200);
    let history = env.llm.requests().last().unwrap().messages();
    let texts: Vec<&str> = history.iter().skip(1).map(|m| m["content"].as_str().unwrap()).collect();
    assert_eq!(texts, ["go on", "first answer", "try B"]);

    let (_, detail) = call(&env, &key, Method::GET, &format!("/api/sessions/{fork_id}"), None).await;
    let lineage: Vec<&str> =
        detail["lineage_tree"].as_array().unwrap().iter().map(|n| n["session_id"].as_str().unwrap()).collect();
    assert_eq!(lineage, [id.as_str(), fork_id.as_str()]);
    let (_, share) = call(&env, &key, Method::GET, &format!("/api/sessions/{id}/export?format=sharegpt"), None).await;
    let from: Vec<&str> =
        share["conversations"].as_array().unwrap().iter().map(|c| c["from"].as_str().unwrap()).collect();
    assert_eq!(from, ["system", "human", "gpt", "human", "gpt"]);
    let (status, _) = call(&env, &key, Method::GET, &format!("/api/sessions/{id}/export?format=csv"), None).await;
    assert_eq!(status, 400);

    let (status, deleted) = call(&env, &key, Method::DELETE, &format!("/api/sessions/{fork_id}"), None).await;
    assert_eq!((status, deleted["deleted"].as_bool()), (200, Some(true)));
    let (status, _) = call(&env, &key, Method::GET, &format!("/api/sessions/{fork_id}"), None).await;
    assert_eq!(status, 404);
    env.stop().await;
}

#[tokio::test]
async fn a_session_with_an_open_turn_cannot_be_deleted() {
    let Team { env, key, .. } = Team::start(Roles::API_ONLY, "ops").await;
    let waiting = env.spawn_chat(&key, ask("ops", "hello"));
    let id = poll_until(async || {
        let (_, list) = call(&env, &key, Method::GET, "/api/sessions", None).await;
        list["data"].as_array().and_then(|d| d.first()).map(|first| first["id"].as_str().map(str::to_owned))
    })
    .await
    .flatten();
    let id = id.expect("the session exists");
    let (status, body) = call(&env, &key, Method::DELETE, &format!("/api/sessions/{id}"), None).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "session_busy");
    waiting.abort();
    env.stop().await;
}

#[tokio::test]
async fn other_tenants_and_restricted_keys_get_404_on_every_session_route() {
    let Team { env, tenant, key, .. } = Team::acme("ops").await;
    let other_agent = env.agent(tenant, "billing").await;
    let (_, restricted) =
        env.store.tenancy().create_api_key(tenant, Some(other_agent.id), "billing-only", None).await.unwrap();
    let (_, _, stranger) = env.tenant("globex", "ops").await;
    let (_, created) = call(&env, &key, Method::POST, "/api/sessions", Some(json!({"model": "ops"}))).await;
    let id = created["id"].as_str().unwrap().to_owned();
    let routes = [
        (Method::GET, format!("/api/sessions/{id}"), None),
        (Method::PATCH, format!("/api/sessions/{id}"), Some(json!({"title": "x"}))),
        (Method::GET, format!("/api/sessions/{id}/messages"), None),
        (Method::POST, format!("/api/sessions/{id}/fork"), Some(json!({}))),
        (Method::GET, format!("/api/sessions/{id}/export"), None),
        (Method::DELETE, format!("/api/sessions/{id}"), None),
    ];
    for who in [&stranger, &restricted] {
        for (method, path, body) in &routes {
            let (status, body) = call(&env, who, method.clone(), path, body.clone()).await;
            assert_eq!(status, 404, "{method} {path}: {body}");
            assert_eq!(body["error"]["code"], "session_not_found");
        }
        let (_, list) = call(&env, who, Method::GET, "/api/sessions", None).await;
        assert_eq!(list["data"], json!([]), "nothing listed");
    }
    let (status, _) = call(&env, &key, Method::GET, "/api/sessions/not-a-uuid", None).await;
    assert_eq!(status, 404);
    let (status, _) = call(&env, &key, Method::GET, &format!("/api/sessions/{id}"), None).await;
    assert_eq!(status, 200, "still there after all those attempts");
    env.stop().await;
}
