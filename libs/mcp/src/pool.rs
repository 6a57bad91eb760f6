//! The worker's live MCP sessions, one per (tenant, agent, server), kept between turns so a
//! chat does not reconnect on every message. A session is replaced when the server's
//! configuration changes or the session ends, and dropped after it was idle a while (the
//! server's process, for a stdio server, goes with it).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;

use hermes_core::{AgentId, TenantId};
use hermes_tools::Tool;

use crate::connection::{McpConnection, McpError};
use crate::spec::{McpServerSpec, Transport};
use crate::tool::{McpTool, Server};

/// Which server of whose agent.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServerKey {
    pub tenant: TenantId,
    pub agent: AgentId,
    pub name: String,
}

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
    pub client: reqwest::Client,
    pub policy: std::sync::Arc<hermes_net_policy::outbound::Policy>,
}

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
                    McpConnection::connect_http(self.client.clone(), key, spec).await
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
}

/// A server that could not be offered this turn, and why (for the operator's log and the
/// model's note).
#[derive(Debug, Clone)]
pub struct Unavailable {
    pub server: String,
    pub reason: String,
}

fn fingerprint(spec: &McpServerSpec) -> String {
    serde_json::to_string(spec).unwrap_or_default()
}

impl McpServers {
    pub fn new(connector: Box<dyn Connect>, idle: Duration) -> Arc<Self> {
        Arc::new(Self { connector, live: Mutex::default(), idle })
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

    /// The agent's tools from its servers `specs` (name, configuration), for one turn: each
    /// enabled server's tools through its filter, and its wrappers. A server that cannot be
    /// reached is left out and reported. `hooks.sampler` answers the sampling requests of
    /// servers that have sampling on while this turn calls them; `hooks.keeper` keeps the
    /// pictures their results carry.
    pub async fn tools(
        self: &Arc<Self>,
        tenant: TenantId,
        agent: AgentId,
        specs: Vec<(String, McpServerSpec)>,
        hooks: crate::TurnHooks,
    ) -> (Vec<Arc<dyn Tool>>, Vec<Unavailable>) {
        let listed = specs.into_iter().filter(|(_, spec)| spec.enabled).map(|(name, spec)| {
            let key = ServerKey { tenant, agent, name };
            async move {
                let listed = self.listed(&key, &spec).await;
                (key, spec, listed)
            }
        });
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        let mut unavailable = Vec::new();
        for (key, spec, listed) in futures_util::future::join_all(listed).await {
            let (listed, offers) = match listed {
                Ok(found) => found,
                Err(e) => {
                    unavailable.push(Unavailable { server: key.name.clone(), reason: e.to_string() });
                    continue;
                }
            };
            let Ok(filter) = spec.filter() else { continue };
            let (resources, prompts) = (offers.resources && spec.tools.resources, offers.prompts && spec.tools.prompts);
            let sampler = hooks.sampler.clone().filter(|_| spec.sampling.enabled);
            let server = Arc::new(Server { pool: self.clone(), key, spec, sampler, keeper: hooks.keeper.clone() });
            for tool in listed.iter().filter(|t| filter.allows(&t.name)) {
                tools.push(Arc::new(McpTool::call(
                    server.clone(),
                    &tool.name,
                    &tool.description,
                    tool.input_schema.clone(),
                )));
            }
            for wrapper in McpTool::wrappers(&server, resources, prompts) {
                tools.push(Arc::new(wrapper));
            }
        }
        (tools, unavailable)
    }

    /// A server's tools and what else it offers, reconnecting once when the session was lost.
    async fn listed(
        &self,
        key: &ServerKey,
        spec: &McpServerSpec,
    ) -> Result<(Vec<crate::connection::ListedTool>, crate::connection::Offers), McpError> {
        for attempt in 0..2 {
            let conn = self.connection(key, spec).await?;
            match conn.tools(spec.timeout()).await {
                Ok(tools) => return Ok((tools, conn.offers)),
                Err(McpError::Lost) if attempt == 0 => self.forget(key),
                Err(e) => return Err(e),
            }
        }
        Err(McpError::Lost)
    }
}
