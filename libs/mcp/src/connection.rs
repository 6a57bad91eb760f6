//! One live MCP session with a server: initialised over its transport, its tools listed (and
//! listed again when the server says they changed) within [`ListLimits`], calls made with the
//! configured timeout.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, ClientConfig, GetPromptRequestParams, PaginatedRequestParams, ReadResourceRequestParams,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::sync::Mutex;

use crate::sampling::{Callers, Calling, Gate, Refusal, Sampler};
use crate::server_key::ServerKey;
use crate::spec::{MAX_TOOL_NAME, McpServerSpec};

/// Tools listed this long ago are listed again at the next turn (a server that changed them
/// without saying so is caught within this).
const TOOLS_FRESH_FOR: Duration = Duration::from_secs(60);

/// What one listing of a server's tools may cost the shared worker, whatever the server (which
/// may be hostile) answers and whatever `timeout` its configuration gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListLimits {
    /// Tools kept from one server (the first it lists; the rest are left out, with a warning).
    pub tools: usize,
    /// `tools/list` pages asked for; a list that goes on past them is an error.
    pub pages: usize,
    /// Bytes of names, descriptions and schemas kept from one server.
    pub bytes: usize,
    /// The whole listing (the server's `timeout` when that is shorter).
    pub time: Duration,
}

impl Default for ListLimits {
    fn default() -> Self {
        Self { tools: 256, pages: 10, bytes: 1024 * 1024, time: Duration::from_secs(30) }
    }
}

/// Why a server could not be used.
#[derive(Debug, Clone, thiserror::Error)]
pub enum McpError {
    #[error("could not connect: {0}")]
    Connect(String),
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// The session is gone (the server stopped, the process died): reconnect.
    #[error("the connection to the server was lost")]
    Lost,
    #[error("{0}")]
    Call(String),
}

/// What the client tells servers, and hears from them.
pub(crate) struct Handler {
    tools_changed: Arc<AtomicBool>,
    /// Set where the configuration turned sampling on.
    sampling: Option<Gate>,
}

#[expect(deprecated, reason = "sampling is deprecated by SEP-2577 but still what servers send")]
impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.store(true, Ordering::Relaxed);
    }

    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        let Some(gate) = &self.sampling else {
            return Err(rmcp::ErrorData::method_not_found::<rmcp::model::CreateMessageRequestMethod>());
        };
        gate.answer(params).await.map_err(|refusal| match refusal {
            Refusal::Invalid(why) => rmcp::ErrorData::invalid_params(why, None),
            Refusal::Failed(why) => rmcp::ErrorData::internal_error(why, None),
        })
    }

    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        info.client_info.name = "hermes-cloud".into();
        info.client_info.version = env!("CARGO_PKG_VERSION").into();
        if self.sampling.is_some() {
            info.capabilities.sampling = Some(rmcp::model::SamplingCapability::default());
        }
        info
    }
}

/// A server's tool, as it listed it.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// What a server offers beside tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offers {
    pub resources: bool,
    pub prompts: bool,
}

struct Listed {
    tools: Vec<ListedTool>,
    at: Instant,
}

/// A live session.
pub struct McpConnection {
    /// Whose server it is (for the operator's log).
    key: ServerKey,
    service: RunningService<RoleClient, Handler>,
    tools_changed: Arc<AtomicBool>,
    listed: Mutex<Option<Listed>>,
    pub offers: Offers,
    /// The secret values of the configuration, kept out of every text the model sees.
    pub secrets: Vec<String>,
    /// The turns calling the server now, whose model answers its sampling requests.
    callers: Arc<Callers>,
}

impl std::fmt::Debug for McpConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpConnection").field("offers", &self.offers).finish_non_exhaustive()
    }
}

fn service_error(e: rmcp::ServiceError) -> McpError {
    match e {
        rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_) => McpError::Lost,
        rmcp::ServiceError::Timeout { timeout } => McpError::Timeout(timeout),
        rmcp::ServiceError::McpError(data) => McpError::Call(data.message.to_string()),
        other => McpError::Call(other.to_string()),
    }
}

impl McpConnection {
    /// Connects to the streamable-HTTP server of `spec` with `client` (the public-address
    /// client, or one that trusts the operator's allow-listed hosts).
    pub async fn connect_http(
        client: reqwest::Client,
        key: &ServerKey,
        spec: &McpServerSpec,
    ) -> Result<Self, McpError> {
        let url = spec.url.clone().unwrap_or_default();
        let mut headers = HashMap::new();
        for (name, value) in &spec.headers {
            let name = http::HeaderName::try_from(name.as_str()).map_err(|e| McpError::Connect(e.to_string()))?;
            let value = http::HeaderValue::try_from(value.as_str())
                .map_err(|_| McpError::Connect(format!("the value of header {name} is not valid")))?;
            headers.insert(name, value);
        }
        let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
        let transport = StreamableHttpClientTransport::with_client(client, config);
        Self::start(transport, key, spec).await
    }

    /// Initialises a session with `key`'s server over `transport`.
    pub async fn start<T, E, A>(transport: T, key: &ServerKey, spec: &McpServerSpec) -> Result<Self, McpError>
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let tools_changed = Arc::new(AtomicBool::new(false));
        let callers = Arc::new(Callers::default());
        let sampling = spec.sampling.enabled.then(|| Gate {
            server: key.name.clone(),
            spec: spec.sampling.clone(),
            callers: callers.clone(),
        });
        let handler = Handler { tools_changed: tools_changed.clone(), sampling };
        let timeout = spec.connect_timeout();
        let secrets = spec.secret_values();
        let service = tokio::time::timeout(timeout, handler.serve(transport))
            .await
            .map_err(|_| McpError::Timeout(timeout))?
            .map_err(|e| McpError::Connect(hermes_tools::text::redact(&e.to_string(), &secrets)))?;
        // The SDK would keep up to 512 answers (of up to 16 MiB each) under the cursors the
        // server chooses; the session keeps its own list of tools instead.
        service.peer().set_response_cache_config(rmcp::ClientCacheConfig::disabled()).await;
        let capabilities = service.peer_info().map(|info| info.capabilities.clone()).unwrap_or_default();
        let offers = Offers { resources: capabilities.resources.is_some(), prompts: capabilities.prompts.is_some() };
        let key = key.clone();
        Ok(Self { key, service, tools_changed, listed: Mutex::new(None), offers, secrets, callers })
    }

    /// Lets `sampler` answer the server's sampling requests while the guard lives (a call).
    pub fn calling(&self, sampler: Arc<dyn Sampler>) -> Calling {
        self.callers.enter(sampler)
    }

    /// Whether the session ended (the caller connects again).
    pub fn is_closed(&self) -> bool {
        self.service.is_closed()
    }

    /// The server's tools: listed again when it said they changed or the list is old, within
    /// `limits` (and `timeout`, when shorter than their time).
    pub async fn tools(&self, limits: &ListLimits, timeout: Duration) -> Result<Vec<ListedTool>, McpError> {
        let mut listed = self.listed.lock().await;
        let changed = self.tools_changed.swap(false, Ordering::Relaxed);
        if let Some(l) = listed.as_ref().filter(|l| !changed && l.at.elapsed() < TOOLS_FRESH_FOR) {
            return Ok(l.tools.clone());
        }
        let bound = timeout.min(limits.time);
        let tools = tokio::time::timeout(bound, self.list(limits)).await.map_err(|_| McpError::Timeout(bound))??;
        *listed = Some(Listed { tools: tools.clone(), at: Instant::now() });
        Ok(tools)
    }

    /// Asks for the pages of the server's tools, keeping what `limits` allow.
    async fn list(&self, limits: &ListLimits) -> Result<Vec<ListedTool>, McpError> {
        let mut kept = Kept { limits, tools: Vec::new(), bytes: 0, misnamed: 0, over: 0 };
        let mut cursor = None;
        for _ in 0..limits.pages {
            let params = PaginatedRequestParams::default().with_cursor(cursor);
            let page = self.service.peer().list_tools(Some(params)).await.map_err(service_error)?;
            page.tools.into_iter().for_each(|tool| kept.offer(tool));
            cursor = page.next_cursor;
            let full = kept.tools.len() >= limits.tools;
            if cursor.is_none() || full {
                kept.report(&self.key, cursor.is_some());
                return Ok(kept.tools);
            }
        }
        Err(McpError::Call(format!("the server's tool list went on past {} pages", limits.pages)))
    }

    /// Calls `tool` with `arguments`; the result as the protocol has it (JSON).
    pub async fn call(&self, tool: &str, arguments: Value, timeout: Duration) -> Result<Value, McpError> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(map) = arguments {
            params = params.with_arguments(map);
        }
        json_within(timeout, async { self.service.peer().call_tool(params).await.map_err(service_error) }).await
    }

    /// The server's resources (JSON).
    pub async fn list_resources(&self, timeout: Duration) -> Result<Value, McpError> {
        let peer = self.service.peer();
        let pages = all_pages("resource", |params| async move {
            peer.list_resources(Some(params)).await.map(|page| (page.resources, page.next_cursor))
        });
        json_within(timeout, pages).await
    }

    /// One resource's contents (JSON).
    pub async fn read_resource(&self, uri: &str, timeout: Duration) -> Result<Value, McpError> {
        let read = self.service.peer().read_resource(ReadResourceRequestParams::new(uri.to_owned()));
        json_within(timeout, async { read.await.map_err(service_error) }).await
    }

    /// The server's prompts (JSON).
    pub async fn list_prompts(&self, timeout: Duration) -> Result<Value, McpError> {
        let peer = self.service.peer();
        let pages = all_pages("prompt", |params| async move {
            peer.list_prompts(Some(params)).await.map(|page| (page.prompts, page.next_cursor))
        });
        json_within(timeout, pages).await
    }

    /// One prompt, filled with `arguments` (JSON).
    pub async fn get_prompt(&self, name: &str, arguments: Value, timeout: Duration) -> Result<Value, McpError> {
        let mut params = GetPromptRequestParams::new(name.to_owned());
        if let Value::Object(map) = arguments {
            params = params.with_arguments(map);
        }
        json_within(timeout, async { self.service.peer().get_prompt(params).await.map_err(service_error) }).await
    }
}

/// What `ask` gets from the server within `timeout`, as the JSON the tools hand on.
async fn json_within<T: serde::Serialize>(
    timeout: Duration,
    ask: impl Future<Output = Result<T, McpError>>,
) -> Result<Value, McpError> {
    let found = tokio::time::timeout(timeout, ask).await.map_err(|_| McpError::Timeout(timeout))??;
    serde_json::to_value(found).map_err(|e| McpError::Call(e.to_string()))
}

/// The items of every page of a `what` list (asked for by `page`), from at most
/// [`ListLimits`]' pages: a list that goes on past them is an error.
async fn all_pages<T, F, Fut>(what: &str, mut page: F) -> Result<Vec<T>, McpError>
where
    F: FnMut(PaginatedRequestParams) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, Option<String>), rmcp::ServiceError>>,
{
    let mut found = Vec::new();
    let mut cursor = None;
    for _ in 0..ListLimits::default().pages {
        let (items, next) = page(PaginatedRequestParams::default().with_cursor(cursor)).await.map_err(service_error)?;
        found.extend(items);
        cursor = next;
        if cursor.is_none() {
            return Ok(found);
        }
    }
    Err(McpError::Call(format!("the server's {what} list went on past {} pages", ListLimits::default().pages)))
}

/// The tools one listing keeps, and what it left out.
struct Kept<'a> {
    limits: &'a ListLimits,
    tools: Vec<ListedTool>,
    bytes: usize,
    /// Tools with an empty name, a name longer than a model provider takes, or one listed before.
    misnamed: usize,
    /// Tools past the cap of tools or bytes.
    over: usize,
}

impl Kept<'_> {
    fn offer(&mut self, tool: rmcp::model::Tool) {
        if self.tools.len() >= self.limits.tools {
            self.over += 1;
            return;
        }
        let name = tool.name.as_ref();
        if name.is_empty() || name.len() > MAX_TOOL_NAME || self.tools.iter().any(|t| t.name == name) {
            self.misnamed += 1;
            return;
        }
        let description = tool.description.as_deref().unwrap_or_default();
        let size = name.len().saturating_add(description.len()).saturating_add(json_len(&tool.input_schema));
        if self.bytes.saturating_add(size) > self.limits.bytes {
            self.over += 1;
            return;
        }
        self.bytes += size;
        self.tools.push(ListedTool {
            name: name.to_owned(),
            description: description.to_owned(),
            input_schema: Value::Object((*tool.input_schema).clone()),
        });
    }

    /// Tells the operator what was left out (`more`: pages were left unasked).
    fn report(&self, key: &ServerKey, more: bool) {
        let (tenant, server, kept) = (&key.tenant, &key.name, self.tools.len());
        if self.misnamed > 0 {
            tracing::warn!(%tenant, %server, left_out = self.misnamed, max_chars = MAX_TOOL_NAME,
                "an MCP server listed tools with empty, repeated or too long names; they are not offered");
        }
        if self.over > 0 || more {
            tracing::warn!(%tenant, %server, kept, left_out = self.over, more_pages = more,
                "an MCP server listed more tools than a server may offer; the first are offered");
        }
    }
}

/// The length of `object` as JSON, without writing it anywhere.
fn json_len(object: &rmcp::model::JsonObject) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, object) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
}
