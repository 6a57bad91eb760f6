//! Every admin write is in the audit log: who, where from, which request, before and after
//! with secrets masked; filterable, paged, exportable; and each tenant sees only its own.

use hermes_core::MemberRole;
use reqwest::Method;
use serde_json::{Value, json};

use super::{acme_and_owner, member};
use crate::harness::{Roles, TestEnv};

#[tokio::test]
async fn admin_writes_are_audited_with_actor_request_and_address_and_export_as_csv_and_json_lines() {
    let env = TestEnv::start_roles(Roles::API_ONLY).await;
    let (acme, _, owner) = acme_and_owner(&env).await;
    let (other, _, _) = env.tenant("other", "helper").await;
    let (_, stranger) = member(&env, other, "owner@other.test", MemberRole::Owner).await;
    let t = |rest: &str| format!("/admin/v1/tenants/{acme}{rest}");

    let made = env
        .http
        .post(format!("{}{}", env.api_url, t("/keys")))
        .header("cookie", &owner.cookie)
        .header("x-csrf-token", owner.csrf.as_deref().unwrap())
        .header("x-request-id", "req-audit-1")
        .json(&json!({ "name": "ci" }))
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), 201);
    let made: Value = made.json().await.unwrap();
    let key_id = made["key"]["id"].as_str().unwrap().to_owned();
    let (s, token) =
        owner.call(&env, Method::POST, &t("/tokens"), Some(json!({ "name": "robot", "service": true }))).await;
    assert_eq!(s, 201);
    let (s, _) = owner.call(&env, Method::DELETE, &t(&format!("/keys/{key_id}")), None).await;
    assert_eq!(s, 204);
    // A key made with the admin token is recorded as the token.
    let (s, _) = super::with_token(&env, token["secret"].as_str().unwrap(), Method::GET, &t("/keys"), None).await;
    assert_eq!(s, 200, "a member-role token reads");

    let (s, page) = owner.call(&env, Method::GET, &t("/audit?limit=50"), None).await;
    assert_eq!(s, 200);
    let entries = page["data"].as_array().unwrap();
    let actions: Vec<&str> = entries.iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(actions[..3], ["api_key.revoked", "token.created", "api_key.created"], "{actions:?}");
    let created = &entries[2];
    assert_eq!(created["actor"]["kind"], "person");
    assert_eq!(created["actor"]["label"], "owner@acme.test");
    assert_eq!(created["request_id"], "req-audit-1");
    assert_eq!(created["source_address"], "127.0.0.1");
    assert_eq!(created["object_id"], key_id.as_str());
    assert_eq!(created["after"]["name"], "ci");
    assert!(!page.to_string().contains(made["secret"].as_str().unwrap()), "no secret reaches the log");

    // Filters and pages.
    let (_, keys_only) = owner.call(&env, Method::GET, &t("/audit?action=api_key.&limit=1"), None).await;
    assert_eq!(keys_only["data"][0]["action"], "api_key.revoked");
    let next = keys_only["next"].as_i64().expect("a second page");
    let (_, second) =
        owner.call(&env, Method::GET, &t(&format!("/audit?action=api_key.&limit=1&cursor={next}")), None).await;
    assert_eq!(second["data"][0]["action"], "api_key.created");
    let (s, _) =
        owner.call(&env, Method::GET, &t("/audit?since=2030-01-01T00:00:00Z&until=2029-01-01T00:00:00Z"), None).await;
    assert_eq!(s, 400, "a range that ends before it starts");

    // Exports.
    // An export, as the owner's browser downloads it.
    let export = |query: &str| {
        env.http.get(format!("{}{}", env.api_url, t(&format!("/audit?{query}")))).header("cookie", &owner.cookie)
    };
    let csv = export("format=csv").send().await.unwrap();
    assert_eq!(csv.headers()["content-type"], "text/csv; charset=utf-8");
    assert!(csv.headers()["content-disposition"].to_str().unwrap().contains("audit.csv"));
    let csv = csv.text().await.unwrap();
    assert!(csv.starts_with("id,at,tenant_id,actor_kind"), "{csv}");
    assert_eq!(csv.lines().count(), 1 + entries.len(), "a header and every entry");
    let lines = export("format=jsonl&action=api_key.").send().await.unwrap().text().await.unwrap();
    let parsed: Vec<Value> = lines.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(parsed.len(), 2);

    // The other tenant's owner sees none of it, and cannot reach it by URL.
    let (s, _) = stranger.call(&env, Method::GET, &t("/audit"), None).await;
    assert_eq!(s, 404);
    let (_, theirs) = stranger.call(&env, Method::GET, &format!("/admin/v1/tenants/{other}/audit"), None).await;
    assert!(theirs["data"].as_array().unwrap().iter().all(|e| e["action"] == "member.added"), "{theirs}");
}

/// A change and its entry commit together: when the entry cannot be written, the change is not
/// made either, so nobody gets an API key the log does not show (review L10).
#[tokio::test]
async fn a_key_whose_audit_entry_cannot_be_written_is_not_made() {
    let env = TestEnv::start_roles(Roles::API_ONLY).await;
    let (acme, _, owner) = acme_and_owner(&env).await;
    let keys = format!("/admin/v1/tenants/{acme}/keys");
    // The audit log refuses the key's entry (as a full disk or a lost connection would).
    for statement in [
        "CREATE FUNCTION refuse_key_entries() RETURNS trigger LANGUAGE plpgsql
         AS $$ BEGIN RAISE EXCEPTION 'the audit log refuses the entry'; END $$",
        "CREATE TRIGGER refuse_key_entries BEFORE INSERT ON audit_log
         FOR EACH ROW WHEN (NEW.action = 'api_key.created') EXECUTE FUNCTION refuse_key_entries()",
    ] {
        sqlx::query(statement).execute(&env.db).await.unwrap();
    }

    let (s, body) = owner.call(&env, Method::POST, &keys, Some(json!({ "name": "unaudited" }))).await;
    assert_eq!(s, 500, "{body}");
    assert!(body.get("secret").is_none(), "no secret is handed out: {body}");
    assert_eq!(
        env.count("SELECT count(*) FROM api_keys WHERE name = 'unaudited'").await,
        0,
        "the key whose entry failed was not made"
    );

    // With the log writable again the same request makes the key, and its entry.
    sqlx::query("DROP TRIGGER refuse_key_entries ON audit_log").execute(&env.db).await.unwrap();
    let (s, _) = owner.call(&env, Method::POST, &keys, Some(json!({ "name": "unaudited" }))).await;
    assert_eq!(s, 201);
    assert_eq!(env.count("SELECT count(*) FROM api_keys WHERE name = 'unaudited'").await, 1);
    assert_eq!(env.count("SELECT count(*) FROM audit_log WHERE action = 'api_key.created'").await, 1);
}
