//! A hostile HTTP MCP server against the worker's shared client: one that floods every listing
//! with thousands of fresh tool names and says the list changed, one whose pages never end
//! (of tools, or of resources), and one that never finishes a listing although its `timeout`
//! is an hour. Each turn gets at most the cap of a server's tools, the process keeps no names
//! past the tools alive, and a listing ends, as an error, within its page and time bounds.
//!
//! The counters read here are process-wide: nextest runs each test in a process of its own.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use hermes_core::AgentId;
use hermes_mcp::{HttpConnector, ListLimits, McpServerSpec, McpServers, Unavailable};
use hermes_net_policy::outbound::Policy;
use hermes_testkit::mcp::hostile::{Script, ScriptedMcpServer};
use hermes_tools::{Tool, ToolCtx, ToolError, ToolRegistry};

const SERVERS: usize = 2;

fn pool(trusted: &[String], limits: ListLimits) -> Arc<McpServers> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let connector = HttpConnector::new(Arc::new(Policy::trusting(trusted))).unwrap();
    McpServers::with_limits(Box::new(connector), Duration::from_secs(600), limits)
}

fn spec(server: &ScriptedMcpServer) -> McpServerSpec {
    serde_json::from_value(json!({ "url": server.url(), "timeout": 3600 })).unwrap()
}

async fn turn(
    pool: &Arc<McpServers>,
    agent: AgentId,
    servers: &[(&str, &ScriptedMcpServer)],
) -> (Vec<Arc<dyn Tool>>, Vec<Unavailable>) {
    let specs = servers.iter().map(|(name, server)| ((*name).to_owned(), spec(server))).collect();
    pool.tools(ToolCtx::for_tests("c").tenant_id, agent, specs, Default::default()).await
}

#[tokio::test]
async fn a_server_flooding_its_tool_list_gets_at_most_the_cap_and_leaves_no_names_behind() {
    let (a, b) = (
        ScriptedMcpServer::start(Script::Flood { count: 5_000 }).await.unwrap(),
        ScriptedMcpServer::start(Script::Flood { count: 5_000 }).await.unwrap(),
    );
    let limits = ListLimits::default();
    let pool = pool(&[a.host(), b.host()], limits);
    let agent = AgentId::new();
    let mut previous: Option<ToolRegistry> = None;
    for n in 0..20 {
        let (tools, unavailable) = turn(&pool, agent, &[("flood", &a), ("deluge", &b)]).await;
        assert!(unavailable.is_empty(), "{unavailable:?}");
        for prefix in ["mcp_flood_", "mcp_deluge_"] {
            let offered = tools.iter().filter(|t| t.name().starts_with(prefix)).count();
            assert!(offered > 0 && offered <= limits.tools, "turn {n}: {offered} tools of {prefix}*");
        }
        // The worker registers them for the turn; the last turn's registry goes as it ends.
        let mut registry = ToolRegistry::new();
        for tool in tools {
            registry.register(tool);
        }
        previous = Some(registry);
        let bound = limits.tools * SERVERS;
        let retained = hermes_mcp::retained_tool_names();
        assert!(retained <= bound, "turn {n}: the process keeps {retained} names of servers' tools (cap {bound})");
        let shared = hermes_tools::shared_schema_names();
        assert!(shared <= bound, "turn {n}: schemas are kept under {shared} names (cap {bound})");
    }
    assert!(previous.is_some_and(|r| !r.is_empty()));
    assert!(a.pages() > 1 && b.pages() > 1, "the servers' list_changed made the client list again");
}

#[tokio::test]
async fn a_tool_list_whose_pages_never_end_fails_after_the_page_cap_well_before_the_timeout() {
    let endless = ScriptedMcpServer::start(Script::EndlessPages).await.unwrap();
    let limits = ListLimits::default();
    let pool = pool(&[endless.host()], limits);
    let started = Instant::now();
    let servers = [("pager", &endless)];
    let listing = tokio::time::timeout(Duration::from_secs(20), turn(&pool, AgentId::new(), &servers));
    let (tools, unavailable) = listing.await.expect("listing ended");
    assert!(tools.is_empty());
    assert_eq!(unavailable.len(), 1);
    let reason = &unavailable[0].reason;
    assert!(reason.contains("pages"), "{reason}");
    assert!(endless.pages() <= limits.pages, "{} pages asked for", endless.pages());
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
}

#[tokio::test]
async fn a_listing_that_never_ends_is_cut_at_the_listing_bound_whatever_the_servers_timeout() {
    let silent = ScriptedMcpServer::start(Script::NeverLists).await.unwrap();
    // The bound is 30 s in production; two here, against the server's configured hour.
    let limits = ListLimits { time: Duration::from_secs(2), ..ListLimits::default() };
    assert_eq!(ListLimits::default().time, Duration::from_secs(30));
    let pool = pool(&[silent.host()], limits);
    let started = Instant::now();
    let servers = [("mute", &silent)];
    let listing = tokio::time::timeout(Duration::from_secs(20), turn(&pool, AgentId::new(), &servers));
    let (tools, unavailable) = listing.await.expect("listing ended");
    let took = started.elapsed();
    assert!(tools.is_empty());
    assert_eq!(unavailable[0].reason, "timed out after 2s");
    assert!(took >= Duration::from_secs(2) && took < Duration::from_secs(6), "took {took:?}");
}

#[tokio::test]
async fn a_resource_list_whose_pages_never_end_fails_after_the_page_cap() {
    let endless = ScriptedMcpServer::start(Script::EndlessResources).await.unwrap();
    let pool = pool(&[endless.host()], ListLimits::default());
    let (tools, unavailable) = turn(&pool, AgentId::new(), &[("pager", &endless)]).await;
    assert!(unavailable.is_empty(), "{unavailable:?}");
    let list = tools.iter().find(|t| t.name() == "mcp_pager_list_resources").expect("the resources wrapper");
    let ctx = ToolCtx::for_tests("c");
    let call = tokio::time::timeout(Duration::from_secs(20), list.call(&ctx, json!({})));
    match call.await.expect("the call ended") {
        Err(ToolError::RespondToModel(why)) => assert!(why.contains("went on past 10 pages"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(endless.pages(), 1 + ListLimits::default().pages, "one page of tools, then the cap of resources'");
}
