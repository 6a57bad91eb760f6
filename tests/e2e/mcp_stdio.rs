//! Stdio MCP servers run inside the agent's Docker sandbox, as the MCP server user: sandboxd
//! starts the program and carries its stdio over gRPC. The rmcp test server (in the test
//! image, where the agent cannot change it) is called through it with its env token redacted
//! from results; a server that exits at once is reported with its stderr; and when the session
//! is dropped the program is gone from the sandbox. (That the agent can neither read nor change
//! a server: `mcp_isolation`.)

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use hermes_core::{AgentId, SessionId, TenantId, TurnId};
use hermes_mcp::{HttpConnector, McpServerSpec, McpServers, SandboxConnector};
use hermes_sandbox::{SandboxKey, Sandboxes};
use hermes_tools::{Tool, ToolCtx, ToolError};

use crate::harness::{ask, mcp_test_server_bin};
use crate::sandbox::{DockerFixture, Fixture, LocalFixture, run};

const TOKEN: &str = "stdio-token-987654321";
/// The rmcp test server, as the test image carries it (deploy/sandbox/build-test-image.sh).
const SERVER: &str = "/opt/hermes/test/hermes-mcp-test-server";

fn ctx(tenant: TenantId, agent: AgentId) -> ToolCtx {
    ToolCtx {
        tenant_id: tenant,
        agent_id: agent,
        session_id: SessionId::new(),
        turn_id: TurnId::new(),
        workspace: hermes_core::Workspace::Shared,
        call_id: "call_stdio".into(),
        interaction: Default::default(),
        workdir: None,
    }
}

fn pool(sandboxes: Arc<dyn Sandboxes>) -> Arc<McpServers> {
    let policy = Arc::new(hermes_net_policy::outbound::Policy::default());
    let http = HttpConnector::new(policy).unwrap();
    McpServers::new(Box::new(SandboxConnector { sandboxes, http }), Duration::from_secs(600))
}

async fn call(tool: &Arc<dyn Tool>, ctx: &ToolCtx, args: Value) -> Result<Value, String> {
    match tool.call(ctx, args).await {
        Ok(text) => Ok(serde_json::from_str(&text).unwrap()),
        Err(ToolError::RespondToModel(m) | ToolError::Unavailable(m)) => Err(m),
        Err(ToolError::Park(_)) => Err("parked".into()),
    }
}

#[tokio::test]
async fn a_stdio_server_runs_in_the_agents_sandbox_is_called_and_dies_with_its_session() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let f = DockerFixture::new().await;
    #[expect(clippy::disallowed_methods, reason = "a test tenant, not from a request")]
    let tenant = TenantId::from_authenticated(uuid::Uuid::now_v7());
    let agent = AgentId::new();
    let key = SandboxKey::shared(tenant, agent);
    let sandboxes: &dyn Sandboxes = f.sandboxes.as_ref();
    sandboxes.open(key).await.unwrap();

    let pool = pool(f.sandboxes.clone());
    let spec: McpServerSpec = serde_json::from_value(json!({
        "command": SERVER, "env": {"MCP_TEST_TOKEN": TOKEN}, "tools": {"include": ["add", "leak"]}
    }))
    .unwrap();
    let (tools, unavailable) =
        pool.tools(tenant, agent, vec![("tracker".into(), spec.clone())], Default::default()).await;
    assert!(unavailable.is_empty(), "{unavailable:?}");
    let names: Vec<String> = tools.iter().map(|t| t.name().to_string()).collect();
    assert!(names.iter().any(|n| n == "mcp_tracker_add") && names.iter().any(|n| n == "mcp_tracker_leak"), "{names:?}");
    let ctx = ctx(tenant, agent);
    let add = tools.iter().find(|t| t.name() == "mcp_tracker_add").unwrap();
    assert_eq!(call(add, &ctx, json!({"a": 20, "b": 22})).await.unwrap(), json!({"result": "42"}));
    let leak = tools.iter().find(|t| t.name() == "mcp_tracker_leak").unwrap();
    assert_eq!(call(leak, &ctx, json!({})).await.unwrap()["result"], "my token is [REDACTED]");
    // It runs inside the sandbox, as the MCP server user.
    let ps = "ps -o user,args | grep -c '^mcp .*/opt/hermes/test/hermes-mcp-test-serve[r]' || true";
    assert_eq!(run(sandboxes, key, ps, 10).await.output.trim(), "1", "one server process in the sandbox");

    // The session goes (idle, or its configuration changed): so does the program.
    pool.forget(&hermes_mcp::ServerKey { tenant, agent, name: "tracker".into() });
    drop(tools);
    let mut gone = false;
    for _ in 0..50 {
        if run(sandboxes, key, ps, 10).await.output.trim() == "0" {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(gone, "the server process was reaped with its session");

    // A server that exits before speaking is reported with why, and nothing spins.
    let broken: McpServerSpec = serde_json::from_value(json!({
        "command": SERVER, "args": ["--exit-at-once"], "connect_timeout": 20
    }))
    .unwrap();
    let (tools, unavailable) = pool.tools(tenant, agent, vec![("broken".into(), broken)], Default::default()).await;
    assert!(tools.is_empty());
    let reason = &unavailable[0].reason;
    assert!(reason.contains("exited with code 3") && reason.contains("MCP_TEST_TOKEN is not set"), "{reason}");
    let missing: McpServerSpec = serde_json::from_value(json!({"command": "/opt/hermes/test/nothing-here"})).unwrap();
    let (_, unavailable) = pool.tools(tenant, agent, vec![("missing".into(), missing)], Default::default()).await;
    assert!(unavailable[0].reason.contains("cannot start the command"), "{}", unavailable[0].reason);
}

/// A server installed in the agent's workspace (as `npm install` there would) is the agent's
/// to change, so it never starts with the team's secrets: the tools say why.
#[tokio::test]
async fn a_stdio_server_installed_in_the_workspace_is_refused_with_why() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let f = LocalFixture::new().await;
    let key = crate::sandbox::new_key();
    f.sandboxes().open(key).await.unwrap();
    let dir = f.workspace(key).join(".mcp");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(mcp_test_server_bin(), dir.join("tracker")).unwrap();
    let spec: McpServerSpec =
        serde_json::from_value(json!({"command": "/workspace/.mcp/tracker", "env": {"MCP_TEST_TOKEN": TOKEN}}))
            .unwrap();
    let (tools, unavailable) =
        pool(f.shared()).tools(key.tenant, key.agent, vec![("tracker".into(), spec)], Default::default()).await;
    assert!(tools.is_empty());
    let reason = &unavailable[0].reason;
    assert!(
        reason.contains("refusing to start /workspace/.mcp/tracker")
            && reason.contains("where the sandbox user writes"),
        "{reason}"
    );
}

/// The same server, as a tenant configures it, called by a whole turn: the worker starts it
/// in the agent's Docker sandbox (the test image carries its binary) and the model reads its
/// results, the env token redacted.
#[tokio::test]
async fn a_turn_calls_a_stdio_server_running_in_the_agents_docker_sandbox() {
    let env = crate::harness::TestEnv::start().await;
    let (tenant, agent, key) = env.tenant("acme", "helper").await;
    let spec = json!({"command": "/opt/hermes/test/hermes-mcp-test-server", "env": {"MCP_TEST_TOKEN": TOKEN},
                      "tools": {"include": ["add", "leak"]}});
    let parsed: McpServerSpec = serde_json::from_value(spec.clone()).unwrap();
    let masked = serde_json::to_value(parsed.masked()).unwrap();
    let sealed = json!({"env": parsed.env, "headers": {}});
    env.store
        .agents()
        .set_mcp_server(tenant, agent.id, "tracker", (&masked, true), &sealed, Some(&env.secrets()))
        .await
        .unwrap();

    env.llm.push(hermes_testkit::ScriptedReply::tool_call("mcp_tracker_add", json!({"a": 20, "b": 22})));
    env.llm.push(hermes_testkit::ScriptedReply::tool_call("mcp_tracker_leak", json!({})));
    env.llm.push(hermes_testkit::ScriptedReply::text("42."));
    let ask = ask("helper", "add 20 and 22");
    let response = env.chat(&key, ask).await;
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    let results = env.llm.requests().last().unwrap().texts_of("tool");
    assert_eq!(results, [r#"{"result":"42"}"#, r#"{"result":"my token is [REDACTED]"}"#]);
    env.stop().await;
}
