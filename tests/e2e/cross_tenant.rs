//! A cross-tenant sweep generated from `/openapi.json`: every documented operation with a path
//! id is called on another tenant's object (and, for an agent's objects, with a key restricted
//! to another agent of the same tenant). Each answers 404 (a restricted key may get the 403
//! of a tenant-wide resource instead), and nothing of the victim's changes.

use serde_json::{Value, json};

use hermes_testkit::ScriptedReply;
use hermes_testkit::telegram::TelegramEmulator;

use crate::harness::{TestEnv, poll_until};
use crate::openapi::call;
use crate::telegram::bind;

/// The victim's tables whose rows an intruder must not change.
const TABLES: [&str; 15] = [
    "sessions",
    "messages",
    "turns",
    "interactions",
    "channels",
    "pairing_requests",
    "cron_jobs",
    "cron_runs",
    "webhooks",
    "event_hooks",
    "event_deliveries",
    "responses",
    "outbox",
    "approval_grants",
    "turn_files",
];

/// Every row of the victim's tables, as text: what must be the same after the sweep.
async fn snapshot(env: &TestEnv, tenant: hermes_core::TenantId) -> Vec<(String, Vec<String>)> {
    let mut all = Vec::new();
    for table in TABLES {
        let sql = format!("SELECT t::text FROM {table} t WHERE tenant_id = $1 ORDER BY 1");
        let rows: Vec<String> =
            sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).bind(tenant.as_uuid()).fetch_all(&env.db).await.unwrap();
        all.push((table.to_owned(), rows));
    }
    all
}

/// The documented operations with a path id: (method, path template).
async fn operations_with_ids(env: &TestEnv) -> Vec<(String, String)> {
    let doc: Value = env.http.get(format!("{}/openapi.json", env.api_url)).send().await.unwrap().json().await.unwrap();
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        // The admin API authenticates people and admin tokens, not API keys: its own sweep is
        // tests/e2e/admin/cross_tenant.rs.
        if !path.contains('{') || path.starts_with("/admin/") {
            continue;
        }
        for method in ["get", "post", "patch", "delete", "put"] {
            if item.get(method).is_some() {
                ops.push((method.to_owned(), path.clone()));
            }
        }
    }
    ops
}

#[tokio::test]
async fn every_operation_with_a_path_id_answers_404_to_another_tenant_and_writes_nothing() {
    let env = TestEnv::start().await;
    let tg = TelegramEmulator::start().await.unwrap();
    let channel = bind(&env, &tg, "poll", "pairing", &[]).await;
    let victim = channel.tenant_id;
    let key = env.store.tenancy().create_api_key(victim, None, "admin", None).await.unwrap().1;

    // One of each of the victim's objects.
    env.llm.push(ScriptedReply::text("stored answer"));
    let (_, response) = call(&env, &key, "post", "/v1/responses", Some(json!({"input": "hi", "store": true}))).await;
    env.llm.push(ScriptedReply::terminal("rm -rf /workspace/build"));
    let (_, run) = call(&env, &key, "post", "/v1/runs", Some(json!({"input": "clean up"}))).await;
    let interaction: uuid::Uuid = poll_until(async || {
        sqlx::query_scalar("SELECT id FROM interactions WHERE status = 'pending'")
            .fetch_optional(&env.db)
            .await
            .unwrap()
    })
    .await
    .expect("the run waits for an approval");
    let job = json!({"prompt": "Digest.", "schedule": "every 1d"});
    let (_, job) = call(&env, &key, "post", "/v1/cron/jobs", Some(job)).await;
    let (_, hook) = call(&env, &key, "post", "/v1/webhooks", Some(json!({"name": "ci", "deliver": "local"}))).await;
    let target = json!({"url": "https://hooks.example.com/hermes", "events": ["turn.finished"]});
    let (_, event_hook) = call(&env, &key, "post", "/v1/event-hooks", Some(target)).await;
    let session: String = sqlx::query_scalar("SELECT id::text FROM sessions WHERE tenant_id = $1 LIMIT 1")
        .bind(victim.as_uuid())
        .fetch_one(&env.db)
        .await
        .unwrap();
    // A file its agent made in a turn (as `image_generate` keeps one).
    let turn: uuid::Uuid = sqlx::query_scalar("SELECT id FROM turns WHERE tenant_id = $1 ORDER BY created_at LIMIT 1")
        .bind(victim.as_uuid())
        .fetch_one(&env.db)
        .await
        .unwrap();
    let turn = hermes_core::TurnId::from_uuid(turn);
    let ids = [
        ("/v1/files/", env.keep_picture(victim, turn).await),
        ("/api/sessions/", session),
        ("/v1/channels/", channel.id.to_string()),
        ("/v1/cron/jobs/", job["id"].as_str().unwrap().to_owned()),
        ("/api/jobs/", job["id"].as_str().unwrap().to_owned()),
        ("/v1/webhooks/", hook["id"].as_str().unwrap().to_owned()),
        ("/v1/event-hooks/", event_hook["id"].as_str().unwrap().to_owned()),
        ("/v1/responses/", response["id"].as_str().unwrap().to_owned()),
        ("/v1/runs/", run["run_id"].as_str().unwrap().to_owned()),
        ("/v1/interactions/", interaction.to_string()),
    ];
    // A second agent, and a key that may reach only it; then the intruder.
    let other_agent = env.agent(victim, "other").await;
    let restricted = env.store.tenancy().create_api_key(victim, Some(other_agent.id), "narrow", None).await.unwrap().1;
    let (_, _, intruder) = env.tenant("intruder", "spy").await;
    let before = snapshot(&env, victim).await;

    let ops = operations_with_ids(&env).await;
    assert!(ops.len() >= 30, "the document lists the operations with ids: {ops:?}");
    let (mut attempts, mut leaks) = (0, Vec::new());
    for (method, template) in &ops {
        let (prefix, id) = ids
            .iter()
            .find(|(prefix, _)| template.starts_with(prefix))
            .unwrap_or_else(|| panic!("no object of the victim for {method} {template}: add one"));
        let path = template.replacen(&format!("{prefix}{{id}}"), &format!("{prefix}{id}"), 1);
        let body = matches!(method.as_str(), "post" | "patch").then(|| json!({}));
        for (who, caller) in [("another tenant", &intruder), ("a key for another agent", &restricted)] {
            let (status, answer) = call(&env, caller, method, &path, body.clone()).await;
            attempts += 1;
            // An agent's objects are not found; a tenant-wide one is refused to a narrow key.
            let refused = status == 404 || (caller == &restricted && status == 403);
            if !refused {
                leaks.push(format!("{who}: {method} {path} -> {status} {answer}"));
            }
        }
    }
    eprintln!("cross-tenant sweep: {} operations, {attempts} attempts, {} leaks", ops.len(), leaks.len());
    assert!(leaks.is_empty(), "answered to the wrong caller:\n{}", leaks.join("\n"));
    assert_eq!(snapshot(&env, victim).await, before, "nothing of the victim's changed");
    env.stop().await;
}
