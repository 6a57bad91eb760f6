//! Built-in tool implementations. Only the worker links this crate.

pub mod approval;
mod clarify;
mod code;
pub mod danger;
mod files;
mod process;
mod spill;
mod terminal;
pub mod text;

use std::sync::Arc;

use hermes_sandbox::{SandboxError, Sandboxes};
use hermes_tools::{ToolError, ToolRegistry};

pub use clarify::ClarifyTool;
pub use code::{CODE_TOOLS, ExecuteCode, module_source};
pub use files::{FileTools, Patch, ReadFile, SearchFiles, WriteFile};
pub use process::ProcessTool;
pub use spill::{RESULTS_DIR, SandboxSpill};
pub use terminal::{Foreground, MAX_OUTPUT_CHARS, TerminalTool};

/// Every built-in tool, before an agent's toolsets narrow it down.
pub fn builtin_registry(sandboxes: Arc<dyn Sandboxes>, default_timeout_secs: u64) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    registry.set_spill(Arc::new(SandboxSpill::new(sandboxes.clone())));

    registry.register(Arc::new(ProcessTool::new(sandboxes.clone())));
    registry.register(Arc::new(ClarifyTool));
    let files = FileTools::new(sandboxes.clone());
    let terminal = TerminalTool::new(sandboxes, default_timeout_secs).with_checkpoints(files.clone());
    registry.register(Arc::new(terminal));
    registry.register(Arc::new(ReadFile(files.clone())));
    registry.register(Arc::new(WriteFile(files.clone())));
    registry.register(Arc::new(Patch(files.clone())));
    registry.register(Arc::new(SearchFiles(files)));
    registry
}

/// A sandbox failure as the model sees it: a refusal it can fix, or an outage.
pub(crate) fn sandbox_error(e: SandboxError) -> ToolError {
    match e {
        SandboxError::Refused(msg) => ToolError::RespondToModel(msg),
        other => ToolError::Unavailable(other.to_string()),
    }
}
