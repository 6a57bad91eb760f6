//! Provider keys from the console: added write-only, listed with their live health (a key a
//! provider rate-limited shows as cooling down), removed, and the pool's strategy set.

use reqwest::Method;
use serde_json::json;

use super::Acme;
use crate::harness::Roles;

#[tokio::test]
async fn provider_keys_are_write_only_and_their_health_is_visible() {
    let Acme { env, id: acme, owner, viewer, .. } = Acme::start(Roles::API_ONLY).await;
    let t = |rest: &str| format!("/admin/v1/tenants/{acme}{rest}");
    let key = json!({"provider": "openai", "label": "team key", "secret": "sk-live-very-secret", "allowed_hosts": ["api.openai.com"]});

    let (s, _) = viewer.call(&env, Method::POST, &t("/credentials"), Some(key.clone())).await;
    assert_eq!(s, 403, "members do not add keys");
    let (s, hostless) = owner
        .call(
            &env,
            Method::POST,
            &t("/credentials"),
            Some(json!({"provider": "openai", "label": "x", "secret": "sk-1", "allowed_hosts": []})),
        )
        .await;
    assert_eq!(s, 400, "a key names where it may go: {hostless}");
    let (s, added) = owner.call(&env, Method::POST, &t("/credentials"), Some(key)).await;
    assert_eq!(s, 201, "{added}");
    assert!(!added.to_string().contains("sk-live"), "the secret is never answered: {added}");
    let id = added["id"].as_str().unwrap().to_owned();

    let (s, pools) = viewer.call(&env, Method::GET, &t("/credentials"), None).await;
    assert_eq!(s, 200);
    assert!(!pools.to_string().contains("sk-live"), "nor listed: {pools}");
    assert_eq!(pools["data"][0]["keys"][0]["health"]["state"], "ready", "{pools}");

    // A worker reports the key rate-limited: the console shows it cooling down.
    let cache = hermes_cache::Cache::connect(&env.config.redis.url, &env.config.redis.key_prefix).await.unwrap();
    cache.key_pools().report(acme, "openai", &id, Some(std::time::Duration::from_secs(60))).await.unwrap();
    let (_, pools) = owner.call(&env, Method::GET, &t("/credentials"), None).await;
    assert_eq!(pools["data"][0]["keys"][0]["health"]["state"], "cooling_down", "{pools}");

    let (s, _) =
        owner.call(&env, Method::PUT, &t("/credentials/pools/openai"), Some(json!({"strategy": "round_robin"}))).await;
    assert_eq!(s, 204);
    let (s, _) =
        owner.call(&env, Method::PUT, &t("/credentials/pools/openai"), Some(json!({"strategy": "loudest"}))).await;
    assert_eq!(s, 400);
    let (_, pools) = owner.call(&env, Method::GET, &t("/credentials"), None).await;
    assert_eq!(pools["data"][0]["strategy"], "round_robin");

    let (s, _) = owner.call(&env, Method::DELETE, &t(&format!("/credentials/{id}")), None).await;
    assert_eq!(s, 204);
    let (_, pools) = owner.call(&env, Method::GET, &t("/credentials"), None).await;
    assert_eq!(pools["data"], json!([]));
    let actions: Vec<String> = sqlx::query_scalar(
        "SELECT action FROM audit_log WHERE tenant_id = $1 AND object_kind IN ('credential', 'pool') ORDER BY id",
    )
    .bind(acme.as_uuid())
    .fetch_all(&env.db)
    .await
    .unwrap();
    assert_eq!(actions, ["credential.added", "pool.strategy_set", "credential.removed"]);
    let masked: String =
        sqlx::query_scalar("SELECT coalesce(after::text, '') FROM audit_log WHERE action = 'credential.added'")
            .fetch_one(&env.db)
            .await
            .unwrap();
    assert!(!masked.contains("sk-live"), "{masked}");
}
