//! The agent's workspace as the context-file discovery sees it: through the sandbox's daemon,
//! and only when the sandbox already runs.

use std::sync::Arc;

use hermes_agent::context_files::WorkspaceFiles;
use hermes_sandbox::proto::{ListDirRequest, ReadFirstRequest};
use hermes_sandbox::{SandboxClient, SandboxKey, Sandboxes};
use tokio::sync::OnceCell;

/// Files are read up to this size, then cut to the context-file limit (head and tail).
const READ_LIMIT: u64 = 256 * 1024;

pub(crate) struct SandboxFiles {
    pub sandboxes: Arc<dyn Sandboxes>,
    pub key: SandboxKey,
    /// The running sandbox's daemon, looked up once per discovery.
    pub client: OnceCell<Option<SandboxClient>>,
}

impl SandboxFiles {
    pub fn new(sandboxes: Arc<dyn Sandboxes>, key: SandboxKey) -> Self {
        Self { sandboxes, key, client: OnceCell::new() }
    }

    async fn client(&self) -> Option<&SandboxClient> {
        self.client
            .get_or_init(|| async {
                match self.sandboxes.running(self.key).await {
                    Ok(c) => c,
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot reach the workspace; no context file");
                        None
                    }
                }
            })
            .await
            .as_ref()
    }
}

impl WorkspaceFiles for SandboxFiles {
    async fn available(&self) -> bool {
        self.client().await.is_some()
    }

    async fn read(&self, path: &str) -> Option<String> {
        self.read_first(&[path.to_owned()]).await.map(|(_, text)| text)
    }

    async fn read_first(&self, paths: &[String]) -> Option<(String, String)> {
        let client = self.client().await?;
        let request = ReadFirstRequest { paths: paths.to_vec(), max_bytes: READ_LIMIT };
        match client.grpc().read_first(request).await {
            Ok(r) => {
                let r = r.into_inner();
                (!r.path.is_empty()).then_some((r.path, r.content))
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot read context files");
                None
            }
        }
    }

    async fn list(&self, dir: &str) -> Vec<String> {
        let Some(client) = self.client().await else { return Vec::new() };
        match client.grpc().list_dir(ListDirRequest { path: dir.to_owned() }).await {
            Ok(r) => r.into_inner().names,
            Err(_) => Vec::new(),
        }
    }
}
