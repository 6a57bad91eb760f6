//! One live MCP session with a server: initialised over its transport, its tools listed (and
//! listed again when the server says they changed), calls made with the configured timeout.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ClientConfig, GetPromptRequestParams, ReadResourceRequestParams};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::sync::Mutex;

use crate::pool::ServerKey;
use crate::sampling::{Callers, Calling, Gate, Refusal, Sampler};
use crate::spec::McpServerSpec;

/// Tools listed this long ago are listed again at the next turn (a server that changed them
/// without saying so is caught within this).
const TOOLS_FRESH_FOR: Duration = Duration::from_secs(60);

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
            .map_err(|e| McpError::Connect(hermes_toolbox::text::redact(&e.to_string(), &secrets)))?;
        let capabilities = service.peer_info().map(|info| info.capabilities.clone()).unwrap_or_default();
        let offers = Offers { resources: capabilities.resources.is_some(), prompts: capabilities.prompts.is_some() };
        Ok(Self { service, tools_changed, listed: Mutex::new(None), offers, secrets, callers })
    }

    /// Lets `sampler` answer the server's sampling requests while the guard lives (a call).
    pub fn calling(&self, sampler: Arc<dyn Sampler>) -> Calling {
        self.callers.enter(sampler)
    }

    /// Whether the session ended (the caller connects again).
    pub fn is_closed(&self) -> bool {
        self.service.is_closed()
    }

    /// The server's tools: listed again when it said they changed or the list is old.
    pub async fn tools(&self, timeout: Duration) -> Result<Vec<ListedTool>, McpError> {
        let mut listed = self.listed.lock().await;
        let changed = self.tools_changed.swap(false, Ordering::Relaxed);
        if let Some(l) = listed.as_ref().filter(|l| !changed && l.at.elapsed() < TOOLS_FRESH_FOR) {
            return Ok(l.tools.clone());
        }
        let tools = tokio::time::timeout(timeout, self.service.peer().list_all_tools())
            .await
            .map_err(|_| McpError::Timeout(timeout))?
            .map_err(service_error)?;
        let tools: Vec<ListedTool> = tools
            .into_iter()
            .map(|t| ListedTool {
                name: t.name.to_string(),
                description: t.description.map(|d| d.to_string()).unwrap_or_default(),
                input_schema: Value::Object((*t.input_schema).clone()),
            })
            .collect();
        *listed = Some(Listed { tools: tools.clone(), at: Instant::now() });
        Ok(tools)
    }

    /// Calls `tool` with `arguments`; the result as the protocol has it (JSON).
    pub async fn call(&self, tool: &str, arguments: Value, timeout: Duration) -> Result<Value, McpError> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(map) = arguments {
            params = params.with_arguments(map);
        }
        let result = tokio::time::timeout(timeout, self.service.peer().call_tool(params))
            .await
            .map_err(|_| McpError::Timeout(timeout))?
            .map_err(service_error)?;
        serde_json::to_value(result).map_err(|e| McpError::Call(e.to_string()))
    }

    /// The server's resources (JSON).
    pub async fn list_resources(&self, timeout: Duration) -> Result<Value, McpError> {
        let found = tokio::time::timeout(timeout, self.service.peer().list_all_resources())
            .await
            .map_err(|_| McpError::Timeout(timeout))?
            .map_err(service_error)?;
        serde_json::to_value(found).map_err(|e| McpError::Call(e.to_string()))
    }

    /// One resource's contents (JSON).
    pub async fn read_resource(&self, uri: &str, timeout: Duration) -> Result<Value, McpError> {
        let read = self.service.peer().read_resource(ReadResourceRequestParams::new(uri.to_owned()));
        let found = tokio::time::timeout(timeout, read)
            .await
            .map_err(|_| McpError::Timeout(timeout))?
            .map_err(service_error)?;
        serde_json::to_value(found).map_err(|e| McpError::Call(e.to_string()))
    }

    /// The server's prompts (JSON).
    pub async fn list_prompts(&self, timeout: Duration) -> Result<Value, McpError> {
        let found = tokio::time::timeout(timeout, self.service.peer().list_all_prompts())
            .await
            .map_err(|_| McpError::Timeout(timeout))?
            .map_err(service_error)?;
        serde_json::to_value(found).map_err(|e| McpError::Call(e.to_string()))
    }

    /// One prompt, filled with `arguments` (JSON).
    pub async fn get_prompt(&self, name: &str, arguments: Value, timeout: Duration) -> Result<Value, McpError> {
        let mut params = GetPromptRequestParams::new(name.to_owned());
        if let Value::Object(map) = arguments {
            params = params.with_arguments(map);
        }
        let found = tokio::time::timeout(timeout, self.service.peer().get_prompt(params))
            .await
            .map_err(|_| McpError::Timeout(timeout))?
            .map_err(service_error)?;
        serde_json::to_value(found).map_err(|e| McpError::Call(e.to_string()))
    }
}
