//! Files a chat answer hands over: its `MEDIA:<path>` lines (`hermes_core::media`) name files
//! in the agent's workspace, read here when the turn ends (before its answer reaches the
//! outbox) and kept with the turn for the gateway to send. A file that cannot be read keeps
//! its reason, which the chat is told. Links (`MEDIA:https://…`) stay links. Files a tool
//! kept with the turn itself (a generated image) are not read again, and one the answer
//! forgot to name is handed over anyway.

use hermes_core::media::{mime_for, split_media};
use hermes_core::{SessionSource, TenantId};
use hermes_sandbox::proto::ReadBytesRequest;
use hermes_sandbox::{SandboxKey, status_error};
use hermes_store::ClaimedTurn;
use hermes_store::turn_files::TurnFile;

use crate::Runtime;

/// Where the files tools make (a generated image, spoken audio) are kept among a turn's
/// files (`MEDIA:generated/...`); such a file is handed over even when the answer forgets it.
pub(crate) const GENERATED_PREFIX: &str = "generated/";

/// The largest file handed to a chat (Telegram bots may upload 50 MB; Slack more).
const MAX_FILE_BYTES: u64 = 20 * 1024 * 1024;

/// Whether a session talks to a chat platform (its answers go through the gateway).
pub(crate) fn is_chat(source: SessionSource) -> bool {
    source.platform().is_some()
}

/// `content` with a `MEDIA:` line for each generated file it does not name.
fn with_generated(content: &str, named: &[String], kept: &[String]) -> String {
    let missing: Vec<&String> = kept.iter().filter(|t| t.starts_with(GENERATED_PREFIX) && !named.contains(t)).collect();
    if missing.is_empty() {
        return content.to_owned();
    }
    let lines: Vec<String> = missing.iter().map(|t| format!("MEDIA:{t}")).collect();
    format!("{}\n\n{}", content.trim_end(), lines.join("\n")).trim_start().to_owned()
}

/// Reads and keeps the workspace files `content` names; returns `content` with the files
/// tools kept for the turn named too.
pub(crate) async fn collect(rt: &Runtime, tenant: TenantId, turn: &ClaimedTurn, content: String) -> String {
    let (_, targets) = split_media(&content);
    let kept: Vec<String> = match rt.ctx.store.turns().turn_files(tenant, turn.turn_id).await {
        Ok(files) => files.into_iter().filter(|f| f.data.is_ok()).map(|f| f.target).collect(),
        Err(e) => {
            tracing::warn!(error = %e, "cannot list the turn's files");
            Vec::new()
        }
    };
    let content = with_generated(&content, &targets, &kept);
    let files: Vec<String> = targets
        .into_iter()
        .filter(|t| !t.starts_with("http://") && !t.starts_with("https://") && !kept.contains(t))
        .collect();
    if files.is_empty() {
        return content;
    }
    let key = SandboxKey { tenant, agent: turn.agent_id, workspace: turn.workspace() };
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
        if let Err(e) = rt.ctx.store.turns().save_turn_file(tenant, turn.turn_id, &file).await {
            tracing::warn!(error = %e, "cannot keep a file of the answer; the chat gets the text only");
        }
    }
    content
}

#[cfg(test)]
mod tests {
    use super::with_generated;

    #[test]
    fn a_generated_image_the_answer_forgot_is_handed_over_and_one_it_named_is_not_repeated() {
        let kept = vec!["generated/image-a.png".to_owned(), "report.pdf".to_owned()];
        assert_eq!(with_generated("Here it is.", &[], &kept), "Here it is.\n\nMEDIA:generated/image-a.png");
        let named = vec!["generated/image-a.png".to_owned()];
        let answer = "Here.\nMEDIA:generated/image-a.png";
        assert_eq!(with_generated(answer, &named, &kept), answer);
        assert_eq!(with_generated("", &[], &kept), "MEDIA:generated/image-a.png");
    }
}
