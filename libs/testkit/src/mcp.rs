//! A small MCP server built with `rmcp`, over streamable HTTP on loopback (`/mcp`), for the
//! MCP client's tests. Its tools: `add` (a sum), `picture` (text and a PNG), `fail` (an error
//! result), `leak` (answers with the token it was given, to test redaction), `call_api` (calls
//! a URL with that token, by curl), `tagged` (text hiding Unicode tag characters), `slow`
//! (sleeps), `summarize` (asks the client's model, by MCP sampling, to summarise its text,
//! asking for 500 tokens), and `unlock`, which adds `late_tool` and says the list changed. One
//! resource (`memo://readme`) and one prompt (`greeting`). It can be restarted on the same
//! port, which loses every session, as a real restart does. Servers that misbehave on purpose
//! are in [`hostile`].

pub mod hostile;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, GetPromptRequestParams, GetPromptResponse, GetPromptResult, ListPromptsResult,
    ListResourcesResult, PaginatedRequestParams, Prompt, PromptArgument, PromptMessage, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, Role, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, schemars, tool, tool_handler, tool_router};

use crate::served::Served;

/// The token `leak` gives away.
pub const LEAKED_TOKEN: &str = "sekrit-token-123456";

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct AddRequest {
    /// The first number.
    pub a: i64,
    /// The second number.
    pub b: i64,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct SummarizeRequest {
    /// The text to summarise.
    pub text: String,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct CallApiRequest {
    /// The API's URL.
    pub url: String,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct SlowRequest {
    /// How long to take, in milliseconds.
    pub millis: u64,
}

/// What every session of the server shares.
#[derive(Default)]
pub struct Shared {
    unlocked: AtomicBool,
    calls: AtomicUsize,
    /// The `Authorization` header of every request, in order.
    authorizations: std::sync::Mutex<Vec<String>>,
}

/// Notes each request's `Authorization` header.
async fn note_authorization(
    axum::extract::State(shared): axum::extract::State<Arc<Shared>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if let (Some(value), Ok(mut seen)) =
        (request.headers().get("authorization").and_then(|v| v.to_str().ok()), shared.authorizations.lock())
    {
        seen.push(value.to_owned());
    }
    next.run(request).await
}

#[derive(Clone)]
struct TestServer {
    shared: Arc<Shared>,
}

#[tool_router]
impl TestServer {
    #[tool(description = "Add two numbers")]
    fn add(&self, Parameters(AddRequest { a, b }): Parameters<AddRequest>) -> String {
        self.shared.calls.fetch_add(1, Ordering::Relaxed);
        (a + b).to_string()
    }

    #[tool(description = "A chart, as an image with a caption")]
    fn picture(&self) -> Result<CallToolResult, ErrorData> {
        self.shared.calls.fetch_add(1, Ordering::Relaxed);
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
        Ok(CallToolResult::success(vec![ContentBlock::text("the chart"), ContentBlock::image(png, "image/png")]))
    }

    #[tool(description = "Always fails")]
    fn fail(&self) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::error(vec![ContentBlock::text("the repository does not exist")]))
    }

    #[tool(description = "Says which token it was configured with")]
    fn leak(&self) -> String {
        let token = std::env::var("MCP_TEST_TOKEN").unwrap_or_else(|_| LEAKED_TOKEN.to_owned());
        format!("my token is {token}")
    }

    #[tool(description = "Calls an API with the token it was configured with (MCP_TEST_TOKEN)")]
    fn call_api(&self, Parameters(CallApiRequest { url }): Parameters<CallApiRequest>) -> String {
        // curl stands in for a server's HTTP client: it honours the sandbox's proxy and CA
        // variables, as clients of every language do.
        let token = std::env::var("MCP_TEST_TOKEN").unwrap_or_default();
        let header = format!("Authorization: Bearer {token}");
        match std::process::Command::new("curl").args(["-sS", "--max-time", "20", "-H", &header, &url]).output() {
            Ok(out) => format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
            Err(e) => format!("cannot run curl: {e}"),
        }
    }

    #[tool(description = "Text with hidden characters")]
    fn tagged(&self) -> String {
        "visible\u{E0049}\u{E0047}\u{E004E} text".to_owned()
    }

    #[tool(description = "Takes its time")]
    async fn slow(&self, Parameters(SlowRequest { millis }): Parameters<SlowRequest>) -> String {
        tokio::time::sleep(std::time::Duration::from_millis(millis)).await;
        "done".to_owned()
    }

    #[tool(description = "Summarises text with the client's model (MCP sampling)")]
    #[expect(deprecated, reason = "sampling is deprecated by SEP-2577 but still sent by servers")]
    async fn summarize(
        &self,
        Parameters(SummarizeRequest { text }): Parameters<SummarizeRequest>,
        peer: Peer<RoleServer>,
    ) -> String {
        use rmcp::model::{CreateMessageRequestParams, SamplingMessage};
        let ask = vec![SamplingMessage::user_text(format!("Summarise in one line: {text}"))];
        let params = CreateMessageRequestParams::new(ask, 500).with_system_prompt("You write one-line summaries.");
        match peer.create_message(params).await {
            Ok(answer) => {
                let said: Vec<String> = answer
                    .message
                    .content
                    .into_vec()
                    .iter()
                    .filter_map(|b| b.as_text().map(|t| t.text.clone()))
                    .collect();
                format!("summary by {}: {}", answer.model, said.join(" "))
            }
            Err(e) => format!("sampling refused: {e}"),
        }
    }

    #[tool(description = "Adds late_tool and tells the client")]
    async fn unlock(&self, peer: Peer<RoleServer>) -> String {
        self.shared.unlocked.store(true, Ordering::Relaxed);
        let _ = peer.notify_tool_list_changed().await;
        "unlocked".to_owned()
    }

    #[tool(description = "Only there after unlock")]
    fn late_tool(&self) -> String {
        "late".to_owned()
    }
}

impl TestServer {
    /// The tools as they are now (`late_tool` only once unlocked).
    fn router(&self) -> ToolRouter<Self> {
        let mut router = Self::tool_router();
        if !self.shared.unlocked.load(Ordering::Relaxed) {
            router.remove_route("late_tool");
        }
        router
    }
}

#[tool_handler(router = self.router())]
impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_prompts()
                .build(),
        )
        .with_instructions("A test server")
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let readme = Resource::new("memo://readme", "readme");
        Ok(ListResourcesResult::with_all_items(vec![readme]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != "memo://readme" {
            return Err(ErrorData::resource_not_found("no such resource", None));
        }
        let contents = ResourceContents::text("Read me first.", request.uri);
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let argument = PromptArgument::new("name").with_required(true);
        let prompt = Prompt::new("greeting", Some("Greets someone"), Some(vec![argument]));
        Ok(ListPromptsResult::with_all_items(vec![prompt]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let name = request.arguments.as_ref().and_then(|a| a.get("name")).and_then(|v| v.as_str()).unwrap_or("you");
        let message = PromptMessage::new_text(Role::User, format!("Say hello to {name}."));
        Ok(GetPromptResult::new(vec![message]).into())
    }
}

/// Serves the test server on this process's stdin and stdout until the client goes. `leak`
/// answers with `$MCP_TEST_TOKEN` when it is set (the token a stdio server gets in its env).
pub async fn serve_stdio() -> anyhow::Result<()> {
    use rmcp::ServiceExt;
    let server = TestServer { shared: Arc::new(Shared::default()) };
    server.serve(rmcp::transport::stdio()).await?.waiting().await?;
    Ok(())
}

/// A running server; stops when dropped.
pub struct McpTestServer {
    served: Served,
    shared: Arc<Shared>,
}

/// `/mcp` over `shared`, noting the `Authorization` each request came with.
fn app(shared: Arc<Shared>) -> axum::Router {
    let shared_for_layer = shared.clone();
    let service = StreamableHttpService::new(
        move || Ok(TestServer { shared: shared.clone() }),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(shared_for_layer, note_authorization))
}

impl McpTestServer {
    pub async fn start() -> std::io::Result<Self> {
        let shared = Arc::new(Shared::default());
        Ok(Self { served: Served::start(app(shared.clone())).await?, shared })
    }

    /// `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        self.served.url("/mcp")
    }

    /// `127.0.0.1:PORT`.
    pub fn host(&self) -> String {
        self.served.addr().to_string()
    }

    /// Stops and starts again on the same port: every session is forgotten.
    pub async fn restart(&mut self) -> std::io::Result<()> {
        let addr = self.served.addr();
        self.served.stop().await;
        self.served = Served::on(tokio::net::TcpListener::bind(addr).await?, app(self.shared.clone()))?;
        Ok(())
    }

    /// The `Authorization` headers requests came with (the last is the latest).
    pub fn authorizations(&self) -> Vec<String> {
        self.shared.authorizations.lock().map(|a| a.clone()).unwrap_or_default()
    }

    /// Tool calls that reached a tool (`add`, `picture`).
    pub fn calls(&self) -> usize {
        self.shared.calls.load(Ordering::Relaxed)
    }
}
