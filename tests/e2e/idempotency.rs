//! `Idempotency-Key` across two API processes: retries and concurrent duplicates of a request
//! share one turn and one answer, a key reused for another request is refused, and keys are
//! per API key.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use hermes_testkit::ScriptedReply;

use crate::harness::{Team, TestEnv, ask};

/// A second API pod on the same Postgres, Redis and RabbitMQ: its own event hub and port.
pub(crate) async fn second_api(env: &TestEnv) -> String {
    let config = Arc::new(env.config.clone());
    let broker = hermes_queue::Broker::connect(&config.rabbitmq, "second-api").await.unwrap();
    let cache = hermes_cache::Cache::connect(&config.redis.url, &config.redis.key_prefix).await.unwrap();
    let ctx = hermes_api::ApiContext {
        config,
        store: env.store.clone(),
        broker,
        cache,
        readiness: hermes_http::Readiness::new(),
        secrets: None,
    };
    let app = hermes_api::router(ctx).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let token = env.shutdown.clone();
    tokio::spawn(async move {
        let _ = hermes_http::serve(listener, app, token).await;
    });
    url
}

async fn post(env: &TestEnv, base: &str, key: &str, idem: &str, text: &str) -> (u16, Option<String>, Value) {
    let resp = env
        .http
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth(key)
        .header("Idempotency-Key", idem)
        .json(&ask("ops", text))
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let session = resp.headers().get("x-hermes-session-id").map(|v| v.to_str().unwrap().to_owned());
    (status, session, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn retries_and_duplicates_on_two_api_pods_share_one_turn_and_one_answer() {
    let Team { env, key, .. } = Team::acme("ops").await;
    let other_pod = second_api(&env).await;
    env.llm.push(ScriptedReply::text("Deployed once.").after(Duration::from_millis(1_500)));

    // Two copies of the request at once, one on each pod.
    let (a, b) = tokio::join!(
        post(&env, &env.api_url, &key, "deploy-42", "deploy"),
        post(&env, &other_pod, &key, "deploy-42", "deploy"),
    );
    assert_eq!((a.0, b.0), (200, 200), "{} {}", a.2, b.2);
    assert_eq!(a.2["choices"][0]["message"]["content"], "Deployed once.");
    assert_eq!(b.2["choices"][0]["message"]["content"], "Deployed once.");
    assert_eq!(a.1, b.1, "the same session");
    // A retry after the fact answers at once from the stored turn.
    let c = post(&env, &other_pod, &key, "deploy-42", "deploy").await;
    assert_eq!((c.0, c.1.clone()), (200, a.1.clone()));
    assert_eq!(c.2["choices"][0]["message"]["content"], "Deployed once.");
    assert_eq!(env.llm.requests().len(), 1, "the model ran once");
    assert_eq!(env.count("SELECT count(*) FROM turns").await, 1, "one turn");

    // The same key for another request is refused, and nothing is written.
    let d = post(&env, &env.api_url, &key, "deploy-42", "deploy to production").await;
    assert_eq!(d.0, 422, "{}", d.2);
    assert_eq!(d.2["error"]["code"], "idempotency_key_reused");
    assert_eq!(env.count("SELECT count(*) FROM turns").await, 1);

    // Keys belong to their API key: another key's "deploy-42" is its own request.
    let tenant = env.store.tenancy().tenant_by_name("acme").await.unwrap();
    let (_, second_key) = env.store.tenancy().create_api_key(tenant.id, None, "ci", None).await.unwrap();
    env.llm.push(ScriptedReply::text("Deployed again."));
    let e = post(&env, &env.api_url, &second_key, "deploy-42", "deploy").await;
    assert_eq!(e.2["choices"][0]["message"]["content"], "Deployed again.");

    let bad = post(&env, &env.api_url, &key, "bad key with spaces", "deploy").await;
    assert_eq!((bad.0, bad.2["error"]["code"].as_str()), (400, Some("invalid_idempotency_key")));
    env.stop().await;
}
