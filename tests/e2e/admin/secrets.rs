//! Secret bindings in the admin API (issue 39): an admin binds a team credential to a variable
//! name of an agent's sandboxes; the binding is shown with the credential's hosts and never a
//! value; a member may not bind, another tenant finds nothing, the sandbox's own variables and
//! credentials the team lacks are refused; and a skill's `required_environment_variables` are
//! reported bound or missing by `skill_view`, without a value.

use hermes_core::MemberRole;
use hermes_testkit::ScriptedReply;
use reqwest::Method;
use serde_json::{Value, json};

use super::member;
use crate::harness::{Roles, TestEnv};

const VALUE: &str = "ghp_never_shown_anywhere_123";

#[tokio::test]
async fn an_admin_binds_a_team_credential_and_a_skill_sees_which_variables_are_bound_never_a_value() {
    let env = TestEnv::start_roles(Roles { worker: true, scheduler: false }).await;
    let (acme, agent, key) = env.tenant("acme", "helper").await;
    let (other, _, _) = env.tenant("other", "helper").await;
    let (_, owner) = member(&env, acme, "owner@acme.test", MemberRole::Owner).await;
    let (_, viewer) = member(&env, acme, "viewer@acme.test", MemberRole::Member).await;
    let (_, stranger) = member(&env, other, "owner@other.test", MemberRole::Owner).await;
    env.pool_key(acme, "gh", "team", VALUE, "api.github.com").await;
    let path = |name: &str| format!("/admin/v1/tenants/{acme}/agents/helper/secrets/{name}");
    let bind = json!({"credential": "gh", "placement": {"required_header": "authorization"}});

    assert_eq!(viewer.call(&env, Method::PUT, &path("GITHUB_TOKEN"), Some(bind.clone())).await.0, 403);
    for (name, body, why) in [
        ("PATH", bind.clone(), "the sandbox's own"),
        ("HTTPS_PROXY", bind.clone(), "the sandbox's own"),
        ("GH-TOKEN", bind.clone(), "not a variable name"),
        ("GITHUB_TOKEN", json!({"credential": "nope"}), "no credential named nope"),
        ("GITHUB_TOKEN", json!({"credential": "gh", "placement": {"required_header": "a b"}}), "not a header name"),
        ("GITHUB_TOKEN", json!({"credential": "gh", "placement": {"everywhere": true}}), "unknown field"),
    ] {
        let (status, err) = owner.call(&env, Method::PUT, &path(name), Some(body)).await;
        assert_eq!(status, 400, "{name}: {err}");
        assert!(err["error"]["message"].as_str().unwrap_or_default().contains(why), "{name}: {err}");
    }
    let (status, bound) = owner.call(&env, Method::PUT, &path("GITHUB_TOKEN"), Some(bind)).await;
    assert_eq!(status, 200, "{bound}");
    assert_eq!(bound["credential"], "gh");
    assert_eq!((bound["has_key"].as_bool(), bound["hosts"].clone()), (Some(true), json!(["api.github.com"])));
    assert_eq!(bound["placement"], json!({"required_header": "authorization"}));
    let list = format!("/admin/v1/tenants/{acme}/agents/helper/secrets");
    let (_, listed) = viewer.call(&env, Method::GET, &list, None).await;
    assert_eq!(listed["data"][0]["name"], "GITHUB_TOKEN", "members see the bindings: {listed}");
    assert_eq!(stranger.call(&env, Method::GET, &list, None).await.0, 404, "another tenant's agent");
    let (_, audit) =
        owner.call(&env, Method::GET, &format!("/admin/v1/tenants/{acme}/audit?action=secret.bound"), None).await;
    assert_eq!(audit["data"].as_array().map(Vec::len), Some(1), "{audit}");
    for shown in [&bound, &listed, &audit] {
        assert!(!shown.to_string().contains(VALUE), "never a value: {shown}");
    }

    // A skill asking for two variables: one bound, one missing.
    let skill_md = "---\nname: gh-helper\ndescription: Works with GitHub.\nrequired_environment_variables:\n  \
                    - name: GITHUB_TOKEN\n    prompt: A GitHub token\n  - name: JIRA_TOKEN\n    prompt: A Jira token\n    \
                    help: Make one at id.atlassian.com\n---\n\nUse the token.\n";
    super::save_team_skill(&env, acme, skill_md).await;
    env.set_toolsets(agent.id, &["terminal", "skills"]).await;
    env.llm.push(ScriptedReply::tool_call("skill_view", json!({"name": "gh-helper"})));
    env.llm.push(ScriptedReply::text("Bound one of two."));
    let ask = json!({"model": "helper", "messages": [{"role": "user", "content": "use the GitHub skill"}]});
    assert_eq!(env.chat(&key, ask).await.status(), 200);
    let viewed: Value = serde_json::from_str(&env.llm.requests()[1].texts_of("tool")[0]).unwrap();
    assert_eq!(viewed["environment"]["bound"], json!(["GITHUB_TOKEN"]), "{viewed}");
    assert_eq!(viewed["environment"]["missing"][0]["name"], "JIRA_TOKEN", "{viewed}");
    assert_eq!(viewed["environment"]["missing"][0]["help"], "Make one at id.atlassian.com");
    assert!(!viewed.to_string().contains(VALUE), "{viewed}");

    // Unbound: gone from the list, and a second unbind finds nothing.
    assert_eq!(owner.call(&env, Method::DELETE, &path("GITHUB_TOKEN"), None).await.0, 204);
    assert_eq!(owner.call(&env, Method::DELETE, &path("GITHUB_TOKEN"), None).await.0, 404);
    let (_, listed) = owner.call(&env, Method::GET, &list, None).await;
    assert_eq!(listed["data"], json!([]));
    env.stop().await;
}
