//! The worker's live MCP sessions, one per (tenant, agent, server), kept between turns so a
//! chat does not reconnect on every message. A session is replaced when the server's
//! configuration changes or the session ends, and dropped after it was idle a while (the
//! server's process, for a stdio server, goes with it).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;

use hermes_core::{AgentId, TenantId};

use crate::connection::{ListLimits, ListedTool, McpConnection, McpError, Offers};
use crate::server_key::ServerKey;
use crate::spec::{McpServerSpec, Transport};

/// Opens sessions: HTTP servers from the worker through the public-address client, stdio
/// servers inside the agent's sandbox.
pub trait Connect: Send + Sync {
    fn connect<'a>(
        &'a self,
        key: &'a ServerKey,
        spec: &'a McpServerSpec,
    ) -> BoxFuture<'a, Result<McpConnection, McpError>>;
}

/// Connects HTTP servers with one client (built under `policy`, which also vets each server's
/// URL first: the client checks names as it resolves them, not address literals); stdio
/// servers are refused until a sandbox connector is given.
pub struct HttpConnector {
    client: reqwest::Client,
    policy: Arc<hermes_net_policy::outbound::Policy>,
}

impl HttpConnector {
    /// Its client reaches what `policy` allows, and follows no redirect: a server's headers
    /// (which may carry the team's keys) go to its configured host only.
    pub fn new(policy: Arc<hermes_net_policy::outbound::Policy>) -> Result<Self, reqwest::Error> {
        let refuse = |attempt: reqwest::redirect::Attempt| attempt.error(REDIRECT_REFUSED);
        let client = hermes_net_policy::outbound::builder(policy.clone())
            .redirect(reqwest::redirect::Policy::custom(refuse))
            .connect_timeout(Duration::from_secs(10))
            // Calls and listings have their own, shorter bounds; this ends a stuck request.
            .timeout(Duration::from_secs(3_600))
            .user_agent(concat!("hermes-cloud/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self { client, policy })
    }
}

/// Why a redirect was not followed.
const REDIRECT_REFUSED: &str = "an MCP server's redirects are not followed (its `url` must be where it answers)";

impl Connect for HttpConnector {
    fn connect<'a>(
        &'a self,
        key: &'a ServerKey,
        spec: &'a McpServerSpec,
    ) -> BoxFuture<'a, Result<McpConnection, McpError>> {
        Box::pin(async move {
            match spec.transport() {
                Ok(Transport::Http) => {
                    let url = spec.url.as_deref().unwrap_or_default();
                    let parsed =
                        reqwest::Url::parse(url).map_err(|_| McpError::Connect(format!("`{url}` is not a URL")))?;
                    if let Some(why) = self.policy.refuse(&parsed) {
                        return Err(McpError::Connect(format!("the server's address is refused: {why}")));
                    }
                    McpConnection::connect_http(self.client.clone(), key, spec).await.map_err(|e| match e {
                        // The SDK keeps only the text of the client's error, not its cause.
                        McpError::Connect(why) if why.contains("error following redirect") => {
                            McpError::Connect(format!("{REDIRECT_REFUSED}: {why}"))
                        }
                        other => other,
                    })
                }
                Ok(Transport::Stdio) => Err(McpError::Connect("stdio servers are not available here".into())),
                Err(e) => Err(McpError::Connect(e.to_string())),
            }
        })
    }
}

struct Live {
    /// The configuration the session was opened with (a change opens a new one).
    fingerprint: String,
    connection: Arc<McpConnection>,
    used: Instant,
}

/// The live sessions.
pub struct McpServers {
    connector: Box<dyn Connect>,
    live: Mutex<HashMap<ServerKey, Live>>,
    idle: Duration,
    limits: ListLimits,
}

fn fingerprint(spec: &McpServerSpec) -> String {
    serde_json::to_string(spec).unwrap_or_default()
}

impl McpServers {
    pub fn new(connector: Box<dyn Connect>, idle: Duration) -> Arc<Self> {
        Self::with_limits(connector, idle, ListLimits::default())
    }

    /// Sessions whose listings keep within `limits` (tests shorten them).
    pub fn with_limits(connector: Box<dyn Connect>, idle: Duration, limits: ListLimits) -> Arc<Self> {
        Arc::new(Self { connector, live: Mutex::default(), idle, limits })
    }

    /// The live session for `key` under `spec`, opened when there is none (or it ended, or the
    /// configuration changed).
    pub async fn connection(&self, key: &ServerKey, spec: &McpServerSpec) -> Result<Arc<McpConnection>, McpError> {
        let wanted = fingerprint(spec);
        if let Ok(mut live) = self.live.lock()
            && let Some(found) = live.get_mut(key)
        {
            if found.fingerprint == wanted && !found.connection.is_closed() {
                found.used = Instant::now();
                return Ok(found.connection.clone());
            }
            live.remove(key);
        }
        let connection = Arc::new(self.connector.connect(key, spec).await?);
        if let Ok(mut live) = self.live.lock() {
            let entry = Live { fingerprint: wanted, connection: connection.clone(), used: Instant::now() };
            live.insert(key.clone(), entry);
        }
        Ok(connection)
    }

    /// Drops `key`'s session (it was lost); the next call opens a new one.
    pub fn forget(&self, key: &ServerKey) {
        if let Ok(mut live) = self.live.lock() {
            live.remove(key);
        }
    }

    /// Drops every session of `agent` (`/reload-mcp`): the next turn connects and lists the
    /// servers' tools afresh. How many there were.
    pub fn forget_agent(&self, tenant: TenantId, agent: AgentId) -> usize {
        let Ok(mut live) = self.live.lock() else { return 0 };
        let before = live.len();
        live.retain(|key, _| !(key.tenant == tenant && key.agent == agent));
        before - live.len()
    }

    /// Drops sessions idle longer than the pool's idle time; how many.
    pub fn reap(&self) -> usize {
        let Ok(mut live) = self.live.lock() else { return 0 };
        let before = live.len();
        live.retain(|_, l| l.used.elapsed() < self.idle && !l.connection.is_closed());
        before - live.len()
    }

    /// How many sessions are live.
    pub fn len(&self) -> usize {
        self.live.lock().map(|l| l.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A server's tools and what else it offers, reconnecting once when the session was lost.
    pub(crate) async fn listed(
        &self,
        key: &ServerKey,
        spec: &McpServerSpec,
    ) -> Result<(Vec<ListedTool>, Offers), McpError> {
        for attempt in 0..2 {
            let conn = self.connection(key, spec).await?;
            match conn.tools(&self.limits, spec.timeout()).await {
                Ok(tools) => return Ok((tools, conn.offers)),
                Err(McpError::Lost) if attempt == 0 => self.forget(key),
                Err(e) => return Err(e),
            }
        }
        Err(McpError::Lost)
    }
}
