//! Signing in and staying signed in: the first operator's link, a password, an invitation;
//! the cookie's flags; CSRF; signing out; the idle timeout; lockout.

use reqwest::Method;
use serde_json::json;

use super::{Console, by_link, cli, member, set_cookie, sign_in_with_password};
use crate::harness::TestEnv;

#[tokio::test]
async fn the_first_operator_signs_in_by_link_sets_a_password_and_signs_out() {
    let env = TestEnv::start_roles(crate::harness::Roles::API_ONLY).await;
    let ops = env.store.admin().ensure_person("ops@example.com", "Ops", true, &cli()).await.unwrap();
    let token = env.store.admin().create_sign_in_link(ops.id, std::time::Duration::from_secs(300)).await.unwrap();
    let url = format!("{}/admin/v1/sign-in/link", env.api_url);

    let resp = env.http.post(&url).json(&json!({ "token": token })).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let (cookie, header) = set_cookie(&resp).unwrap();
    for flag in ["HttpOnly", "SameSite=Lax", "Path=/", "Secure", "Max-Age=900"] {
        assert!(header.contains(flag), "the session cookie has {flag}: {header}");
    }
    assert_eq!(resp.headers()["cache-control"], "no-store");
    let me: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(me["person"]["email"], "ops@example.com");
    assert_eq!(me["operator"], true);
    let console = Console { cookie, csrf: me["csrf_token"].as_str().map(str::to_owned) };

    let again = env.http.post(&url).json(&json!({ "token": token })).send().await.unwrap();
    assert_eq!(again.status(), 400, "a link signs in once");
    let again: serde_json::Value = again.json().await.unwrap();
    assert_eq!(again["error"]["code"], "link_invalid");

    // A write without the CSRF token is refused; with it, it goes through.
    let bare = Console { cookie: console.cookie.clone(), csrf: None };
    let (s, refused) = bare
        .call(&env, Method::PUT, "/admin/v1/me/password", Some(json!({ "new_password": "a long passphrase" })))
        .await;
    assert_eq!((s, refused["error"]["code"].as_str()), (403, Some("csrf_rejected")));
    let (s, _) =
        console.call(&env, Method::PUT, "/admin/v1/me/password", Some(json!({ "new_password": "short" }))).await;
    assert_eq!(s, 400, "too short");
    let (s, _) = console
        .call(&env, Method::PUT, "/admin/v1/me/password", Some(json!({ "new_password": "a long passphrase" })))
        .await;
    assert_eq!(s, 204);

    let (s, _) = console.call(&env, Method::POST, "/admin/v1/sign-out", None).await;
    assert_eq!(s, 204);
    let (s, gone) = console.call(&env, Method::GET, "/admin/v1/me", None).await;
    assert_eq!((s, gone["error"]["code"].as_str()), (401, Some("not_signed_in")), "signed out at once");

    let wrong = sign_in_with_password(&env, "ops@example.com", "nope nope nope").await;
    assert_eq!(wrong.status(), 401);
    let unknown = sign_in_with_password(&env, "who@example.com", "nope nope nope").await;
    assert_eq!(unknown.status(), 401, "an unknown email reads the same as a wrong password");
    let right = sign_in_with_password(&env, "OPS@example.com", "a long passphrase").await;
    assert_eq!(right.status(), 200, "the new password signs in");
}

#[tokio::test]
async fn forged_cross_site_writes_idle_sessions_and_repeated_wrong_passwords_are_refused() {
    let env = TestEnv::start_with(crate::harness::Roles { worker: false, scheduler: false }, |c| {
        c.admin.lockout_after = 3;
        c.admin.sign_in_per_minute = 100;
    })
    .await;
    let acme = env.store.tenancy().create_tenant("acme").await.unwrap();
    let (_, owner) = member(&env, acme.id, "owner@acme.test", hermes_core::MemberRole::Owner).await;
    let path = format!("/admin/v1/tenants/{}/invitations", acme.id);

    // A page on another site posting with the browser's cookie: even with the right token.
    let forged = env
        .http
        .post(format!("{}{path}", env.api_url))
        .header("cookie", &owner.cookie)
        .header("x-csrf-token", owner.csrf.as_deref().unwrap())
        .header("sec-fetch-site", "cross-site")
        .json(&json!({ "email": "eve@evil.test", "role": "owner" }))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 403);
    let forged = env
        .http
        .post(format!("{}{path}", env.api_url))
        .header("cookie", &owner.cookie)
        .header("x-csrf-token", "guessed")
        .json(&json!({ "email": "eve@evil.test", "role": "owner" }))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 403, "a wrong CSRF token");
    let (s, list) = owner.call(&env, Method::GET, &path, None).await;
    assert_eq!((s, list["data"].as_array().unwrap().len()), (200, 0), "nothing was created");

    // Idle past the timeout: the next request finds no session and the cookie is cleared.
    sqlx::query("UPDATE console_sessions SET last_seen_at = now() - interval '31 minutes'")
        .execute(&env.db)
        .await
        .unwrap();
    let resp =
        env.http.get(format!("{}/admin/v1/me", env.api_url)).header("cookie", &owner.cookie).send().await.unwrap();
    assert_eq!(resp.status(), 401);
    let (_, cleared) = set_cookie(&resp).expect("the stale cookie is cleared");
    assert!(cleared.contains("Max-Age=0"), "{cleared}");

    // Wrong passwords lock the account, and then even the right one waits.
    let person = env.store.admin().ensure_person("bo@acme.test", "", false, &cli()).await.unwrap();
    let hash = hermes_api::admin::password::hash("the right passphrase".into()).await.unwrap();
    env.store.admin().set_password_hash(person.id, &hash, None, &cli()).await.unwrap();
    let attempt = async |password: &str| {
        let resp = sign_in_with_password(&env, "bo@acme.test", password).await;
        let status = resp.status().as_u16();
        let body: serde_json::Value = resp.json().await.unwrap();
        (status, body["error"]["code"].as_str().map(str::to_owned))
    };
    assert_eq!(attempt("wrong one").await, (401, Some("wrong_credentials".into())));
    assert_eq!(attempt("wrong two").await, (401, Some("wrong_credentials".into())));
    assert_eq!(attempt("wrong three").await, (403, Some("account_locked".into())), "the third in a row locks");
    assert_eq!(attempt("the right passphrase").await, (403, Some("account_locked".into())), "locked means locked");
}

#[tokio::test]
async fn an_invitation_link_makes_an_account_that_signs_in_with_its_password() {
    let env = TestEnv::start_roles(crate::harness::Roles::API_ONLY).await;
    let acme = env.store.tenancy().create_tenant("acme").await.unwrap();
    let (_, owner) = member(&env, acme.id, "owner@acme.test", hermes_core::MemberRole::Owner).await;
    let (s, made) = owner
        .call(
            &env,
            Method::POST,
            &format!("/admin/v1/tenants/{}/invitations", acme.id),
            Some(json!({ "email": "New@Acme.test", "role": "admin" })),
        )
        .await;
    assert_eq!(s, 201, "{made}");
    let link = made["link"].as_str().unwrap();
    assert!(link.starts_with(&format!("{}/console/invite#", env.api_url)), "{link}");
    let token = link.split_once('#').unwrap().1;

    let accept = format!("{}/admin/v1/invitations/accept", env.api_url);
    let resp = env
        .http
        .post(&accept)
        .json(&json!({ "token": token, "display_name": "Newt", "password": "newt's passphrase" }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(set_cookie(&resp).is_some(), "accepting signs in");
    let me: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(me["memberships"][0]["role"], "admin");
    assert_eq!(me["person"]["display_name"], "Newt");
    let twice = env.http.post(&accept).json(&json!({ "token": token })).send().await.unwrap();
    assert_eq!(twice.status(), 400, "an invitation is accepted once");

    let resp = sign_in_with_password(&env, "new@acme.test", "newt's passphrase").await;
    assert_eq!(resp.status(), 200);
    let again =
        by_link(&env, env.store.admin().sign_in_record("new@acme.test").await.unwrap().unwrap().person.id).await;
    assert!(again.csrf.is_some());
}
