//! Single sign-on through a scripted OpenID Connect provider: the code flow with PKCE signs a
//! person with an account in, and each way a provider or an attacker can get it wrong sends
//! the browser back to the sign-in page with the reason, signed in as nobody.

use hermes_core::MemberRole;
use hermes_testkit::oidc::{CLIENT_ID, CLIENT_SECRET, Login, OidcProvider};

use super::{member, set_cookie};
use crate::harness::{Roles, TestEnv};

struct Browser {
    http: reqwest::Client,
    api: String,
}

impl Browser {
    /// Runs the redirect dance by hand; the last redirect's target and the cookies it set.
    async fn sign_in(&self, tamper_state: bool) -> (String, Option<String>) {
        let start = self.http.get(format!("{}/admin/v1/oidc/start?next=/console/t", self.api)).send().await.unwrap();
        assert_eq!(start.status(), 303);
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

#[tokio::test]
async fn the_identity_provider_signs_people_in_and_every_bad_answer_is_refused() {
    let idp = OidcProvider::start().await.unwrap();
    let issuer = idp.issuer();
    let env = TestEnv::start_with(Roles { worker: false, scheduler: false }, |c| {
        c.admin.oidc.issuer = Some(issuer);
        c.admin.oidc.client_id = CLIENT_ID.into();
        c.admin.oidc.client_secret = Some(CLIENT_SECRET.into());
    })
    .await;
    let acme = env.store.create_tenant("acme").await.unwrap();
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
    let me: serde_json::Value = env
        .http
        .get(format!("{}/admin/v1/me", env.api_url))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
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
