//! Sandboxes: where an agent's shell and file tools run. One sandbox per tenant-agent,
//! created on first use, reused by later turns, removed when idle; its workspace volume stays.
//!
//! Backends implement [`Sandboxes`]; the Docker backend ([`docker::DockerSandboxes`]) is
//! the first. Kubernetes and local (bubblewrap) backends and the in-sandbox daemon follow.

pub mod docker;
mod output;

use std::time::Duration;

use futures_util::future::BoxFuture;

use hermes_core::{AgentId, TenantId};

pub use output::cap_middle;

/// Which sandbox: never shared between tenants or agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SandboxKey {
    pub tenant: TenantId,
    pub agent: AgentId,
}

/// A command to run in a sandbox.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    /// Run by `/bin/sh -c`.
    pub command: String,
    /// Working directory inside the sandbox; the workspace when `None`.
    pub workdir: Option<String>,
    pub timeout: Duration,
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

/// A sandbox failure (not a failing command: that is an [`ExecOutput`] with a non-zero code).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("sandbox backend unavailable: {0}")]
    Unavailable(String),
    #[error("sandbox image {0:?} is missing; build it with deploy/sandbox/build-image.sh")]
    ImageMissing(String),
    #[error("sandbox error: {0}")]
    Backend(String),
}

pub type Result<T, E = SandboxError> = std::result::Result<T, E>;

/// A sandbox backend.
pub trait Sandboxes: Send + Sync {
    /// Runs a command in `key`'s sandbox, creating or recreating the sandbox as needed.
    fn exec<'a>(&'a self, key: SandboxKey, request: ExecRequest) -> BoxFuture<'a, Result<ExecOutput>>;

    /// Answers when the backend is reachable.
    fn ping(&self) -> BoxFuture<'_, Result<()>>;

    /// Whether `key`'s sandbox exists and runs (reads never create one).
    fn is_running(&self, key: SandboxKey) -> BoxFuture<'_, Result<bool>>;

    /// The first of `paths` that is a workspace file, with its text (at most `max` bytes), in
    /// one round trip; `None` when none is, or the sandbox is not running. Never creates a
    /// sandbox.
    fn read_first_file<'a>(
        &'a self,
        key: SandboxKey,
        paths: &'a [String],
        max: usize,
    ) -> BoxFuture<'a, Result<Option<(String, String)>>>;

    /// The names in a workspace directory; empty when it or the sandbox does not exist.
    fn list_dir<'a>(&'a self, key: SandboxKey, path: &'a str) -> BoxFuture<'a, Result<Vec<String>>>;
}
