//! The sandbox tools (terminal, files, code, approvals); the text helpers they share with
//! mcp and web are `hermes_tools::text`.

pub mod approval;
mod clarify;
mod code;
pub mod danger;
mod files;
mod process;
mod spill;
mod terminal;

use std::sync::Arc;

use hermes_core::ToolsetName;
use hermes_sandbox::{SandboxError, SandboxKey, Sandboxes};
use hermes_tools::{ToolCtx, ToolError, ToolRegistry};

pub use clarify::ClarifyTool;
pub use code::{CODE_TOOLS, ExecuteCode, module_source};
pub use files::{FileTools, Patch, ReadFile, SearchFiles, UnpackArchive, WriteFile};
pub use process::ProcessTool;
pub use spill::{RESULTS_DIR, SandboxSpill};
pub use terminal::{Foreground, MAX_OUTPUT_CHARS, TerminalTool};

/// Told when a session's background processes start and when they have all finished, so
/// processes the sandbox keeps are visible outside it (the worker marks them in Redis for the
/// session reset rule), and asked to watch one that should wake the agent.
pub trait BackgroundActivity: Send + Sync {
    fn started(&self, ctx: &ToolCtx) -> futures_util::future::BoxFuture<'static, ()>;
    fn all_finished(&self, ctx: &ToolCtx) -> futures_util::future::BoxFuture<'static, ()>;
    /// Watches `watch`: a turn wakes the agent when the process ends or prints a pattern.
    /// `Err`: why no notice will come.
    fn watch(&self, ctx: &ToolCtx, watch: ProcessWatch)
    -> futures_util::future::BoxFuture<'static, Result<(), String>>;
}

/// A background process `terminal` was asked to watch (upstream's `notify_on_complete` and
/// `watch_patterns`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessWatch {
    pub process_id: String,
    pub command: String,
    /// Plain texts: a line of output holding one wakes the agent.
    pub patterns: Vec<String>,
    pub notify_on_complete: bool,
}

/// Every built-in tool, before an agent's toolsets narrow it down.
pub fn builtin_registry(
    sandboxes: Arc<dyn Sandboxes>,
    default_timeout_secs: u64,
    activity: Option<Arc<dyn BackgroundActivity>>,
) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    registry.set_spill(Arc::new(SandboxSpill::new(sandboxes.clone())));

    registry.register(Arc::new(ProcessTool::new(sandboxes.clone()).with_activity(activity.clone())));
    registry.register(Arc::new(ClarifyTool));
    let files = FileTools::new(sandboxes.clone());
    let terminal =
        TerminalTool::new(sandboxes, default_timeout_secs).with_checkpoints(files.clone()).with_activity(activity);
    registry.register(Arc::new(terminal));
    registry.register(Arc::new(ReadFile(files.clone())));
    registry.register(Arc::new(WriteFile(files.clone())));
    registry.register(Arc::new(Patch(files.clone())));
    registry.register(Arc::new(UnpackArchive(files.clone())));
    registry.register(Arc::new(SearchFiles(files)));
    registry
}

/// Starts `key`'s sandbox in the background when the agent's toolsets will want it, so a cold
/// start (150 ms on Docker, seconds for a Kubernetes pod) overlaps the model's first answer
/// instead of delaying the first tool call. A failure is left for that call to meet and report.
pub fn prewarm(sandboxes: Arc<dyn Sandboxes>, key: SandboxKey, toolsets: &[String]) {
    if !ToolsetName::SANDBOXED.iter().any(|t| t.enabled_in(toolsets)) {
        return;
    }
    hermes_telemetry::tasks::spawn("toolbox_server", async move {
        if let Err(e) = sandboxes.open(key).await {
            tracing::debug!(error = %e, "sandbox prewarm failed; the first tool call will try again");
        }
    });
}

/// A sandbox failure as the model sees it: a refusal it can fix, or an outage.
pub(crate) fn sandbox_error(e: SandboxError) -> ToolError {
    match e {
        SandboxError::Refused(msg) => ToolError::RespondToModel(msg),
        other => ToolError::Unavailable(other.to_string()),
    }
}
