//! Single sign-on through a scripted OpenID Connect provider: the code flow with PKCE signs a
//! person with an account in, and each way a provider or an attacker can get it wrong sends
//! the browser back to the sign-in page with the reason, signed in as nobody.

use hermes_core::MemberRole;
use hermes_testkit::oidc::{CLIENT_ID, CLIENT_SECRET, Login, OidcProvider};

use super::{member, set_cookie};
use crate::harness::{Roles, TestEnv, json_of};

pub(super) struct Browser {
    pub http: reqwest::Client,
    pub api: String,
}

impl Browser {
    pub(super) fn new(env: &TestEnv) -> Self {
        let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        Self { http, api: env.api_url.clone() }
    }

    /// Runs the redirect dance by hand; the last redirect's target and the cookies it set.
    pub(super) async fn sign_in(&self, tamper_state: bool) -> (String, Option<String>) {
        self.sign_in_from("next=/console/t", tamper_state).await
    }

    /// The dance from `/admin/v1/oidc/start?{query}`; a start that goes straight back to the
    /// sign-in page ends there.
    pub(super) async fn sign_in_from(&self, query: &str, tamper_state: bool) -> (String, Option<String>) {
        let start = self.http.get(format!("{}/admin/v1/oidc/start?{query}", self.api)).send().await.unwrap();
        assert_eq!(start.status(), 303);
        let location = start.headers()["location"].to_str().unwrap().to_owned();
        if location.starts_with("/console/sign-in") {
            return (location, None);
        }
        let flow = start
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find(|v| v.starts_with("hermes_oidc="))
            .map(|v| v.split(';').next().unwrap().to_owned())
            .expect("the flow cookie");
        let authorize = start.headers()["location"].to_str().unwrap().to_owned();
        assert!(authorize.contains("code_challenge_method=S256") && authorize.contains("nonce="), "{authorize}");
        let back = self.http.get(&authorize).send().await.unwrap();
        let mut callback = back.headers()["location"].to_str().unwrap().to_owned();
        if tamper_state {
            callback = callback.replace("state=", "state=x");
        }
        let done = self.http.get(&callback).header("cookie", &flow).send().await.unwrap();
        assert_eq!(done.status(), 303);
        let target = done.headers()["location"].to_str().unwrap().to_owned();
        (target, set_cookie(&done).map(|(c, _)| c).filter(|c| c != "hermes_console="))
    }
}

/// A scripted provider, and the service with it as the installation's provider (sign-ins not
/// limited: the tests make many).
pub(super) async fn with_installation_provider() -> (OidcProvider, TestEnv) {
    let idp = OidcProvider::start().await.unwrap();
    let issuer = idp.issuer();
    let env = TestEnv::start_with(Roles { worker: false, scheduler: false }, |c| {
        c.admin.oidc.issuer = Some(issuer);
        c.admin.oidc.client_id = CLIENT_ID.into();
        c.admin.oidc.client_secret = Some(CLIENT_SECRET.into());
        c.admin.sign_in_per_minute = 1_000;
    })
    .await;
    (idp, env)
}

#[tokio::test]
async fn the_identity_provider_signs_people_in_and_every_bad_answer_is_refused() {
    let (idp, env) = with_installation_provider().await;
    let acme = env.store.tenancy().create_tenant("acme").await.unwrap();
    member(&env, acme.id, "ann@acme.test", MemberRole::Admin).await;
    let browser = Browser {
        http: reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap(),
        api: env.api_url.clone(),
    };
    let options: serde_json::Value =
        env.http.get(format!("{}/admin/v1/sign-in/options", env.api_url)).send().await.unwrap().json().await.unwrap();
    assert_eq!(options["sso"]["start"], "/admin/v1/oidc/start");

    idp.next_login(Some(Login::as_user("Ann@Acme.test")));
    let (target, cookie) = browser.sign_in(false).await;
    assert_eq!(target, "/console/t", "back where the person was going");
    let cookie = cookie.expect("a session");
    let me = json_of(env.http.get(format!("{}/admin/v1/me", env.api_url)).header("cookie", &cookie)).await;
    assert_eq!(me["person"]["email"], "ann@acme.test");
    assert_eq!(me["memberships"][0]["role"], "admin");

    let refusals = [
        (Login { foreign_key: true, ..Login::as_user("ann@acme.test") }, "token"),
        (Login { wrong_nonce: true, ..Login::as_user("ann@acme.test") }, "token"),
        (Login { wrong_audience: true, ..Login::as_user("ann@acme.test") }, "token"),
        (Login { email_verified: false, ..Login::as_user("ann@acme.test") }, "unverified"),
        (Login::as_user("nobody@acme.test"), "no_account"),
    ];
    for (login, why) in refusals {
        let what = format!("{login:?}");
        idp.next_login(Some(login));
        let (target, cookie) = browser.sign_in(false).await;
        assert_eq!(target, format!("/console/sign-in?sso_error={why}"), "{what}");
        assert!(cookie.is_none(), "no session for {what}");
    }
    idp.next_login(Some(Login::as_user("ann@acme.test")));
    let (target, cookie) = browser.sign_in(true).await;
    assert_eq!((target.as_str(), cookie), ("/console/sign-in?sso_error=flow", None), "a state that does not match");
    idp.next_login(None);
    let (target, _) = browser.sign_in(false).await;
    assert_eq!(target, "/console/sign-in?sso_error=cancelled");

    // The callback without the flow's cookie (another browser finishing someone's flow).
    idp.next_login(Some(Login::as_user("ann@acme.test")));
    let start = browser.http.get(format!("{}/admin/v1/oidc/start", env.api_url)).send().await.unwrap();
    let authorize = start.headers()["location"].to_str().unwrap().to_owned();
    let back = browser.http.get(&authorize).send().await.unwrap();
    let callback = back.headers()["location"].to_str().unwrap().to_owned();
    let stolen = browser.http.get(&callback).send().await.unwrap();
    assert_eq!(stolen.headers()["location"], "/console/sign-in?sso_error=flow");
    assert_eq!(idp.refused_verifiers(), 0, "every code we redeemed came with its own verifier");
}

pub(super) async fn me(env: &TestEnv, cookie: &str) -> serde_json::Value {
    let resp = env.http.get(format!("{}/admin/v1/me", env.api_url)).header("cookie", cookie).send().await.unwrap();
    resp.json().await.unwrap()
}

#[tokio::test]
async fn a_tenants_own_provider_signs_in_its_domains_people_and_nobody_else() {
    let idp = OidcProvider::start().await.unwrap();
    // No installation provider: only the tenant's.
    let env = TestEnv::start_roles(Roles::API_ONLY).await;
    let acme = env.store.tenancy().create_tenant("acme").await.unwrap();
    let globex = env.store.tenancy().create_tenant("globex").await.unwrap();
    let (_, owner) = member(&env, acme.id, "olive@acme.test", MemberRole::Owner).await;
    let ops = env.store.admin().ensure_person("ops@example.com", "", true, &super::cli()).await.unwrap();
    let ops = super::by_link(&env, ops.id).await;
    env.store.admin().ensure_person("root@acme.test", "", true, &super::cli()).await.unwrap();
    let sso = |tenant: hermes_core::TenantId| format!("/admin/v1/tenants/{tenant}/sso");
    let settings = serde_json::json!({
        "issuer": idp.issuer(), "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
        "email_domains": ["Acme.test"], "join_as": "member",
    });

    // The domains are the operators' to give: an owner cannot, an operator can.
    assert_eq!(owner.call(&env, reqwest::Method::PUT, &sso(acme.id), Some(settings.clone())).await.0, 403);
    let (s, set) = ops.call(&env, reqwest::Method::PUT, &sso(acme.id), Some(settings.clone())).await;
    assert_eq!(s, 200, "{set}");
    assert_eq!((set["email_domains"][0].as_str(), set["has_client_secret"].as_bool()), (Some("acme.test"), Some(true)));
    let (s, shown) = owner.call(&env, reqwest::Method::GET, &sso(acme.id), None).await;
    assert_eq!(s, 200);
    assert!(!shown.to_string().contains(CLIENT_SECRET), "the secret is never shown: {shown}");
    let (s, taken) = ops.call(&env, reqwest::Method::PUT, &sso(globex.id), Some(settings.clone())).await;
    assert_eq!(s, 409, "a domain is one tenant's: {taken}");
    let bad = serde_json::json!({"issuer": idp.issuer(), "client_id": "x", "email_domains": ["not a domain"]});
    assert_eq!(ops.call(&env, reqwest::Method::PUT, &sso(globex.id), Some(bad)).await.0, 400);
    let options: serde_json::Value =
        env.http.get(format!("{}/admin/v1/sign-in/options", env.api_url)).send().await.unwrap().json().await.unwrap();
    assert_eq!((options["sso"].is_null(), options["sso_by_email"].as_bool()), (true, Some(true)), "{options}");

    let browser = Browser {
        http: reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap(),
        api: env.api_url.clone(),
    };
    // Someone new at the domain signs in and joins acme as a member.
    idp.next_login(Some(Login::as_user("Newbie@acme.test")));
    let (target, cookie) = browser.sign_in_from("email=newbie%40ACME.test&next=/console", false).await;
    assert_eq!(target, "/console");
    let seen = me(&env, &cookie.expect("a session")).await;
    assert_eq!(seen["person"]["email"], "newbie@acme.test");
    assert_eq!(
        (seen["memberships"][0]["tenant_name"].as_str(), seen["memberships"][0]["role"].as_str()),
        (Some("acme"), Some("member")),
        "{seen}"
    );
    // Refused: an email outside the tenant's domains, an operator, a domain nobody signs in.
    for (login, start, why) in [
        ("eve@evil.test", "email=eve%40acme.test", "wrong_domain"),
        ("root@acme.test", "email=root%40acme.test", "operator"),
        ("x@unknown.test", "email=x%40unknown.test", "no_provider"),
        ("x@acme.test", "email=not-an-email", "no_provider"),
    ] {
        idp.next_login(Some(Login::as_user(login)));
        let (target, cookie) = browser.sign_in_from(start, false).await;
        assert_eq!(target, format!("/console/sign-in?sso_error={why}"), "{login} from {start}");
        assert!(cookie.is_none());
    }

    // Who set it, who joined through it: in acme's audit log.
    let filter = hermes_store::admin::AuditFilter { limit: 50, ..Default::default() };
    let entries = env.store.admin().audit_entries(acme.id, &filter).await.unwrap().entries;
    let actions: Vec<(&str, &str)> = entries.iter().map(|e| (e.action.as_str(), e.actor.id.as_str())).collect();
    assert!(actions.iter().any(|a| a.0 == "sso.configured"), "{actions:?}");
    assert!(actions.contains(&("member.added", "sso")), "{actions:?}");

    // Removed: the domain signs in nowhere again.
    assert_eq!(ops.call(&env, reqwest::Method::DELETE, &sso(acme.id), None).await.0, 204);
    let (target, _) = browser.sign_in_from("email=newbie%40acme.test", false).await;
    assert_eq!(target, "/console/sign-in?sso_error=no_provider");
    assert_eq!(idp.refused_verifiers(), 0);
}
