//! Files a chat answer hands over: its `MEDIA:<path>` lines (`hermes_core::media`) name files
//! in the agent's workspace, read here when the turn ends (before its answer reaches the
//! outbox) and kept with the turn for the gateway to send. A file that cannot be read keeps
//! its reason, which the chat is told. Links (`MEDIA:https://…`) stay links.

use hermes_core::media::{mime_for, split_media};
use hermes_core::{SessionSource, TenantId};
use hermes_sandbox::proto::ReadBytesRequest;
use hermes_sandbox::{SandboxKey, status_error};
use hermes_store::ClaimedTurn;
use hermes_store::turn_files::TurnFile;

use crate::Runtime;

/// The largest file handed to a chat (Telegram bots may upload 50 MB; Slack more).
const MAX_FILE_BYTES: u64 = 20 * 1024 * 1024;

/// Whether a session talks to a chat platform (its answers go through the gateway).
pub(crate) fn is_chat(source: SessionSource) -> bool {
    source.platform().is_some()
}

/// Reads and keeps the workspace files `content` names.
pub(crate) async fn collect(rt: &Runtime, tenant: TenantId, turn: &ClaimedTurn, content: &str) {
    let (_, targets) = split_media(content);
    let files: Vec<String> =
        targets.into_iter().filter(|t| !t.starts_with("http://") && !t.starts_with("https://")).collect();
    if files.is_empty() {
        return;
    }
    let key = SandboxKey { tenant, agent: turn.agent_id };
    let client = rt.ctx.sandboxes.open(key).await;
    for target in files {
        let name = target.rsplit('/').next().unwrap_or(&target).to_owned();
        let data = match &client {
            Ok(client) => client
                .grpc()
                .read_bytes(ReadBytesRequest { path: target.clone(), max_bytes: MAX_FILE_BYTES })
                .await
                .map(|r| r.into_inner().data)
                .map_err(|s| status_error(s).to_string()),
            Err(e) => Err(format!("the workspace is not reachable: {e}")),
        };
        let file = TurnFile { mime: mime_for(&name).to_owned(), name, target, data };
        if let Err(e) = rt.ctx.store.save_turn_file(tenant, turn.turn_id, &file).await {
            tracing::warn!(error = %e, "cannot keep a file of the answer; the chat gets the text only");
        }
    }
}
