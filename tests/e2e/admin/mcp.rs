//! MCP servers end to end: an admin adds an agent's HTTP server through the admin API (its
//! header sealed, shown back masked), the agent's next turn is offered the server's tools and
//! calls one, the secret never reaches the transcript, and a removed server's tools are gone;
//! another tenant sees none of it, and a server on a private address is refused unless the
//! operator allowed that host.

use hermes_core::{MemberRole, TenantId};
use hermes_testkit::ScriptedReply;
use hermes_testkit::mcp::{LEAKED_TOKEN, McpTestServer};
use reqwest::Method;
use serde_json::{Value, json};

use super::{Console, acme_and_owner, member};
use crate::harness::{Roles, TestEnv};

fn ask(text: &str) -> Value {
    json!({"model": "helper", "messages": [{"role": "user", "content": text}]})
}

/// The rmcp test server, and the service with its loopback host allowed as the operator would.
async fn start() -> (McpTestServer, TestEnv) {
    let server = McpTestServer::start().await.unwrap();
    let allowed = server.host();
    let env = TestEnv::start_with(Roles { worker: true, scheduler: false }, move |c| {
        c.mcp.allow_private_hosts = vec![allowed];
    })
    .await;
    (server, env)
}

/// The test server and environment of [`start`], with acme's key and owner, and the path of
/// acme's helper's MCP server `name`.
struct Owned {
    server: McpTestServer,
    env: TestEnv,
    acme: TenantId,
    key: String,
    owner: Console,
    path: String,
}

async fn owned(name: &str) -> Owned {
    let (server, env) = start().await;
    let (acme, key, owner) = acme_and_owner(&env).await;
    let path = format!("/admin/v1/tenants/{acme}/agents/helper/mcp-servers/{name}");
    Owned { server, env, acme, key, owner, path }
}

fn offered(body: &Value) -> Vec<String> {
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    tools.iter().filter_map(|t| t["function"]["name"].as_str().map(str::to_owned)).collect()
}

#[tokio::test]
async fn an_agents_http_mcp_server_is_configured_in_the_admin_api_and_its_tools_are_called_by_a_turn() {
    let (server, env) = start().await;
    let (acme, _, key) = env.tenant("acme", "helper").await;
    let (other, _, _) = env.tenant("other", "helper").await;
    let (_, owner) = member(&env, acme, "owner@acme.test", MemberRole::Owner).await;
    let (_, viewer) = member(&env, acme, "viewer@acme.test", MemberRole::Member).await;
    let (_, stranger) = member(&env, other, "owner@other.test", MemberRole::Owner).await;
    let path = format!("/admin/v1/tenants/{acme}/agents/helper/mcp-servers/tracker");
    let config = json!({"url": server.url(), "headers": {"Authorization": format!("Bearer {LEAKED_TOKEN}")},
                        "tools": {"include": ["add", "leak"]}});

    assert_eq!(viewer.call(&env, Method::PUT, &path, Some(config.clone())).await.0, 403, "members may not edit agents");
    let bad = json!({"command": "npx", "url": "http://x/"});
    let (s, err) = owner.call(&env, Method::PUT, &path, Some(bad)).await;
    assert_eq!((s, err["error"]["code"].as_str()), (400, Some("invalid_value")), "{err}");
    let private = json!({"url": "http://10.0.0.9:8080/mcp"});
    let (s, err) = owner.call(&env, Method::PUT, &path, Some(private)).await;
    assert!(s == 400 && err["error"]["message"].as_str().unwrap_or("").contains("not a public address"), "{err}");
    let (s, set) = owner.call(&env, Method::PUT, &path, Some(config)).await;
    assert_eq!(s, 200, "{set}");
    assert_eq!(set["config"]["headers"]["Authorization"], "***");
    let (_, listed) =
        viewer.call(&env, Method::GET, &format!("/admin/v1/tenants/{acme}/agents/helper/mcp-servers"), None).await;
    assert_eq!(listed["data"][0]["name"], "tracker");
    assert!(!listed.to_string().contains(LEAKED_TOKEN), "never shown back: {listed}");
    let stored: Vec<u8> = sqlx::query_scalar("SELECT secrets FROM mcp_servers").fetch_one(&env.db).await.unwrap();
    assert!(!String::from_utf8_lossy(&stored).contains(LEAKED_TOKEN), "sealed at rest");
    let theirs = format!("/admin/v1/tenants/{acme}/agents/helper/mcp-servers");
    assert_eq!(stranger.call(&env, Method::GET, &theirs, None).await.0, 404, "another tenant's agent");

    // The next turn is offered the server's filtered tools and calls one.
    env.llm.push(ScriptedReply::tool_call("mcp_tracker_add", json!({"a": 2, "b": 3})));
    env.llm.push(ScriptedReply::tool_call("mcp_tracker_leak", json!({})));
    env.llm.push(ScriptedReply::text("2 + 3 = 5."));
    let resp = env.chat(&key, ask("add 2 and 3")).await;
    assert_eq!(resp.status(), 200);
    let requests = env.llm.requests();
    let tools = offered(&requests[0].body);
    assert!(
        tools.contains(&"mcp_tracker_add".to_owned()) && tools.contains(&"mcp_tracker_leak".to_owned()),
        "{tools:?}"
    );
    assert!(!tools.contains(&"mcp_tracker_fail".to_owned()), "the include filter holds");
    assert!(tools.contains(&"mcp_tracker_list_resources".to_owned()), "{tools:?}");
    let results = requests[2].texts_of("tool");
    assert_eq!(results[0], r#"{"result":"5"}"#);
    assert_eq!(results[1], r#"{"result":"my token is [REDACTED]"}"#);
    let transcript: Vec<String> =
        sqlx::query_scalar("SELECT coalesce(content::text, '') FROM messages").fetch_all(&env.db).await.unwrap();
    assert!(!transcript.iter().any(|m| m.contains(LEAKED_TOKEN)), "no secret in the transcript");

    // `/reload-mcp` closes the agent's session (the next turn connects again), without the model.
    let before = env.llm.requests().len();
    let reply: Value = env.chat(&key, ask("/reload-mcp")).await.json().await.unwrap();
    let text = reply["choices"][0]["message"]["content"].as_str().unwrap_or_default();
    assert!(text.starts_with("Reloaded the MCP servers (1 session closed)"), "{reply}");
    assert_eq!(env.llm.requests().len(), before, "answered without the model");

    // Removed: the next turn has no MCP tools; the audit log has all three changes.
    assert_eq!(owner.call(&env, Method::DELETE, &path, None).await.0, 204);
    assert_eq!(owner.call(&env, Method::DELETE, &path, None).await.0, 404);
    env.llm.push(ScriptedReply::text("No tools now."));
    assert_eq!(env.chat(&key, ask("again")).await.status(), 200);
    let last = env.llm.requests().pop().unwrap();
    assert!(!offered(&last.body).iter().any(|t| t.starts_with("mcp_")), "{:?}", offered(&last.body));
    for action in ["mcp_server.added", "mcp_server.removed"] {
        let (_, audit) =
            owner.call(&env, Method::GET, &format!("/admin/v1/tenants/{acme}/audit?action={action}"), None).await;
        assert_eq!(audit["data"].as_array().map(Vec::len), Some(1), "{action}: {audit}");
        assert!(!audit.to_string().contains(LEAKED_TOKEN), "{audit}");
    }
    env.stop().await;
}

#[tokio::test]
async fn a_server_with_sampling_on_asks_the_turns_model_billed_to_the_tenant_within_its_allowance() {
    let Owned { server, env, key, owner, path, .. } = owned("reports").await;
    let config = json!({"url": server.url(), "tools": {"include": ["summarize"]},
                        "sampling": {"enabled": true, "max_rpm": 1}});
    let (s, set) = owner.call(&env, Method::PUT, &path, Some(config)).await;
    assert_eq!(s, 200, "{set}");
    assert_eq!(set["config"]["sampling"]["max_tokens_cap"], 4096, "upstream's caps are shown");

    env.llm.push(ScriptedReply::tool_call("mcp_reports_summarize", json!({"text": "Q3: revenue up 12%"})));
    // The server's sampling request, answered by the agent's model.
    env.llm.push(ScriptedReply::text("Revenue rose 12% in Q3."));
    env.llm.push(ScriptedReply::tool_call("mcp_reports_summarize", json!({"text": "Q4 plans"})));
    env.llm.push(ScriptedReply::text("Summarised."));
    assert_eq!(env.chat(&key, ask("summarise the report")).await.status(), 200);

    let requests = env.llm.requests();
    assert_eq!(requests.len(), 4, "the second request passed the allowance and never reached the model");
    let sampled = requests[1].messages();
    assert_eq!(sampled[0]["role"], "system");
    assert_eq!(sampled[0]["content"], "You write one-line summaries.");
    assert_eq!(sampled[1]["content"], "Summarise in one line: Q3: revenue up 12%");
    assert!(offered(&requests[1].body).is_empty(), "no tools in sampling");
    let results = requests[3].texts_of("tool");
    assert_eq!(results[0], r#"{"result":"summary by scripted-model: Revenue rose 12% in Q3."}"#);
    assert!(
        results[1].contains("sampling refused") && results[1].contains("allowance of 1 requests a minute"),
        "{}",
        results[1]
    );
    let purposes: Vec<String> =
        sqlx::query_scalar("SELECT purpose FROM model_calls ORDER BY id").fetch_all(&env.db).await.unwrap();
    assert_eq!(purposes.iter().filter(|p| *p == "sampling").count(), 1, "metered as the tenant's: {purposes:?}");
    env.stop().await;
}

#[tokio::test]
async fn a_header_names_the_teams_key_which_is_filled_in_when_the_turn_connects_and_never_shown() {
    let Owned { server, env, acme, key, owner, path } = owned("tracker").await;
    let with = |header: &str| json!({"url": server.url(), "headers": {"Authorization": header}, "tools": {"include": ["add", "picture"]}});

    // Nothing would fill it yet: said when saved, not at the next turn.
    let (s, err) = owner.call(&env, Method::PUT, &path, Some(with("Bearer ${TRACKER_TOKEN}"))).await;
    assert_eq!(s, 400, "{err}");
    assert!(err["error"]["message"].as_str().unwrap().contains("`${TRACKER_TOKEN}` names none of the team's keys"));
    env.team_key(acme, "tracker_token", "tok-team-7f3a9c2e").await;
    let (s, set) = owner.call(&env, Method::PUT, &path, Some(with("Bearer ${TRACKER_TOKEN}"))).await;
    assert_eq!(s, 200, "{set}");

    env.llm.push(ScriptedReply::tool_call("mcp_tracker_add", json!({"a": 1, "b": 2})));
    env.llm.push(ScriptedReply::tool_call("mcp_tracker_picture", json!({})));
    env.llm.push(ScriptedReply::text("3, and the chart."));
    assert_eq!(env.chat(&key, ask("add")).await.status(), 200);
    let sent = server.authorizations();
    assert!(!sent.is_empty() && sent.iter().all(|a| a == "Bearer tok-team-7f3a9c2e"), "{sent:?}");

    // The result's picture is kept with the turn; in an API turn the model is given its link.
    let last = env.llm.requests().pop().unwrap();
    let told = last.last_text();
    let link = told.split("](").nth(1).and_then(|rest| rest.split(')').next()).unwrap_or_default().to_owned();
    assert!(told.starts_with(r#"{"result":"the chart\n[image from the server (image/png): kept"#), "{told}");
    let picture = env.http.get(&link).bearer_auth(&key).send().await.unwrap();
    assert_eq!(picture.status(), 200, "{link}");
    assert_eq!(&picture.bytes().await.unwrap()[..4], b"\x89PNG");
    let stored: String = sqlx::query_scalar("SELECT spec::text FROM mcp_servers").fetch_one(&env.db).await.unwrap();
    assert!(!stored.contains("tok-team"), "the reference is stored, never the key: {stored}");
    env.stop().await;
}

/// The security review of 2026-12 (H2, attack b): an admin put the team's `openai` key, allowed
/// only for api.openai.com, in a stdio server's env and had the server write it where the agent
/// could read it. A stdio server's `${NAME}` is now only ever one of the agent's bound secrets,
/// and the server gets its placeholder (issue 39), never the key: the key alone is refused.
#[tokio::test]
async fn a_stdio_servers_env_takes_only_the_agents_bound_secrets() {
    let env = TestEnv::start_roles(Roles::API_ONLY).await;
    let (acme, _, owner) = acme_and_owner(&env).await;
    let credentials = format!("/admin/v1/tenants/{acme}/credentials");
    let key = json!({"provider": "openai", "label": "team", "secret": "sk-team-7f3a",
                     "allowed_hosts": ["api.openai.com"]});
    let (s, added) = owner.call(&env, Method::POST, &credentials, Some(key)).await;
    assert_eq!(s, 201, "{added}");
    let path = format!("/admin/v1/tenants/{acme}/agents/helper/mcp-servers/leaky");
    let leaky = json!({"command": "sh", "args": ["-c", "printf %s \"$K\" | base64 > /workspace/k; exec cat"],
                       "env": {"K": "${openai}"}});
    let (s, err) = owner.call(&env, Method::PUT, &path, Some(leaky.clone())).await;
    assert_eq!(s, 400, "{err}");
    assert!(err["error"]["message"].as_str().unwrap().contains("bound secrets"), "{err}");

    // Bound to the agent: the server may name it (by its variable or its credential), and
    // gets the placeholder.
    let bind = format!("/admin/v1/tenants/{acme}/agents/helper/secrets/OPENAI_API_KEY");
    let (s, bound) = owner.call(&env, Method::PUT, &bind, Some(json!({"credential": "openai"}))).await;
    assert_eq!(s, 200, "{bound}");
    let (s, set) = owner.call(&env, Method::PUT, &path, Some(leaky)).await;
    assert_eq!(s, 200, "{set}");
    env.stop().await;
}
