//! MCP servers that behave as a test scripts them, for the client's limits: one that floods
//! every `tools/list` with fresh names and says the list changed, one whose pages never end,
//! one that never answers a listing, and one that lists fixed names and says which server a
//! call reached. Beside them, plain HTTP hosts for redirects: one that answers every request
//! with a 307 to another, and one that records the headers it is sent.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, Resource, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};

use crate::served::Served;

/// How the server answers.
#[derive(Debug, Clone)]
pub enum Script {
    /// Every `tools/list` answers `count` tools under fresh names (`t_<uuid>`), then says the
    /// list changed (so the client lists again next time).
    Flood { count: usize },
    /// Every page has one fresh tool and a `nextCursor` to another page, without end.
    EndlessPages,
    /// `tools/list` is never answered.
    NeverLists,
    /// Lists one tool, and has resources whose pages never end.
    EndlessResources,
    /// Lists `tools`; a call answers `<label>:<tool>` and is noted.
    Named { label: String, tools: Vec<String> },
}

#[derive(Default)]
struct Seen {
    /// `tools/list` and `resources/list` requests, each page counted.
    pages: AtomicUsize,
    /// The tools called, in order.
    calls: Mutex<Vec<String>>,
}

#[derive(Clone)]
struct Scripted {
    script: Arc<Script>,
    seen: Arc<Seen>,
}

/// A fresh name in a UUID's shape, `t_` before it.
fn fresh_name() -> String {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    let _ = ring::rand::SystemRandom::new().fill(&mut bytes);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("t_{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

fn tool(name: String) -> Tool {
    let mut schema = JsonObject::new();
    schema.insert("type".into(), "object".into());
    Tool::new(name, "a tool", schema)
}

impl ServerHandler for Scripted {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().enable_tool_list_changed();
        match self.script.as_ref() {
            Script::EndlessResources => ServerConfig::new(capabilities.enable_resources().build()),
            _ => ServerConfig::new(capabilities.build()),
        }
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let page = self.seen.pages.fetch_add(1, Ordering::Relaxed) + 1;
        let mut result = ListResourcesResult::with_all_items(vec![Resource::new(format!("memo://{page}"), "memo")]);
        result.next_cursor = Some(format!("page-{}", page + 1));
        Ok(result)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let page = self.seen.pages.fetch_add(1, Ordering::Relaxed) + 1;
        match self.script.as_ref() {
            Script::Flood { count } => {
                let _ = context.peer.notify_tool_list_changed().await;
                Ok(ListToolsResult::with_all_items((0..*count).map(|_| tool(fresh_name())).collect()))
            }
            Script::EndlessPages => {
                let mut result = ListToolsResult::with_all_items(vec![tool(fresh_name())]);
                result.next_cursor = Some(format!("page-{}", page + 1));
                Ok(result)
            }
            Script::NeverLists => std::future::pending().await,
            Script::EndlessResources => Ok(ListToolsResult::with_all_items(vec![tool("status".into())])),
            Script::Named { tools, .. } => {
                Ok(ListToolsResult::with_all_items(tools.iter().cloned().map(tool).collect()))
            }
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if let Ok(mut calls) = self.seen.calls.lock() {
            calls.push(name.clone());
        }
        let label = match self.script.as_ref() {
            Script::Named { label, .. } => label.as_str(),
            _ => "scripted",
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(format!("{label}:{name}"))]).into())
    }
}

/// A scripted server on loopback (`/mcp`); stops when dropped.
pub struct ScriptedMcpServer {
    served: Served,
    seen: Arc<Seen>,
}

impl ScriptedMcpServer {
    pub async fn start(script: Script) -> std::io::Result<Self> {
        let (script, seen) = (Arc::new(script), Arc::new(Seen::default()));
        let handler = Scripted { script, seen: seen.clone() };
        let service = StreamableHttpService::new(
            move || Ok(handler.clone()),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        let app = axum::Router::new().nest_service("/mcp", service);
        Ok(Self { served: Served::start(app).await?, seen })
    }

    /// `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        self.served.url("/mcp")
    }

    /// `127.0.0.1:PORT`.
    pub fn host(&self) -> String {
        self.served.addr().to_string()
    }

    /// The pages of `tools/list` asked for so far.
    pub fn pages(&self) -> usize {
        self.seen.pages.load(Ordering::Relaxed)
    }

    /// The tools called, in order.
    pub fn calls(&self) -> Vec<String> {
        self.seen.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }
}

/// A host that answers every request with `307 Temporary Redirect` to `to`.
pub async fn redirecting_to(to: String) -> std::io::Result<SocketAddr> {
    let app = axum::Router::new().fallback(move || {
        let to = to.clone();
        async move { (axum::http::StatusCode::TEMPORARY_REDIRECT, [(axum::http::header::LOCATION, to)]) }
    });
    crate::serve_loopback(app).await
}

/// The headers of every request a [`HeaderRecorder`] was sent.
pub type Recorded = Arc<Mutex<Vec<axum::http::HeaderMap>>>;

/// A host on `ip` (a loopback address: 127.0.0.2 is another host than 127.0.0.1) that notes
/// the headers of every request and answers 404.
pub struct HeaderRecorder {
    pub addr: SocketAddr,
    pub seen: Recorded,
}

impl HeaderRecorder {
    pub async fn start(ip: &str) -> std::io::Result<Self> {
        let seen = Recorded::default();
        let noted = seen.clone();
        let app = axum::Router::new().fallback(move |headers: axum::http::HeaderMap| {
            if let Ok(mut all) = noted.lock() {
                all.push(headers);
            }
            async { axum::http::StatusCode::NOT_FOUND }
        });
        let listener = tokio::net::TcpListener::bind((ip, 0)).await?;
        let addr = listener.local_addr()?;
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { addr, seen })
    }

    /// How many requests carried header `name`.
    pub fn carrying(&self, name: &str) -> usize {
        self.seen.lock().map(|all| all.iter().filter(|h| h.contains_key(name)).count()).unwrap_or(0)
    }

    /// How many requests came.
    pub fn requests(&self) -> usize {
        self.seen.lock().map(|all| all.len()).unwrap_or(0)
    }
}
