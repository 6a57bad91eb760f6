//! Sandboxes: where an agent's shell and file tools run. One sandbox per tenant-agent,
//! created on first use, reused by later turns and sessions, removed when idle; its
//! workspace stays.
//!
//! Every sandbox runs sandboxd (`services/sandboxd`), and the worker talks to it through a
//! [`SandboxClient`]. Backends ([`Sandboxes`]) only decide where the sandbox lives and how to
//! reach its daemon: Docker ([`docker::DockerSandboxes`]) and bubblewrap on the worker's own
//! machine ([`local::LocalSandboxes`]).

pub mod client;
mod common;
pub mod docker;
pub mod egress_tunnel;
mod listening;
pub mod local;
pub mod process;
mod rpc_trace;
mod span_relay;
pub mod spec;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use hermes_config::SandboxBackend;
use hermes_core::census::LiveSandbox;
use hermes_core::{AgentId, TenantId};

pub use client::{Address, PinnedCert, SandboxClient, status_error};
pub use common::{Census, is_idle, live_sandbox, record_live};
pub use hermes_sandbox_proto::v1 as proto;
pub use spec::{SandboxSpec, SpecSource, Trust};

/// Which sandbox: never shared between tenants or agents, nor between the people or
/// conversations of an agent whose `workspace` setting gives each their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SandboxKey {
    pub tenant: TenantId,
    pub agent: AgentId,
    pub workspace: hermes_core::Workspace,
}

impl SandboxKey {
    /// The agent's shared workspace (everyone's, under the agent's `workspace = agent`).
    pub fn shared(tenant: TenantId, agent: AgentId) -> Self {
        Self { tenant, agent, workspace: hermes_core::Workspace::Shared }
    }
}

/// A command to run in a sandbox.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    /// Run by `/bin/sh -c`.
    pub command: String,
    /// Working directory inside the sandbox; the workspace when `None`.
    pub workdir: Option<String>,
    pub timeout: Duration,
    /// Added to the sandbox's environment for this command.
    pub env: BTreeMap<String, String>,
}

/// What a command did.
#[derive(Debug, Clone)]
pub struct ExecOutput {
    /// `None` when it was killed before exiting on its own.
    pub exit_code: Option<i64>,
    /// stdout and stderr interleaved as produced (lossy UTF-8, capped at [`RAW_OUTPUT_CAP`]).
    pub output: String,
    pub timed_out: bool,
    pub duration: Duration,
}

/// Raw output kept per command before the tool layer shortens it for the model.
pub const RAW_OUTPUT_CAP: usize = 2 * 1024 * 1024;

/// The path of the agent's persistent workspace inside every sandbox.
pub const WORKSPACE: &str = "/workspace";

/// The uid and gid stdio MCP servers run as in a sandbox (sandboxd's `--mcp-as`): not the
/// agent's (1000), so its programs can neither read the servers' secrets nor change their code.
pub const MCP_USER: u32 = 1001;
/// Where each backend mounts the fresh directory sandboxd makes that user's home in.
pub use hermes_sandbox_proto::MCP_HOME_MOUNT;

/// A sandbox failure (not a failing command: that is an [`ExecOutput`] with a non-zero code).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("sandbox backend unavailable: {0}")]
    Unavailable(String),
    #[error("sandbox image {0:?} is missing; build it with deploy/sandbox/build-image.sh")]
    ImageMissing(String),
    #[error("sandbox error: {0}")]
    Backend(String),
    /// The daemon refused the request (a missing file, a path outside the workspace, ...):
    /// the model can correct it.
    #[error("{0}")]
    Refused(String),
}

pub type Result<T, E = SandboxError> = std::result::Result<T, E>;

/// A sandbox backend.
pub trait Sandboxes: Send + Sync {
    /// A client for `key`'s sandbox, creating, starting or recreating the sandbox as needed
    /// and waiting until its daemon answers.
    fn open(&self, key: SandboxKey) -> BoxFuture<'_, Result<SandboxClient>>;

    /// A client for `key`'s sandbox only if it runs already (context files are never a
    /// reason to start one).
    fn running(&self, key: SandboxKey) -> BoxFuture<'_, Result<Option<SandboxClient>>>;

    /// Forgets a client whose connection failed, so the next `open` checks the sandbox.
    fn invalidate(&self, key: SandboxKey);

    /// Serves the sandboxes' egress through `handler` (see [`EgressHandler`]); without one,
    /// a sandbox has no way out.
    fn set_egress(&self, _handler: Arc<dyn EgressHandler>) {}

    /// Takes each new sandbox's image and limits from `source` (see [`spec`]); without one,
    /// every sandbox gets the configured defaults.
    fn set_specs(&self, _source: Arc<dyn SpecSource>) {}

    /// Removes this worker's view of sandboxes idle for `sandbox.idle_seconds` (see each
    /// backend); returns how many went.
    fn reap_idle(&self) -> BoxFuture<'_, Result<usize>>;

    /// Answers when the backend is reachable.
    fn ping(&self) -> BoxFuture<'_, Result<()>>;

    /// The ids of the tenants this backend keeps anything of (a sandbox, running or not, or a
    /// workspace), as its names and labels say, for the sweep that removes what deleted tenants
    /// left ([`sweep_deleted`]). Only the store turns them into tenants.
    fn tenants_kept(&self) -> BoxFuture<'_, Result<Vec<uuid::Uuid>>>;

    /// Removes every sandbox and workspace of `tenant`, whose deletion has begun; returns how
    /// many objects went.
    fn remove_tenant(&self, tenant: TenantId) -> BoxFuture<'_, Result<usize>>;

    /// The sandboxes the last [`Sandboxes::reap_idle`] kept, with how busy each was then (for
    /// the operators' view; see `hermes_core::census`).
    fn census(&self) -> Vec<LiveSandbox> {
        Vec::new()
    }
}

/// The worker's side of sandbox egress. Programs in a sandbox use `HTTP(S)_PROXY`
/// (sandboxd's relay on the sandbox's loopback), and each connection arrives here tagged with
/// the sandbox it came from: on a unix socket in the sandbox's socket directory (Docker,
/// local), or over an `Egress` call on the worker's connection to the daemon (Kubernetes,
/// [`egress_tunnel`]).
pub trait EgressHandler: Send + Sync {
    fn serve(&self, key: SandboxKey, stream: EgressConnection) -> BoxFuture<'static, ()>;
}

/// A byte stream a sandbox's program opened to its proxy port.
pub trait EgressStream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static> EgressStream for T {}
pub type EgressConnection = Box<dyn EgressStream>;

/// What every sandbox's environment says about egress: sandboxd's relay is the proxy, and
/// the sandbox's own loopback is reached directly. Node's `fetch` reads the variables only when
/// `NODE_USE_ENV_PROXY` is set (Node 22.21 and 24 on; older Node's `fetch` has no way out).
pub const PROXY_ENV: [(&str, &str); 7] = [
    ("HTTP_PROXY", "http://127.0.0.1:3128"),
    ("HTTPS_PROXY", "http://127.0.0.1:3128"),
    ("http_proxy", "http://127.0.0.1:3128"),
    ("https_proxy", "http://127.0.0.1:3128"),
    ("NO_PROXY", "localhost,127.0.0.1,::1"),
    ("no_proxy", "localhost,127.0.0.1,::1"),
    ("NODE_USE_ENV_PROXY", "1"),
];

/// The header the egress proxy puts on its own refusals (value: why), so a program behind it
/// (the browser tools) can tell "the sandbox's rules refused this" from a server's 403.
pub const EGRESS_REFUSED_HEADER: &str = "X-Hermes-Egress-Refused";

/// The configured backend (`sandbox.backend`) if it is one of this crate's (docker, local),
/// for tools such as the sandbox bench; `hermesd` chooses among all three itself.
pub async fn connect(cfg: &hermes_config::SandboxConfig) -> Result<Arc<dyn Sandboxes>> {
    match cfg.backend {
        SandboxBackend::Docker => Ok(Arc::new(docker::DockerSandboxes::connect(cfg).await?)),
        SandboxBackend::Local => Ok(Arc::new(local::LocalSandboxes::new(cfg)?)),
        SandboxBackend::Kubernetes => {
            Err(SandboxError::Unavailable("the kubernetes backend is hermes-sandbox-kube's".into()))
        }
    }
}

/// The tenants deleted or being deleted (the store answers).
pub trait DeletedTenants: Send + Sync {
    fn deleted(&self) -> BoxFuture<'_, Result<Vec<TenantId>, String>>;
}

/// Removes the sandboxes and workspaces of every deleted tenant `sandboxes` keeps anything
/// of; returns how many objects went. A backend or store that does not answer is tried again
/// on the next sweep.
pub async fn sweep_deleted(sandboxes: &dyn Sandboxes, tenants: &dyn DeletedTenants) -> Result<usize> {
    let kept = sandboxes.tenants_kept().await?;
    if kept.is_empty() {
        return Ok(0);
    }
    let deleted = tenants.deleted().await.map_err(SandboxError::Unavailable)?;
    let mut removed = 0;
    for tenant in deleted.into_iter().filter(|t| kept.contains(&t.as_uuid())) {
        let n = sandboxes.remove_tenant(tenant).await?;
        tracing::info!(%tenant, objects = n, "removed a deleted tenant's sandboxes and workspaces");
        removed += n;
    }
    Ok(removed)
}

/// Runs [`Sandboxes::reap_idle`], then [`sweep_deleted`], every `every` until `cancel`.
pub async fn run_reaper(
    sandboxes: Arc<dyn Sandboxes>,
    deleted: Arc<dyn DeletedTenants>,
    every: Duration,
    cancel: CancellationToken,
) {
    let mut tick = tokio::time::interval(every);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = tick.tick() => {
                if let Err(e) = sandboxes.reap_idle().await {
                    tracing::warn!(error = %e, "sandbox reaper failed");
                }
                if let Err(e) = sweep_deleted(sandboxes.as_ref(), deleted.as_ref()).await {
                    tracing::warn!(error = %e, "cannot remove deleted tenants' sandboxes yet");
                }
            }
        }
    }
}

/// Runs a command in `key`'s sandbox. A daemon that cannot be reached before the command
/// started is looked for once more (the sandbox may have been removed or restarted).
pub async fn exec(
    sandboxes: &dyn Sandboxes,
    key: SandboxKey,
    request: ExecRequest,
    on_output: &mut (dyn FnMut(&[u8]) + Send),
) -> Result<ExecOutput> {
    let client = sandboxes.open(key).await?;
    match client.exec(request.clone(), on_output).await {
        Err(SandboxError::Unavailable(why)) => {
            tracing::info!(error = %why, "sandbox unreachable before the command started; reopening it");
            sandboxes.invalidate(key);
            sandboxes.open(key).await?.exec(request, on_output).await
        }
        other => other,
    }
}
