//! The admin API's real answers match `/openapi.json`, successes and errors alike, and the
//! document says how each operation authenticates.

use reqwest::Method;
use serde_json::{Value, json};

use super::Acme;
use crate::harness::Roles;
use crate::openapi::Spec;

#[tokio::test]
async fn admin_answers_match_the_openapi_document() {
    let Acme { env, id: acme, owner, viewer, .. } = Acme::start(Roles::API_ONLY).await;
    let doc: Value = env.http.get(format!("{}/openapi.json", env.api_url)).send().await.unwrap().json().await.unwrap();
    let schemes = doc["components"]["securitySchemes"].as_object().unwrap();
    assert!(schemes.contains_key("admin_token") && schemes.contains_key("console_session"), "{schemes:?}");
    assert_eq!(
        doc["paths"]["/admin/v1/tenants/{tenant}/members"]["get"]["security"],
        json!([{ "admin_token": [] }, { "console_session": [] }]),
        "an admin operation takes a token or a session, not an API key"
    );
    let spec = Spec { doc };

    let ops = env.store.admin().ensure_person("ops@example.com", "", true, &super::cli()).await.unwrap();
    let ops = super::by_link(&env, ops.id).await;
    let t = |rest: &str| format!("/admin/v1/tenants/{acme}{rest}");
    let templated = |rest: &str| format!("/admin/v1/tenants/{{tenant}}{rest}");

    let (s, me) = owner.call(&env, Method::GET, "/admin/v1/me", None).await;
    spec.check("get", "/admin/v1/me", s, &me);
    let (s, tenant) = owner.call(&env, Method::GET, &t(""), None).await;
    spec.check("get", &templated(""), s, &tenant);
    let (s, members) = owner.call(&env, Method::GET, &t("/members"), None).await;
    spec.check("get", &templated("/members"), s, &members);
    let (s, toolsets) = owner.call(&env, Method::GET, &t("/toolsets"), None).await;
    spec.check("get", &templated("/toolsets"), s, &toolsets);
    let viewer_id =
        members["data"].as_array().unwrap().iter().find(|m| m["email"] == "viewer@acme.test").unwrap()["id"].clone();
    let (s, changed) = owner
        .call(
            &env,
            Method::PATCH,
            &t(&format!("/members/{}", viewer_id.as_str().unwrap())),
            Some(json!({"role": "admin"})),
        )
        .await;
    spec.check("patch", &templated("/members/{person}"), s, &changed);
    let (s, invited) = owner
        .call(&env, Method::POST, &t("/invitations"), Some(json!({"email": "new@acme.test", "role": "member"})))
        .await;
    spec.check("post", &templated("/invitations"), s, &invited);
    let (s, bad) =
        owner.call(&env, Method::POST, &t("/invitations"), Some(json!({"email": "nope", "role": "member"}))).await;
    assert_eq!(s, 400);
    spec.check("post", &templated("/invitations"), s, &bad);
    let (s, list) = owner.call(&env, Method::GET, &t("/invitations"), None).await;
    spec.check("get", &templated("/invitations"), s, &list);
    let (s, token) = owner.call(&env, Method::POST, &t("/tokens"), Some(json!({"name": "ci"}))).await;
    spec.check("post", &templated("/tokens"), s, &token);
    let (s, tokens) = owner.call(&env, Method::GET, &t("/tokens"), None).await;
    spec.check("get", &templated("/tokens"), s, &tokens);
    let (s, key) =
        owner.call(&env, Method::POST, &t("/keys"), Some(json!({"name": "ci", "expires_in_days": 30}))).await;
    spec.check("post", &templated("/keys"), s, &key);
    let (s, keys) = owner.call(&env, Method::GET, &t("/keys"), None).await;
    spec.check("get", &templated("/keys"), s, &keys);
    let session: String = sqlx::query_scalar("SELECT id::text FROM sessions WHERE tenant_id = $1 LIMIT 1")
        .bind(acme.as_uuid())
        .fetch_optional(&env.db)
        .await
        .unwrap()
        .unwrap_or_default();
    if !session.is_empty() {
        let (s, exported) = owner.call(&env, Method::GET, &t(&format!("/sessions/{session}/export")), None).await;
        assert_eq!(s, 200, "{exported}");
    }
    let (s, audit) = owner.call(&env, Method::GET, &t("/audit"), None).await;
    spec.check("get", &templated("/audit"), s, &audit);
    let (s, denied) = viewer.call(&env, Method::GET, &t("/audit"), None).await;
    assert_eq!(s, 200, "the viewer is an admin now");
    spec.check("get", &templated("/audit"), s, &denied);
    let (s, missing) =
        owner.call(&env, Method::GET, "/admin/v1/tenants/00000000-0000-0000-0000-000000000000/members", None).await;
    assert_eq!(s, 404);
    spec.check("get", &templated("/members"), s, &missing);
    let (s, refused) = owner.call(&env, Method::GET, "/admin/v1/tenants", None).await;
    assert_eq!(s, 403);
    spec.check("get", "/admin/v1/tenants", s, &refused);

    let (s, tenants) = ops.call(&env, Method::GET, "/admin/v1/tenants", None).await;
    spec.check("get", "/admin/v1/tenants", s, &tenants);
    let (s, made) = ops
        .call(&env, Method::POST, "/admin/v1/tenants", Some(json!({"name": "beta", "owner_email": "b@beta.test"})))
        .await;
    assert_eq!(s, 201, "{made}");
    spec.check("post", "/admin/v1/tenants", s, &made);
    let (s, install) = ops.call(&env, Method::GET, "/admin/v1/audit", None).await;
    spec.check("get", "/admin/v1/audit", s, &install);
    assert!(install["data"].as_array().unwrap().iter().any(|e| e["action"] == "tenant.created"), "{install}");

    let anonymous = super::Console { cookie: String::new(), csrf: None };
    let (s, out) = anonymous.call(&env, Method::GET, "/admin/v1/me", None).await;
    assert_eq!(s, 401);
    spec.check("get", "/admin/v1/me", s, &out);
    let wrong = super::sign_in_with_password(&env, "owner@acme.test", "not the password").await;
    let status = wrong.status().as_u16();
    spec.check("post", "/admin/v1/sign-in", status, &wrong.json().await.unwrap());
}
