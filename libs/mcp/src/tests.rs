//! The client against the rmcp test server over streamable HTTP on loopback: tools listed
//! through the filter and named as upstream names them, results rendered and cleaned, the
//! wrappers, a changed tool list, a restarted server, a dead one, a timeout, and the
//! public-address guard.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use hermes_core::AgentId;
use hermes_net_policy::outbound::Policy;
use hermes_testkit::mcp::{LEAKED_TOKEN, McpTestServer};
use hermes_tools::{Tool, ToolCtx, ToolError};

use crate::{HttpConnector, McpServerSpec, McpServers};

fn ctx() -> ToolCtx {
    ToolCtx::for_tests("call_mcp")
}

/// Sessions whose client trusts `trusted` (the test server is on loopback).
fn pool(trusted: &[String]) -> Arc<McpServers> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let connector = HttpConnector::new(Arc::new(Policy::trusting(trusted))).unwrap();
    McpServers::new(Box::new(connector), Duration::from_secs(600))
}

fn spec(server: &McpTestServer, extra: Value) -> McpServerSpec {
    let mut config = json!({ "url": server.url(), "headers": { "Authorization": format!("Bearer {LEAKED_TOKEN}") } });
    if let (Some(base), Some(more)) = (config.as_object_mut(), extra.as_object()) {
        base.extend(more.clone());
    }
    serde_json::from_value(config).unwrap()
}

async fn tools(pool: &Arc<McpServers>, spec: McpServerSpec) -> Vec<Arc<dyn Tool>> {
    let (tools, unavailable) =
        pool.tools(ctx().tenant_id, AgentId::new(), vec![("git-hub".into(), spec)], Default::default()).await;
    assert!(unavailable.is_empty(), "{unavailable:?}");
    tools
}

fn named<'a>(tools: &'a [Arc<dyn Tool>], name: &str) -> &'a Arc<dyn Tool> {
    tools.iter().find(|t| t.name() == name).unwrap_or_else(|| panic!("no {name}"))
}

async fn call(tool: &Arc<dyn Tool>, args: Value) -> Result<Value, String> {
    match tool.call(&ctx(), args).await {
        Ok(text) => Ok(serde_json::from_str(&text).unwrap()),
        Err(ToolError::RespondToModel(m) | ToolError::Unavailable(m)) => Err(m),
        Err(ToolError::Park(_)) => Err("parked".into()),
    }
}

fn names(tools: &[Arc<dyn Tool>]) -> Vec<String> {
    let mut names: Vec<String> = tools.iter().map(|t| t.name().to_string()).collect();
    names.sort();
    names
}

#[tokio::test]
async fn an_http_servers_tools_are_offered_by_upstreams_names_and_their_results_come_back_clean() {
    let server = McpTestServer::start().await.unwrap();
    let pool = pool(&[server.host()]);
    let tools = tools(&pool, spec(&server, json!({}))).await;
    assert_eq!(
        names(&tools),
        [
            "mcp_git_hub_add",
            "mcp_git_hub_call_api",
            "mcp_git_hub_fail",
            "mcp_git_hub_get_prompt",
            "mcp_git_hub_leak",
            "mcp_git_hub_list_prompts",
            "mcp_git_hub_list_resources",
            "mcp_git_hub_picture",
            "mcp_git_hub_read_resource",
            "mcp_git_hub_slow",
            "mcp_git_hub_summarize",
            "mcp_git_hub_tagged",
            "mcp_git_hub_unlock"
        ]
    );
    let add = named(&tools, "mcp_git_hub_add");
    assert_eq!(add.schema()["parameters"]["properties"]["a"]["type"], "integer");
    assert_eq!(add.schema()["description"], "Add two numbers");
    assert_eq!(call(add, json!({"a": 2, "b": 40})).await.unwrap(), json!({"result": "42"}));
    let picture = call(named(&tools, "mcp_git_hub_picture"), json!({})).await.unwrap();
    assert!(
        picture["result"].as_str().unwrap().starts_with("the chart\n[image from the server: image/png"),
        "{picture}"
    );
    let err = call(named(&tools, "mcp_git_hub_fail"), json!({})).await.unwrap_err();
    assert_eq!(err, "MCP tool fail failed: the repository does not exist");
    let leak = call(named(&tools, "mcp_git_hub_leak"), json!({})).await.unwrap();
    assert_eq!(leak["result"], "my token is [REDACTED]", "the configuration's secrets never reach the model");
    assert_eq!(call(named(&tools, "mcp_git_hub_tagged"), json!({})).await.unwrap()["result"], "visible text");
    let resources = call(named(&tools, "mcp_git_hub_list_resources"), json!({})).await.unwrap();
    assert_eq!(resources["result"][0]["uri"], "memo://readme", "{resources}");
    let read = call(named(&tools, "mcp_git_hub_read_resource"), json!({"uri": "memo://readme"})).await.unwrap();
    assert_eq!(read["result"]["contents"][0]["text"], "Read me first.", "{read}");
    let prompt =
        call(named(&tools, "mcp_git_hub_get_prompt"), json!({"name": "greeting", "arguments": {"name": "Ann"}}));
    assert_eq!(prompt.await.unwrap()["result"]["messages"][0]["content"]["text"], "Say hello to Ann.");
    assert_eq!(pool.len(), 1, "one session for all of it");
}

#[tokio::test]
async fn filters_choose_the_tools_and_the_wrappers() {
    let server = McpTestServer::start().await.unwrap();
    let pool = pool(&[server.host()]);
    let only = spec(&server, json!({"tools": {"include": ["a*", "pic*"], "exclude": ["add"], "prompts": false}}));
    assert_eq!(
        names(&tools(&pool, only).await),
        ["mcp_git_hub_add", "mcp_git_hub_list_resources", "mcp_git_hub_picture", "mcp_git_hub_read_resource"],
        "include wins over exclude; prompts off"
    );
    let without = spec(&server, json!({"tools": {"exclude": ["*"], "resources": false, "prompts": false}}));
    assert!(tools(&pool, without).await.is_empty());
    let off = spec(&server, json!({"enabled": false}));
    assert!(tools(&pool, off).await.is_empty(), "a disabled server is not even connected");
}

#[tokio::test]
async fn a_changed_tool_list_shows_at_the_next_turn_and_a_restarted_server_is_reconnected() {
    let mut server = McpTestServer::start().await.unwrap();
    let pool = pool(&[server.host()]);
    let first = tools(&pool, spec(&server, json!({}))).await;
    assert!(!names(&first).iter().any(|n| n == "mcp_git_hub_late_tool"));
    assert_eq!(call(named(&first, "mcp_git_hub_unlock"), json!({})).await.unwrap()["result"], "unlocked");
    // The notification travels on its own; the next turn's listing sees the new tool.
    let mut seen = false;
    for _ in 0..50 {
        if names(&tools(&pool, spec(&server, json!({}))).await).iter().any(|n| n == "mcp_git_hub_late_tool") {
            seen = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(seen, "tools/list_changed refreshed the list");

    server.restart().await.unwrap();
    let add = named(&first, "mcp_git_hub_add");
    assert_eq!(call(add, json!({"a": 1, "b": 1})).await.unwrap()["result"], "2", "a new session after the restart");
    drop(server);
    let err = call(add, json!({"a": 1, "b": 1})).await.unwrap_err();
    assert!(
        err.starts_with("the MCP server git-hub is not responding") && err.contains("do not call its tools again"),
        "{err}"
    );
    assert!(!err.contains(LEAKED_TOKEN));
}

#[tokio::test]
async fn slow_calls_time_out_and_private_servers_need_the_operators_allowance() {
    let server = McpTestServer::start().await.unwrap();
    let pool = pool(&[server.host()]);
    let tools = tools(&pool, spec(&server, json!({"timeout": 0.3}))).await;
    let err = call(named(&tools, "mcp_git_hub_slow"), json!({"millis": 2000})).await.unwrap_err();
    assert!(err.starts_with("MCP tool slow failed: timed out"), "{err}");

    let strict = self::pool(&[]);
    let (found, unavailable) = strict
        .tools(ctx().tenant_id, AgentId::new(), vec![("git-hub".into(), spec(&server, json!({})))], Default::default())
        .await;
    assert!(found.is_empty());
    assert_eq!(unavailable[0].server, "git-hub");
    let reason = &unavailable[0].reason;
    assert!(
        reason.starts_with("could not connect: the server's address is refused") && reason.contains("127.0.0.1"),
        "{reason}"
    );
}

/// A turn's model as the sampler: records what it was asked, answers in a fixed way.
#[derive(Default)]
struct Scripted {
    asked: std::sync::Mutex<Vec<crate::SampleRequest>>,
}

impl crate::Sampler for Scripted {
    fn sample(
        &self,
        request: crate::SampleRequest,
    ) -> futures_util::future::BoxFuture<'_, Result<crate::SampleAnswer, String>> {
        self.asked.lock().unwrap().push(request);
        Box::pin(async {
            Ok(crate::SampleAnswer { model: "turn-model".into(), text: "short".into(), truncated: false })
        })
    }
}

#[tokio::test]
async fn sampling_is_answered_by_the_turns_model_within_the_caps_only_where_turned_on() {
    let server = McpTestServer::start().await.unwrap();
    let pool = pool(&[server.host()]);
    let sampler = Arc::new(Scripted::default());
    let on = spec(&server, json!({"sampling": {"enabled": true, "max_tokens_cap": 64, "model": "cheap-model"}}));
    let (found, _) = pool
        .tools(
            ctx().tenant_id,
            AgentId::new(),
            vec![("git-hub".into(), on)],
            crate::TurnHooks { sampler: Some(sampler.clone() as Arc<dyn crate::Sampler>), keeper: None },
        )
        .await;
    let summary = call(named(&found, "mcp_git_hub_summarize"), json!({"text": "a long report"})).await.unwrap();
    assert_eq!(summary["result"], "summary by turn-model: short");
    let asked = sampler.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].max_tokens, 64, "the server asked for 500; the cap holds");
    assert_eq!(
        (asked[0].server.as_str(), asked[0].model.as_deref(), asked[0].max_rpm),
        ("git-hub", Some("cheap-model"), 10)
    );
    assert_eq!(asked[0].system.as_deref(), Some("You write one-line summaries."));
    assert_eq!(asked[0].messages[0].text, "Summarise in one line: a long report");

    // Off (the default): the server hears no, and the turn's model is never asked.
    let other = self::pool(&[server.host()]);
    let (found, _) = other
        .tools(
            ctx().tenant_id,
            AgentId::new(),
            vec![("git-hub".into(), spec(&server, json!({})))],
            crate::TurnHooks { sampler: Some(sampler.clone() as Arc<dyn crate::Sampler>), keeper: None },
        )
        .await;
    let refused = call(named(&found, "mcp_git_hub_summarize"), json!({"text": "x"})).await.unwrap();
    assert!(refused["result"].as_str().unwrap().starts_with("sampling refused"), "{refused}");
    assert_eq!(sampler.asked.lock().unwrap().len(), 1);
}

/// Keeps pictures as a turn would, noting them.
#[derive(Default)]
struct Kept {
    files: std::sync::Mutex<Vec<(String, String, Vec<u8>)>>,
}

impl crate::FileKeeper for Kept {
    fn keep<'a>(
        &'a self,
        _ctx: &'a ToolCtx,
        name: String,
        mime: String,
        bytes: Vec<u8>,
    ) -> futures_util::future::BoxFuture<'a, Result<String, String>> {
        let how = format!("kept; put MEDIA:mcp/{name} in your answer to show it");
        self.files.lock().unwrap().push((name, mime, bytes));
        Box::pin(async move { Ok(how) })
    }
}

#[tokio::test]
async fn a_results_picture_is_kept_with_the_turn_and_the_model_told_how_to_hand_it_over() {
    let server = McpTestServer::start().await.unwrap();
    let pool = pool(&[server.host()]);
    let kept = Arc::new(Kept::default());
    let hooks = crate::TurnHooks { sampler: None, keeper: Some(kept.clone() as Arc<dyn crate::FileKeeper>) };
    let (found, _) =
        pool.tools(ctx().tenant_id, AgentId::new(), vec![("git-hub".into(), spec(&server, json!({})))], hooks).await;
    let picture = call(named(&found, "mcp_git_hub_picture"), json!({})).await.unwrap();
    assert_eq!(
        picture["result"],
        "the chart\n[image from the server (image/png): kept; put MEDIA:mcp/mcp-callmcp-2.png in your answer to show it]"
    );
    let files = kept.files.lock().unwrap().clone();
    assert_eq!((files[0].0.as_str(), files[0].1.as_str()), ("mcp-callmcp-2.png", "image/png"));
    assert_eq!(&files[0].2[..4], b"\x89PNG", "the picture's bytes, decoded");
}
