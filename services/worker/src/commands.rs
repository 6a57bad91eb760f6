//! Slash commands a user sends instead of a message, answered by the worker without the
//! model and kept out of the transcript: `/rollback` lists the workspace's checkpoints,
//! `/rollback <N>` (1 = newest) or `/rollback <checkpoint id>` restores one; `/compress`
//! summarises the conversation now; `/reload-mcp` closes the agent's MCP sessions so the next
//! message reconnects and lists their tools afresh.

use chrono::{TimeZone, Utc};

use hermes_core::commands::{ChatCommand, RunsIn};
use hermes_sandbox::proto::{ListCheckpointsRequest, RestoreRequest};
use hermes_sandbox::{SandboxKey, Sandboxes, status_error};

/// The command in `text` if the worker answers it, with the rest of the text.
fn worker_command(text: &str) -> Option<(ChatCommand, &str)> {
    let (spec, rest) = hermes_core::commands::parse(text)?;
    (spec.runs_in == RunsIn::Worker).then_some((spec.command, rest))
}

/// Whether `text` is `/compress` alone (see [`compress`]).
pub(crate) fn is_compress(text: &str) -> bool {
    worker_command(text) == Some((ChatCommand::Compress, ""))
}

/// The reply to `text` if it is a command this worker answers before the turn is set up
/// (`/rollback`; `/compress` needs the turn's models, see [`compress`]).
pub(crate) async fn run(sandboxes: &dyn Sandboxes, key: SandboxKey, text: &str) -> Option<String> {
    let (ChatCommand::Rollback, rest) = worker_command(text)? else { return None };
    let arg = rest.split_whitespace().next();
    Some(match rollback(sandboxes, key, arg).await {
        Ok(reply) => reply,
        Err(e) => format!("Rollback failed: {e}"),
    })
}

/// The reply to `/reload-mcp`, when `text` is that.
pub(crate) fn reload_mcp(rt: &crate::Runtime, key: SandboxKey, text: &str) -> Option<String> {
    let (ChatCommand::ReloadMcp, _) = worker_command(text)? else { return None };
    let closed = rt.toolkit.mcp.as_ref().map_or(0, |servers| servers.forget_agent(key.tenant, key.agent));
    Some(format!(
        "Reloaded the MCP servers ({closed} session{} closed): your next message connects again and lists their tools afresh.",
        if closed == 1 { "" } else { "s" }
    ))
}

fn when(ms: i64) -> String {
    Utc.timestamp_millis_opt(ms).single().map_or_else(|| "?".into(), |t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
}

async fn rollback(sandboxes: &dyn Sandboxes, key: SandboxKey, arg: Option<&str>) -> Result<String, String> {
    let client = sandboxes.open(key).await.map_err(|e| e.to_string())?;
    let mut grpc = client.grpc();
    let list = grpc
        .list_checkpoints(ListCheckpointsRequest {})
        .await
        .map_err(|s| status_error(s).to_string())?
        .into_inner()
        .checkpoints;
    let Some(arg) = arg else {
        if list.is_empty() {
            return Ok("No checkpoints yet. One is taken before the first file change of each turn.".into());
        }
        let mut out = String::from("Checkpoints (newest first); restore one with /rollback <number>:\n");
        for (n, cp) in list.iter().enumerate() {
            out.push_str(&format!(
                "{}. {} - {} ({} files) [{}]\n",
                n + 1,
                when(cp.created_at_ms),
                cp.reason,
                cp.files,
                cp.id
            ));
        }
        return Ok(out.trim_end().to_owned());
    };
    let id = match arg.parse::<usize>() {
        Ok(n) if n >= 1 && n <= list.len() => list[n - 1].id.clone(),
        Ok(_) => return Err(format!("there is no checkpoint {arg}; /rollback lists them")),
        Err(_) => arg.to_owned(),
    };
    let done = grpc.restore(RestoreRequest { id }).await.map_err(|s| status_error(s).to_string())?.into_inner();
    let cp = done.checkpoint.unwrap_or_default();
    Ok(format!(
        "Restored the workspace to {} ({}, {}): {} files restored, {} removed.",
        cp.id,
        cp.reason,
        when(cp.created_at_ms),
        done.restored,
        done.removed
    ))
}

/// `/compress`: the conversation so far is summarised now, as it would be when it fills the
/// context, and goes on in the compacted child session.
pub(crate) async fn compress(
    models: &crate::models::Models,
    prompt: Option<String>,
    history: &[hermes_core::ChatMessage],
    journal: &mut crate::journal::StoreJournal,
) -> hermes_agent::TurnEnd {
    let reply = |text: String| {
        hermes_agent::TurnEnd::Finished(hermes_core::TurnOutcome {
            content: text,
            finish_reason: hermes_core::FinishReason::Stop,
            usage: hermes_core::Usage::default(),
            error: None,
            error_code: None,
            session_id: None,
        })
    };
    let Some(prompt) = prompt.filter(|_| !history.is_empty()) else {
        return reply("Nothing to compress yet.".into());
    };
    let mut messages = Vec::with_capacity(history.len() + 1);
    messages.push(hermes_core::ChatMessage::system(prompt));
    messages.extend(history.iter().cloned());
    let before = history.len();
    let engine = models.context_engine();
    match hermes_agent::compact_now(&engine, journal, &mut messages).await {
        Ok(true) => reply(format!(
            "Compressed the conversation: {before} messages became {}. We go on from the summary.",
            messages.len().saturating_sub(1)
        )),
        Ok(false) => reply("Nothing to compress yet: the conversation is still short.".into()),
        Err(end) => end,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worker_takes_rollback_and_compress_alone() {
        assert_eq!(worker_command("/rollback 2"), Some((ChatCommand::Rollback, "2")));
        assert!(is_compress(" /compress "));
        assert!(!is_compress("/compress the middle part"), "a message for the model");
        assert_eq!(worker_command("/new"), None, "the gateway's");
        assert_eq!(worker_command("/my-skill"), None);
    }
}
