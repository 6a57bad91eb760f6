//! The agent's workspace as the context-file discovery sees it (through the sandbox).

use std::sync::Arc;

use hermes_agent::context_files::WorkspaceFiles;
use hermes_sandbox::{SandboxKey, Sandboxes};

/// Files are read up to this size, then cut to the context-file limit (head and tail).
const READ_LIMIT: usize = 256 * 1024;

pub(crate) struct SandboxFiles {
    pub sandboxes: Arc<dyn Sandboxes>,
    pub key: SandboxKey,
}

impl WorkspaceFiles for SandboxFiles {
    async fn read(&self, path: &str) -> Option<String> {
        match self.sandboxes.read_file(self.key, path, READ_LIMIT).await {
            Ok(text) => text,
            Err(e) => {
                tracing::warn!(error = %e, path, "cannot read a context file");
                None
            }
        }
    }

    async fn list(&self, dir: &str) -> Vec<String> {
        self.sandboxes.list_dir(self.key, dir).await.unwrap_or_default()
    }
}
