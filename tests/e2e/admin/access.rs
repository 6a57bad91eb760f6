//! Who may do what, through the real API: a member reads and changes nothing, an admin manages
//! all but owners, another tenant's objects by URL answer 404, tokens never exceed their
//! maker, and removing a member ends their access at once.

use hermes_core::MemberRole;
use reqwest::Method;
use serde_json::json;

use super::{member, with_token};
use crate::harness::{Roles, Team};

#[tokio::test]
async fn each_role_may_do_what_the_table_says_and_no_more() {
    let Team { env, tenant: acme, .. } = Team::start(Roles::API_ONLY, "helper").await;
    let (other, _, _) = env.tenant("other", "helper").await;
    let (owner_id, owner) = member(&env, acme, "owner@acme.test", MemberRole::Owner).await;
    let (admin_id, admin) = member(&env, acme, "admin@acme.test", MemberRole::Admin).await;
    let (member_id, viewer) = member(&env, acme, "member@acme.test", MemberRole::Member).await;
    let t = |rest: &str| format!("/admin/v1/tenants/{acme}{rest}");

    // A member reads...
    for path in [t(""), t("/members"), t("/keys"), t("/invitations"), t("/tokens")] {
        let (s, body) = viewer.call(&env, Method::GET, &path, None).await;
        assert_eq!(s, 200, "a member reads {path}: {body}");
    }
    let (_, view) = viewer.call(&env, Method::GET, &t(""), None).await;
    assert_eq!(view["standing"], "member");
    assert!(view["may"].as_array().unwrap().iter().all(|op| op.as_str().unwrap().contains(".view")), "{view}");
    // ...and changes nothing, and does not read the audit log.
    let writes = [
        (Method::POST, t("/invitations"), Some(json!({ "email": "x@acme.test", "role": "member" }))),
        (Method::POST, t("/keys"), Some(json!({ "name": "mine" }))),
        (Method::POST, t("/tokens"), Some(json!({ "name": "mine" }))),
        (Method::PATCH, t(&format!("/members/{member_id}")), Some(json!({ "role": "admin" }))),
        (Method::DELETE, t(&format!("/members/{admin_id}")), None),
        (Method::GET, t("/audit"), None),
    ];
    for (method, path, body) in writes {
        let (s, refused) = viewer.call(&env, method.clone(), &path, body).await;
        assert_eq!((s, refused["error"]["code"].as_str()), (403, Some("permission_denied")), "{method} {path}");
    }

    // An admin manages members and keys, but owners are the owners' business.
    let (s, _) = admin.call(&env, Method::POST, &t("/keys"), Some(json!({ "name": "ci", "agent": "helper" }))).await;
    assert_eq!(s, 201);
    let (s, _) =
        admin.call(&env, Method::PATCH, &t(&format!("/members/{member_id}")), Some(json!({ "role": "admin" }))).await;
    assert_eq!(s, 200);
    for (method, path, body) in [
        (Method::PATCH, t(&format!("/members/{member_id}")), Some(json!({ "role": "owner" }))),
        (Method::DELETE, t(&format!("/members/{owner_id}")), None),
        (Method::POST, t("/invitations"), Some(json!({ "email": "boss@acme.test", "role": "owner" }))),
    ] {
        let (s, _) = admin.call(&env, method.clone(), &path, body).await;
        assert_eq!(s, 403, "an admin may not {method} {path} (owners)");
    }
    let (s, last) = owner.call(&env, Method::DELETE, &t(&format!("/members/{owner_id}")), None).await;
    assert_eq!((s, last["error"]["code"].as_str()), (409, Some("last_owner")));

    // Another tenant by URL does not exist, whatever the role; operators' routes are refused.
    for console in [&owner, &admin, &viewer] {
        for path in [format!("/admin/v1/tenants/{other}/members"), format!("/admin/v1/tenants/{other}/keys")] {
            let (s, body) = console.call(&env, Method::GET, &path, None).await;
            assert_eq!((s, body["error"]["code"].as_str()), (404, Some("tenant_not_found")), "{path}");
        }
        let (s, _) = console.call(&env, Method::GET, "/admin/v1/tenants", None).await;
        assert_eq!(s, 403, "only operators list tenants");
    }
    let (s, _) = owner.call(&env, Method::GET, "/admin/v1/tenants/not-a-uuid/members", None).await;
    assert_eq!(s, 404);

    // A token is capped by its maker's role, and belongs to one tenant.
    let (s, _) = admin.call(&env, Method::POST, &t("/tokens"), Some(json!({ "name": "x", "role": "owner" }))).await;
    assert_eq!(s, 403, "an admin cannot make an owner's token");
    let (s, made) = admin
        .call(&env, Method::POST, &t("/tokens"), Some(json!({ "name": "deploy", "role": "admin", "service": true })))
        .await;
    assert_eq!(s, 201, "{made}");
    let secret = made["secret"].as_str().unwrap();
    assert!(secret.starts_with("hat_"));
    let (s, _) = with_token(&env, secret, Method::GET, &t("/members"), None).await;
    assert_eq!(s, 200);
    let (s, _) = with_token(&env, secret, Method::GET, &format!("/admin/v1/tenants/{other}/members"), None).await;
    assert_eq!(s, 404, "a token of acme knows no other tenant");
    let (s, listed) = owner.call(&env, Method::GET, &t("/tokens"), None).await;
    assert_eq!(s, 200);
    assert!(listed.to_string().find(secret).is_none(), "a token's secret is never listed");

    // Removing a member ends their access at once.
    let (s, _) = owner.call(&env, Method::DELETE, &t(&format!("/members/{member_id}")), None).await;
    assert_eq!(s, 204);
    let (s, _) = viewer.call(&env, Method::GET, &t("/members"), None).await;
    assert_eq!(s, 404, "a removed member's session no longer reaches the tenant");

    // An operator reaches every tenant.
    let ops = env.store.admin().ensure_person("ops@example.com", "", true, &super::cli()).await.unwrap();
    let ops = super::by_link(&env, ops.id).await;
    for tenant in [acme, other] {
        let (s, view) = ops.call(&env, Method::GET, &format!("/admin/v1/tenants/{tenant}"), None).await;
        assert_eq!((s, view["standing"].as_str()), (200, Some("operator")));
    }
    let (s, list) = ops.call(&env, Method::GET, "/admin/v1/tenants", None).await;
    assert_eq!((s, list["data"].as_array().unwrap().len()), (200, 2));
    let (s, _) = ops
        .call(
            &env,
            Method::PUT,
            &format!("/admin/v1/tenants/{other}/quotas"),
            Some(json!({ "requests_per_minute": 30 })),
        )
        .await;
    assert_eq!(s, 204);
    let (s, _) = owner.call(&env, Method::PUT, &t("/quotas"), Some(json!({ "requests_per_minute": 0 }))).await;
    assert_eq!(s, 403, "owners do not set their own quotas");
}
