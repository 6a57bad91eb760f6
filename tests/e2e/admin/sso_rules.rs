//! Whom an identity provider may sign in (security review 2026-12, M3, L1, L13, and H1's
//! pre-claimed accounts): a verified email only, bound to its subject at the first sign-in; the
//! installation's provider never signs in a team domain's people or an operator who did not opt
//! in; a team's provider opens a session valid in that team only, and its discovery is read
//! once, not on every start; an account made from an invitation link loses its password when a
//! provider proves its address.

use hermes_core::MemberRole;
use hermes_testkit::oidc::{CLIENT_ID, CLIENT_SECRET, Login, OidcProvider};
use reqwest::Method;
use serde_json::json;

use super::sso::{Browser, me, with_installation_provider};
use super::{cli, member};
use crate::harness::{Roles, TestEnv};

#[tokio::test]
async fn the_installation_provider_signs_in_only_verified_bound_identities_of_its_own_people() {
    let (idp, env) = with_installation_provider().await;
    let team_idp = OidcProvider::start().await.unwrap();
    let (acme, globex) = (
        env.store.tenancy().create_tenant("acme").await.unwrap(),
        env.store.tenancy().create_tenant("globex").await.unwrap(),
    );
    member(&env, acme.id, "ann@acme.test", MemberRole::Admin).await;
    member(&env, acme.id, "carl@acme.test", MemberRole::Member).await;
    member(&env, globex.id, "bob@globex.test", MemberRole::Member).await;
    let ops = env.store.admin().ensure_person("op@ops.test", "", true, &cli()).await.unwrap();
    let root = env.store.admin().ensure_person("root@ops.test", "", true, &cli()).await.unwrap();
    let root = super::by_link(&env, root.id).await;
    let team = json!({"issuer": team_idp.issuer(), "client_id": CLIENT_ID, "email_domains": ["globex.test"]});
    let (s, body) = root.call(&env, Method::PUT, &format!("/admin/v1/tenants/{}/sso", globex.id), Some(team)).await;
    assert_eq!(s, 200, "{body}");
    let browser = Browser::new(&env);
    let refused = async |login: Login, why: &str| {
        let what = format!("{login:?}");
        idp.next_login(Some(login));
        let (target, cookie) = browser.sign_in(false).await;
        assert_eq!(target, format!("/console/sign-in?sso_error={why}"), "{what}");
        assert!(cookie.is_none(), "no session for {what}");
    };

    // No `email_verified` at all (Entra ID's way): not verified.
    refused(Login { omit_email_verified: true, ..Login::as_user("ann@acme.test") }, "unverified").await;
    // The first verified sign-in binds ann's subject; the same email with another subject is
    // a reassigned address, and ann's subject cannot sign in anyone else.
    idp.next_login(Some(Login::as_user("ann@acme.test")));
    assert!(browser.sign_in(false).await.1.is_some(), "ann signs in");
    refused(Login { subject: Some("sub-someone-new".into()), ..Login::as_user("ann@acme.test") }, "identity").await;
    refused(Login { subject: Some("sub-ann@acme.test".into()), ..Login::as_user("carl@acme.test") }, "identity").await;
    // An operator, until they opt in.
    refused(Login::as_user("op@ops.test"), "operator").await;
    env.store.admin().set_operator_sso(ops.id, true, &cli()).await.unwrap();
    idp.next_login(Some(Login::as_user("op@ops.test")));
    let cookie = browser.sign_in(false).await.1.expect("an operator who opted in");
    assert_eq!(me(&env, &cookie).await["operator"], true);
    // A domain a team's own provider serves signs in there alone.
    refused(Login::as_user("bob@globex.test"), "team_provider").await;
    assert_eq!(idp.refused_verifiers(), 0);
}

#[tokio::test]
async fn a_verified_sign_in_drops_the_password_a_link_holder_set_on_an_address() {
    let (idp, env) = with_installation_provider().await;
    let acme = env.store.tenancy().create_tenant("acme").await.unwrap();
    let (_, mallory) = member(&env, acme.id, "mallory@acme.test", MemberRole::Admin).await;
    // Mallory pre-claims a stranger's address: invites it and accepts the link herself.
    let path = format!("/admin/v1/tenants/{}/invitations", acme.id);
    let (_, made) =
        mallory.call(&env, Method::POST, &path, Some(json!({"email": "ceo@bigco.test", "role": "member"}))).await;
    let token = made["link"].as_str().unwrap().split_once('#').unwrap().1.to_owned();
    let body = json!({"token": token, "password": "mallory's passphrase"});
    let accepted =
        env.http.post(format!("{}/admin/v1/invitations/accept", env.api_url)).json(&body).send().await.unwrap();
    assert_eq!(accepted.status(), 200);
    let claimed: serde_json::Value = accepted.json().await.unwrap();
    assert_eq!(claimed["person"]["email_proven"], false, "{claimed}");

    // The address's owner signs in through the provider, which verified it.
    idp.next_login(Some(Login::as_user("ceo@bigco.test")));
    let cookie = Browser::new(&env).sign_in(false).await.1.expect("the owner signs in");
    let seen = me(&env, &cookie).await;
    assert_eq!(
        (seen["person"]["email_proven"].as_bool(), seen["person"]["has_password"].as_bool()),
        (Some(true), Some(false))
    );
    let sign_in = json!({"email": "ceo@bigco.test", "password": "mallory's passphrase"});
    let tried = env.http.post(format!("{}/admin/v1/sign-in", env.api_url)).json(&sign_in).send().await.unwrap();
    assert_eq!(tried.status(), 401, "mallory's password is gone");
    let log = env.store.admin().installation_audit_entries(&Default::default()).await.unwrap().entries;
    assert!(log.iter().any(|e| e.action == "person.email_proven"), "recorded");
}

#[tokio::test]
async fn a_teams_provider_opens_a_session_for_that_team_only_and_reads_its_discovery_once() {
    let idp = OidcProvider::start().await.unwrap();
    let env =
        TestEnv::start_with(Roles { worker: false, scheduler: false }, |c| c.admin.sign_in_per_minute = 1_000).await;
    let (acme, partner) = (
        env.store.tenancy().create_tenant("acme").await.unwrap(),
        env.store.tenancy().create_tenant("partner").await.unwrap(),
    );
    member(&env, acme.id, "bob@acme.test", MemberRole::Member).await;
    let bob = env.store.admin().sign_in_record("bob@acme.test").await.unwrap().unwrap().person;
    env.store.admin().add_member(partner.id, bob.id, MemberRole::Owner, &cli()).await.unwrap();
    let ops = env.store.admin().ensure_person("ops@example.com", "", true, &cli()).await.unwrap();
    let ops = super::by_link(&env, ops.id).await;
    let settings = json!({"issuer": idp.issuer(), "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "email_domains": ["acme.test"]});
    let (s, body) = ops.call(&env, Method::PUT, &format!("/admin/v1/tenants/{}/sso", acme.id), Some(settings)).await;
    assert_eq!(s, 200, "{body}");

    let browser = Browser::new(&env);
    idp.next_login(Some(Login::as_user("bob@acme.test")));
    let cookie = browser.sign_in_from("email=bob%40acme.test&next=/console", false).await.1.expect("a session");
    let seen = me(&env, &cookie).await;
    assert_eq!(seen["tenant_scope"], acme.id.to_string(), "{seen}");
    let teams: Vec<&str> =
        seen["memberships"].as_array().unwrap().iter().filter_map(|m| m["tenant_name"].as_str()).collect();
    assert_eq!(teams, ["acme"], "the session shows acme alone");
    let get = |path: String| {
        let req = env.http.get(format!("{}{path}", env.api_url)).header("cookie", &cookie);
        async move { req.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(get(format!("/admin/v1/tenants/{}", acme.id)).await, 200);
    assert_eq!(get(format!("/admin/v1/tenants/{}", partner.id)).await, 404, "acme's provider vouches for acme only");
    assert_eq!(get(format!("/admin/v1/tenants/{}/members", partner.id)).await, 404);

    // Strangers starting sign-ins for the domain do not make the API read the provider again.
    let before = idp.discoveries();
    for _ in 0..30 {
        let start =
            browser.http.get(format!("{}/admin/v1/oidc/start?email=x%40acme.test", env.api_url)).send().await.unwrap();
        assert_eq!(start.status(), 303);
    }
    assert_eq!(idp.discoveries(), before, "discovery is kept, not read per start ({before} before)");
    assert!(before <= 1, "read once for the sign-in: {before}");
}
