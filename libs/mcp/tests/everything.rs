//! The client against the MCP project's own reference server, `server-everything` (npm,
//! pinned in `tests/mcp-everything`, installed by `deploy/dev/test.sh`), over streamable HTTP
//! on loopback: its tools by upstream's names, a result with an image, resources, prompts,
//! the tools it adds once the session is initialised (announced with `tools/list_changed`),
//! and its sampling request answered by the turn's model within the configured cap.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use hermes_core::AgentId;
use hermes_mcp::{HttpConnector, McpServerSpec, McpServers, SampleAnswer, SampleRequest, Sampler, TurnHooks};
use hermes_net_policy::outbound::Policy;
use hermes_tools::{Tool, ToolCtx, ToolError};

/// The server, running on a free port; killed when dropped.
struct Everything {
    child: tokio::process::Child,
    port: u16,
}

impl Drop for Everything {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

fn server_script() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp-everything");
    let script = root.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        script.exists(),
        "server-everything is not installed: run `npm ci --prefix tests/mcp-everything` (deploy/dev/test.sh does)"
    );
    script
}

async fn start() -> Everything {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = tokio::process::Command::new("node")
        .arg(server_script())
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs");
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return Everything { child, port };
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("server-everything did not listen on port {port}");
}

/// The turn's model: notes each request and answers "a haiku".
#[derive(Default)]
struct Model {
    asked: Mutex<Vec<SampleRequest>>,
}

impl Sampler for Model {
    fn sample(&self, request: SampleRequest) -> BoxFuture<'_, Result<SampleAnswer, String>> {
        self.asked.lock().unwrap().push(request);
        Box::pin(async { Ok(SampleAnswer { model: "turn-model".into(), text: "a haiku".into(), truncated: false }) })
    }
}

fn hooks(sampler: Arc<dyn Sampler>) -> TurnHooks {
    TurnHooks { sampler: Some(sampler), keeper: None }
}

async fn call(tools: &[Arc<dyn Tool>], name: &str, args: Value) -> Result<Value, String> {
    let tool = tools.iter().find(|t| t.name() == name).unwrap_or_else(|| panic!("no {name}"));
    match tool.call(&ToolCtx::for_tests("call_everything"), args).await {
        Ok(text) => Ok(serde_json::from_str(&text).unwrap()),
        Err(ToolError::RespondToModel(m) | ToolError::Unavailable(m)) => Err(m),
        Err(ToolError::Park(_)) => Err("parked".into()),
    }
}

#[tokio::test]
async fn the_reference_server_s_tools_resources_prompts_and_sampling_work_through_the_client() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let server = start().await;
    let host = format!("127.0.0.1:{}", server.port);
    let connector = HttpConnector::new(Arc::new(Policy::trusting(std::slice::from_ref(&host)))).unwrap();
    let pool = McpServers::new(Box::new(connector), Duration::from_secs(600));
    let spec: McpServerSpec = serde_json::from_value(json!({
        "url": format!("http://{host}/mcp"),
        "sampling": {"enabled": true, "max_tokens_cap": 50}
    }))
    .unwrap();
    let model = Arc::new(Model::default());
    let tenant = ToolCtx::for_tests("x").tenant_id;
    let agent = AgentId::new();
    let list = async || {
        let sampler = model.clone() as Arc<dyn Sampler>;
        let (tools, unavailable) =
            pool.tools(tenant, agent, vec![("everything".into(), spec.clone())], hooks(sampler)).await;
        assert!(unavailable.is_empty(), "{unavailable:?}");
        tools
    };

    // The tools it adds once initialised (sampling among them, as this client offers it) are
    // announced with tools/list_changed and offered at the next listing.
    let mut tools = list().await;
    for _ in 0..100 {
        if tools.iter().any(|t| t.name() == "mcp_everything_trigger_sampling_request") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        tools = list().await;
    }
    let names: Vec<String> = tools.iter().map(|t| t.name().to_string()).collect();
    for expected in [
        "mcp_everything_echo",
        "mcp_everything_get_sum",
        "mcp_everything_get_tiny_image",
        "mcp_everything_trigger_sampling_request",
        "mcp_everything_list_resources",
        "mcp_everything_read_resource",
        "mcp_everything_list_prompts",
        "mcp_everything_get_prompt",
    ] {
        assert!(names.iter().any(|n| n == expected), "{expected} missing from {names:?}");
    }

    assert_eq!(call(&tools, "mcp_everything_echo", json!({"message": "hi"})).await.unwrap()["result"], "Echo: hi");
    let sum = call(&tools, "mcp_everything_get_sum", json!({"a": 2, "b": 40})).await.unwrap();
    assert_eq!(sum["result"], "The sum of 2 and 40 is 42.");
    let image = call(&tools, "mcp_everything_get_tiny_image", json!({})).await.unwrap();
    let image = image["result"].as_str().unwrap();
    assert!(image.starts_with("Here's the image you requested:\n[image from the server: image/png"), "{image}");

    let prompts = call(&tools, "mcp_everything_list_prompts", json!({})).await.unwrap();
    assert!(prompts.to_string().contains("simple-prompt"), "{prompts}");
    let prompt = call(&tools, "mcp_everything_get_prompt", json!({"name": "simple-prompt"})).await.unwrap();
    assert!(prompt.to_string().contains("This is a simple prompt without arguments."), "{prompt}");
    let resources = call(&tools, "mcp_everything_list_resources", json!({})).await.unwrap();
    let uri = resources["result"][0]["uri"].as_str().unwrap_or_else(|| panic!("a resource: {resources}")).to_owned();
    let read = call(&tools, "mcp_everything_read_resource", json!({"uri": uri})).await.unwrap();
    assert!(read["result"]["contents"][0]["uri"] == json!(uri), "{read}");

    let sampled =
        call(&tools, "mcp_everything_trigger_sampling_request", json!({"prompt": "a poem", "maxTokens": 500}))
            .await
            .unwrap();
    let sampled = sampled["result"].as_str().unwrap();
    assert!(sampled.contains("a haiku") && sampled.contains("turn-model"), "{sampled}");
    let asked = model.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].max_tokens, 50, "the server asked for 500; the cap holds");
    assert_eq!(asked[0].system.as_deref(), Some("You are a helpful test server."));
    assert!(asked[0].messages[0].text.ends_with("context: a poem"), "{:?}", asked[0].messages);
}
