//! Built-in tool implementations. Only the worker links this crate.

mod terminal;

use std::sync::Arc;

use hermes_sandbox::Sandboxes;
use hermes_tools::ToolRegistry;

pub use terminal::{MAX_OUTPUT_CHARS, TerminalTool};

/// Every built-in tool, before an agent's toolsets narrow it down.
pub fn builtin_registry(sandboxes: Arc<dyn Sandboxes>, default_timeout_secs: u64) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    registry.register(Arc::new(TerminalTool::new(sandboxes, default_timeout_secs)));
    registry
}
