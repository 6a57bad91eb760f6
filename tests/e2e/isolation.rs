//! Tenants never see each other: other tenants' sessions and agents answer 404.

use serde_json::{Value, json};

use hermes_testkit::ScriptedReply;

use crate::harness::{TestEnv, ask, json_of, poll_until};

#[tokio::test]
async fn a_tenant_cannot_read_or_continue_another_tenants_session_or_see_its_agents() {
    let env = TestEnv::start().await;
    let (_, _, key_a) = env.tenant("alpha", "alpha-bot").await;
    let (_, _, key_b) = env.tenant("beta", "beta-bot").await;
    env.llm.push(ScriptedReply::text("B's private answer"));
    let resp = env.chat(&key_b, ask("beta-bot", "secret")).await;
    assert_eq!(resp.status(), 200);
    let b_session = resp.headers()["x-hermes-session-id"].to_str().unwrap().to_owned();
    let requests_before = env.llm.requests().len();
    let turns_before = env.count("SELECT count(*) FROM turns").await;

    // A cannot use B's model...
    let resp = env.chat(&key_a, ask("beta-bot", "hi")).await;
    assert_eq!(resp.status(), 404);
    let err: Value = resp.json().await.unwrap();
    assert_eq!(err["error"]["code"], "model_not_found");

    // ...nor continue B's session with its own model...
    let resp = env.chat_with(&key_a, ask("alpha-bot", "what did B say?"), Some(&b_session)).await;
    assert_eq!(resp.status(), 404);
    let err: Value = resp.json().await.unwrap();
    assert_eq!(err["error"]["code"], "session_not_found");

    // ...and B's agents are not in A's model list.
    let models = json_of(env.http.get(format!("{}/v1/models", env.api_url)).bearer_auth(&key_a)).await;
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
    env.add_agent(tenant, env.new_agent("second", "m")).await;
    let (_, key) = env.store.tenancy().create_api_key(tenant, Some(agent.id), "narrow", None).await.unwrap();
    let resp = env.chat(&key, ask("second", "hi")).await;
    assert_eq!(resp.status(), 404);
    // With no model named, the only agent the key may use is chosen.
    env.llm.push(ScriptedReply::text("from first"));
    let resp = env.chat(&key, json!({"messages": [{"role": "user", "content": "hi"}]})).await;
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["model"], "first");
    env.stop().await;
}

/// Every documented route that names an object, called by another tenant with this tenant's
/// ids: all answer 404 and change nothing; the lists show nothing of theirs.
#[tokio::test]
async fn every_endpoint_answers_404_for_another_tenants_objects() {
    let (env, [owner, stranger]) = TestEnv::with_two_tenants(["alpha", "beta"], "ops").await;
    let send = |key: &str, method: &str, path: &str, body: Value| {
        let (env, key, method, path) = (&env, key.to_owned(), method.to_owned(), path.to_owned());
        async move { crate::openapi::call(env, &key, &method, &path, Some(body)).await }
    };
    // The owner has a response, a session, and a run waiting for an approval.
    env.llm.push(ScriptedReply::text("Stored."));
    let (_, response) = send(&owner, "post", "/v1/responses", json!({"input": "keep this"})).await;
    let response_id = response["id"].as_str().unwrap().to_owned();
    let session = response["hermes"]["session_id"].as_str().unwrap().to_owned();
    env.llm.push(ScriptedReply::terminal("rm -rf /workspace/cache"));
    let (_, run) = send(&owner, "post", "/v1/runs", json!({"input": "clean"})).await;
    let run_id = run["run_id"].as_str().unwrap().to_owned();
    let interaction = poll_until(async || {
        let (_, state) = send(&owner, "get", &format!("/v1/runs/{run_id}"), json!({})).await;
        state["pending"]["id"].as_str().map(str::to_owned)
    })
    .await
    .unwrap_or_default();
    assert!(!interaction.is_empty(), "the run waits for approval");

    // ...and a chat bot.
    let owner_tenant = env.store.tenancy().tenant_by_name("alpha").await.unwrap().id;
    let owner_agent = env.store.agents().agent_by_name(owner_tenant, "ops").await.unwrap();
    let bot = crate::harness::unreachable_telegram_bot(owner_agent.id);
    let channel = env.add_channel(owner_tenant, bot).await.id.to_string();
    // ...and a cron job.
    let (_, job) = send(&owner, "post", "/v1/cron/jobs", json!({"prompt": "brief", "schedule": "every 1d"})).await;
    let job = job["id"].as_str().unwrap().to_owned();
    // ...and a webhook.
    let (_, hook) = send(&owner, "post", "/v1/webhooks", json!({"name": "ci"})).await;
    let hook = hook["id"].as_str().unwrap().to_owned();
    // ...and an event endpoint.
    let (_, events) = send(&owner, "post", "/v1/event-hooks", json!({"url": "https://hooks.example.com/x"})).await;
    let events = events["id"].as_str().unwrap().to_owned();

    // ...and a file its agent made in a turn (as `image_generate` keeps one).
    let turn = hermes_core::TurnId::from_uuid(
        sqlx::query_scalar("SELECT id FROM turns WHERE tenant_id = $1 ORDER BY created_at LIMIT 1")
            .bind(owner_tenant.as_uuid())
            .fetch_one(&env.db)
            .await
            .unwrap(),
    );
    let file = env.keep_picture(owner_tenant, turn).await;

    let doc: Value = env.http.get(format!("{}/openapi.json", env.api_url)).send().await.unwrap().json().await.unwrap();
    let mut checked = 0;
    for (path, methods) in doc["paths"].as_object().unwrap() {
        let id = match path.as_str() {
            p if !p.contains("{id}") || p.starts_with("/admin/") => continue,
            p if p.starts_with("/v1/responses/") => &response_id,
            p if p.starts_with("/v1/runs/") => &run_id,
            p if p.starts_with("/v1/interactions/") => &interaction,
            p if p.starts_with("/api/sessions/") => &session,
            p if p.starts_with("/v1/channels/") => &channel,
            p if p.starts_with("/v1/cron/jobs/") || p.starts_with("/api/jobs/") => &job,
            p if p.starts_with("/v1/webhooks/") => &hook,
            p if p.starts_with("/v1/event-hooks/") => &events,
            p if p.starts_with("/v1/files/") => &file,
            other => panic!("no object for {other}: extend this test"),
        };
        let concrete = path.replace("{id}", id);
        for method in methods.as_object().unwrap().keys() {
            // A valid body for each route, so only ownership decides the answer.
            let body = match (method.as_str(), path.as_str()) {
                ("patch", _) => json!({"title": "mine now"}),
                (_, p) if p.ends_with("/approval") || p.starts_with("/v1/interactions/") => json!({"choice": "once"}),
                _ => json!({}),
            };
            let (status, _) = send(&stranger, method, &concrete, body).await;
            assert_eq!(status, 404, "{method} {path} by another tenant");
            checked += 1;
        }
    }
    assert_eq!(checked, 45, "every route that names an object");
    // Chaining onto the owner's objects is refused the same way.
    for body in
        [json!({"input": "x", "previous_response_id": response_id}), json!({"input": "x", "session_id": session})]
    {
        let path = if body.get("session_id").is_some() { "/v1/runs" } else { "/v1/responses" };
        assert_eq!(send(&stranger, "post", path, body).await.0, 404, "{path}");
    }
    // The lists show nothing of the owner's.
    let (_, sessions) = send(&stranger, "get", "/api/sessions", json!({})).await;
    assert_eq!(sessions["data"], json!([]));
    let (_, channels) = send(&stranger, "get", "/v1/channels", json!({})).await;
    assert_eq!(channels["data"], json!([]));
    let (_, jobs) = send(&stranger, "get", "/v1/cron/jobs", json!({})).await;
    assert_eq!(jobs["data"], json!([]));
    let (_, hooks) = send(&stranger, "get", "/v1/webhooks", json!({})).await;
    assert_eq!(hooks["data"], json!([]));
    let (_, endpoints) = send(&stranger, "get", "/v1/event-hooks", json!({})).await;
    assert_eq!(endpoints["data"], json!([]));
    let (_, usage) = send(&stranger, "get", "/v1/usage", json!({})).await;
    assert_eq!(usage["total"]["calls"], 0);
    // And nothing of the owner's changed.
    let (_, state) = send(&owner, "get", &format!("/v1/runs/{run_id}"), json!({})).await;
    assert_eq!(state["status"], "waiting_for_approval");
    assert_eq!(send(&owner, "get", &format!("/v1/responses/{response_id}"), json!({})).await.0, 200);
    let (_, info) = send(&owner, "get", &format!("/api/sessions/{session}"), json!({})).await;
    assert_ne!(info["title"], "mine now");
    let (_, still) = send(&owner, "get", &format!("/v1/webhooks/{hook}"), json!({})).await;
    assert_eq!((still["name"].as_str(), still["enabled"].as_bool()), (Some("ci"), Some(true)));
    assert_eq!(send(&owner, "get", &format!("/v1/files/{file}"), json!({})).await.0, 200, "the owner's file is theirs");
    env.stop().await;
}
