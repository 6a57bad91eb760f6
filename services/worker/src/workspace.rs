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
    async fn available(&self) -> bool {
        match self.sandboxes.is_running(self.key).await {
            Ok(running) => running,
            Err(e) => {
                tracing::warn!(error = %e, "cannot tell whether the workspace runs; no context file");
                false
            }
        }
    }

    async fn read(&self, path: &str) -> Option<String> {
        self.read_first(&[path.to_owned()]).await.map(|(_, text)| text)
    }

    async fn read_first(&self, paths: &[String]) -> Option<(String, String)> {
        match self.sandboxes.read_first_file(self.key, paths, READ_LIMIT).await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read context files");
                None
            }
        }
    }

    async fn list(&self, dir: &str) -> Vec<String> {
        self.sandboxes.list_dir(self.key, dir).await.unwrap_or_default()
    }
}
