//! Rate limits across two API pods: requests per minute per key and per tenant, and turns in
//! flight per key, answered with OpenAI's 429 `rate_limit_exceeded` and `Retry-After`; a
//! refused request writes nothing.

use std::time::Duration;

use serde_json::Value;

use hermes_testkit::ScriptedReply;

use crate::harness::{PATIENCE, Team, TestEnv, ask, wait_until};
use crate::idempotency::second_api;

async fn models(env: &TestEnv, base: &str, key: &str) -> (u16, Option<String>, Value) {
    let resp = env.http.get(format!("{base}/v1/models")).bearer_auth(key).send().await.unwrap();
    let status = resp.status().as_u16();
    let retry = resp.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
    (status, retry, resp.json().await.unwrap())
}

#[tokio::test]
async fn requests_per_minute_hold_per_key_and_per_tenant_across_pods() {
    let Team { env, tenant, key, .. } = Team::acme("ops").await;
    let other_pod = second_api(&env).await;
    let auth = env.store.tenancy().authenticate_api_key(&key).await.unwrap().unwrap();
    env.store.tenancy().set_key_limits(tenant, auth.key_id, Some(3), None).await.unwrap();
    env.store.tenancy().set_tenant_limits(tenant, Some(5), None).await.unwrap();
    for i in 0..3 {
        let base = if i % 2 == 0 { &env.api_url } else { &other_pod };
        assert_eq!(models(&env, base, &key).await.0, 200, "request {i}");
    }
    let (status, retry, body) = models(&env, &other_pod, &key).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
    assert_eq!(body["error"]["type"], "requests");
    assert!(body["error"]["message"].as_str().unwrap().contains("API key (limit 3)"));
    let retry: u64 = retry.expect("Retry-After").parse().unwrap();
    assert!((1..=20).contains(&retry), "about one interval (20 s) at most: {retry}");

    // Another key of the team is not limited by this one's budget, but by the team's (five, of
    // which the first key used three; its refused fourth did not count).
    let (_, second) = env.store.tenancy().create_api_key(tenant, None, "second", None).await.unwrap();
    assert_eq!(models(&env, &env.api_url, &second).await.0, 200);
    assert_eq!(models(&env, &other_pod, &second).await.0, 200);
    let (status, _, body) = models(&env, &env.api_url, &second).await;
    assert_eq!(status, 429, "the team's five are used up: {body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("team (limit 5)"));
    // Other tenants are untouched.
    let (_, _, stranger) = env.tenant("globex", "ops").await;
    assert_eq!(models(&env, &env.api_url, &stranger).await.0, 200);
    env.stop().await;
}

#[tokio::test]
async fn turns_in_flight_are_capped_per_key_and_a_refused_one_writes_nothing() {
    let Team { env, tenant, key, .. } = Team::acme("ops").await;
    let auth = env.store.tenancy().authenticate_api_key(&key).await.unwrap().unwrap();
    env.store.tenancy().set_key_limits(tenant, auth.key_id, None, Some(1)).await.unwrap();
    env.llm.push(ScriptedReply::text("slow answer").after(Duration::from_millis(1_500)));
    let body = ask("ops", "hi");
    let first = env.spawn_chat(&key, body.clone());
    // The second comes while the first holds its slot (its model call answers 1.5 s after it
    // arrived).
    assert!(env.llm.wait_for_requests(1, PATIENCE).await, "the first turn's model call");
    let resp = env.chat(&key, body.clone()).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "1");
    let err: Value = resp.json().await.unwrap();
    assert!(err["error"]["message"].as_str().unwrap().contains("Too many turns in flight"), "{err}");
    assert_eq!(env.count("SELECT count(*) FROM turns").await, 1, "the refused request wrote nothing");

    assert_eq!(first.await.unwrap().status(), 200);
    // The slot is free again once the answer is out: it is given back just after the answer
    // (when the request's permit drops), so wait until a probe can take it, and give it back.
    let cache = hermes_cache::Cache::connect(&env.config.redis.url, &env.config.redis.key_prefix).await.unwrap();
    let (slots, scope) = (cache.turn_slots(), format!("key:{}", auth.key_id));
    wait_until("the first turn's slot to be given back", async || {
        let free = slots.try_acquire(&scope, "probe", 1, Duration::from_secs(5)).await.unwrap();
        if free {
            slots.release(&scope, "probe").await.unwrap();
        }
        free.then_some(())
    })
    .await;
    env.llm.push(ScriptedReply::text("next"));
    assert_eq!(env.chat(&key, body).await.status(), 200);
    env.stop().await;
}
