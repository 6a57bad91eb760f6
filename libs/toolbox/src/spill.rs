//! Oversized tool results go into the agent's own sandbox, where `read_file` pages through
//! them (upstream's `/tmp/hermes-results/{call id}.txt`).

use std::sync::Arc;

use futures_util::future::BoxFuture;

use hermes_sandbox::proto::WriteFileRequest;
use hermes_sandbox::{SandboxKey, Sandboxes, status_error};
use hermes_tools::{ResultSpill, ToolCtx, ToolError};

use crate::sandbox_error;

/// The sandbox directory of saved results (tmpfs: gone when the sandbox is reaped).
pub const RESULTS_DIR: &str = "/tmp/hermes-results";

pub struct SandboxSpill {
    sandboxes: Arc<dyn Sandboxes>,
}

impl SandboxSpill {
    pub fn new(sandboxes: Arc<dyn Sandboxes>) -> Self {
        Self { sandboxes }
    }
}

/// A call id as a file name: the model's ids are opaque strings.
fn file_name(call_id: &str) -> String {
    let safe: String =
        call_id.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-')).take(96).collect();
    if safe.is_empty() { "result".to_owned() } else { safe }
}

impl ResultSpill for SandboxSpill {
    fn save<'a>(&'a self, ctx: &'a ToolCtx, text: &'a str) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(self.write(ctx, format!("{}.txt", file_name(&ctx.call_id)), text))
    }

    fn save_as<'a>(
        &'a self,
        ctx: &'a ToolCtx,
        name: &'a str,
        text: &'a str,
    ) -> BoxFuture<'a, Result<String, ToolError>> {
        let (stem, ext) = name.rsplit_once('.').unwrap_or((name, "txt"));
        Box::pin(self.write(ctx, format!("{}.{}", file_name(stem), file_name(ext)), text))
    }
}

impl SandboxSpill {
    async fn write(&self, ctx: &ToolCtx, name: String, text: &str) -> Result<String, ToolError> {
        let key = SandboxKey { tenant: ctx.tenant_id, agent: ctx.agent_id, workspace: ctx.workspace };
        let client = self.sandboxes.open(key).await.map_err(sandbox_error)?;
        let path = format!("{RESULTS_DIR}/{name}");
        let request = WriteFileRequest { path: path.clone(), content: text.to_owned() };
        client.grpc().write_file(request).await.map_err(|s| sandbox_error(status_error(s)))?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::file_name;

    #[test]
    fn call_ids_become_safe_file_names() {
        assert_eq!(file_name("call_abc-123"), "call_abc-123");
        assert_eq!(file_name("../../etc/passwd"), "etcpasswd");
        assert_eq!(file_name("///"), "result");
    }
}
