//! The admin plane end to end, on the real service: signing in (link, password, invitation),
//! console sessions (cookie flags, CSRF, sign-out, idle timeout, lockout), who may do what, and
//! the audit log.

mod access;
mod agents;
mod audit;
mod automation;
mod budgets;
mod conformance;
mod credentials;
mod cross_tenant;
mod mcp;
pub(crate) mod remote_cli;
mod secrets;
mod sign_in;
mod skills;
mod sso;
mod sso_rules;

use hermes_core::{MemberRole, PersonId, TenantId};
use hermes_store::admin::{Actor, ActorKind, Audit};
use reqwest::Method;
use serde_json::Value;

use crate::harness::{Roles, TestEnv};

/// A browser's view of one console session: its cookie and CSRF token.
pub struct Console {
    pub cookie: String,
    pub csrf: Option<String>,
}

pub fn cli() -> Audit {
    Audit {
        actor: Actor { kind: ActorKind::Cli, id: "test".into(), label: "hermesctl (test)".into() },
        request_id: None,
        source_address: None,
    }
}

/// The session cookie a response sets (`name=value`), and the whole header.
pub fn set_cookie(resp: &reqwest::Response) -> Option<(String, String)> {
    resp.headers().get_all("set-cookie").iter().filter_map(|v| v.to_str().ok()).find_map(|v| {
        v.starts_with("hermes_console=").then(|| (v.split(';').next().unwrap_or_default().to_owned(), v.to_owned()))
    })
}

/// A person (made if new) with `role` in `tenant`, signed in through a one-time link.
/// Saves `skill_md` (checked as an upload is) as one of `tenant`'s own skills.
pub async fn save_team_skill(env: &TestEnv, tenant: TenantId, skill_md: &str) {
    let checked = hermes_skills::check(skill_md, vec![], None).unwrap();
    let skill = hermes_store::NewSkill {
        name: checked.skill.name.clone(),
        category: checked.skill.category.clone(),
        description: checked.skill.description.clone(),
        meta: serde_json::to_value(&checked.skill).unwrap(),
        skill_md: checked.skill_md,
        content_hash: checked.content_hash,
        files: checked.files,
    };
    env.store.agents().save_tenant_skill(tenant, &skill, "test").await.unwrap();
}

pub async fn member(env: &TestEnv, tenant: TenantId, email: &str, role: MemberRole) -> (PersonId, Console) {
    let person = env.store.admin().ensure_person(email, "", false, &cli()).await.unwrap();
    env.store.admin().add_member(tenant, person.id, role, &cli()).await.unwrap();
    (person.id, by_link(env, person.id).await)
}

/// Team acme (its agent helper and an API key) with its owner and a member signed in to the
/// console: where an admin-plane test of one team's page starts.
pub struct Acme {
    pub env: TestEnv,
    pub id: TenantId,
    pub key: String,
    pub owner: Console,
    pub viewer: Console,
}

impl Acme {
    pub async fn start(roles: Roles) -> Self {
        let env = TestEnv::start_with(roles, |_| {}).await;
        let (id, key, owner) = acme_and_owner(&env).await;
        let (_, viewer) = member(&env, id, "viewer@acme.test", MemberRole::Member).await;
        Self { env, id, key, owner, viewer }
    }
}

/// Team acme (its agent helper and an API key) and its owner signed in to the console.
pub async fn acme_and_owner(env: &TestEnv) -> (TenantId, String, Console) {
    let (acme, _, key) = env.tenant("acme", "helper").await;
    let (_, owner) = member(env, acme, "owner@acme.test", MemberRole::Owner).await;
    (acme, key, owner)
}

/// Signs `person` in with a fresh one-time link.
pub async fn by_link(env: &TestEnv, person: PersonId) -> Console {
    let token = env.store.admin().create_sign_in_link(person, std::time::Duration::from_secs(300)).await.unwrap();
    let resp = env
        .http
        .post(format!("{}/admin/v1/sign-in/link", env.api_url))
        .json(&serde_json::json!({ "token": token }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "signing in by link");
    let (cookie, _) = set_cookie(&resp).expect("a session cookie");
    let me: Value = resp.json().await.unwrap();
    Console { cookie, csrf: me["csrf_token"].as_str().map(str::to_owned) }
}

impl Console {
    /// A request as the console makes it: the cookie, and the CSRF token on writes.
    pub async fn call(&self, env: &TestEnv, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = env.http.request(method.clone(), format!("{}{path}", env.api_url)).header("cookie", &self.cookie);
        if method != Method::GET
            && let Some(csrf) = &self.csrf
        {
            req = req.header("x-csrf-token", csrf);
        }
        send(req, body).await
    }
}

/// Signs in with an email and a password, as the console's sign-in page does.
pub async fn sign_in_with_password(env: &TestEnv, email: &str, password: &str) -> reqwest::Response {
    let body = serde_json::json!({ "email": email, "password": password });
    env.http.post(format!("{}/admin/v1/sign-in", env.api_url)).json(&body).send().await.unwrap()
}

/// A request with an admin token.
pub async fn with_token(env: &TestEnv, token: &str, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
    send(env.http.request(method, format!("{}{path}", env.api_url)).bearer_auth(token), body).await
}

/// Sends `req` with `body` as JSON if there is one: the status, and the JSON answer (or its
/// text as a string).
async fn send(mut req: reqwest::RequestBuilder, body: Option<Value>) -> (u16, Value) {
    if let Some(body) = body {
        req = req.json(&body);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}
