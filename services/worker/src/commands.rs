//! Slash commands a user sends instead of a message, answered by the worker without the
//! model and kept out of the transcript: `/rollback` lists the workspace's checkpoints,
//! `/rollback <N>` (1 = newest) or `/rollback <checkpoint id>` restores one.

use chrono::{TimeZone, Utc};

use hermes_sandbox::proto::{ListCheckpointsRequest, RestoreRequest};
use hermes_sandbox::{SandboxKey, Sandboxes, status_error};

/// The reply to `text` if it is a command this worker answers.
pub(crate) async fn run(sandboxes: &dyn Sandboxes, key: SandboxKey, text: &str) -> Option<String> {
    let mut words = text.split_whitespace();
    if words.next()? != "/rollback" {
        return None;
    }
    let arg = words.next();
    Some(match rollback(sandboxes, key, arg).await {
        Ok(reply) => reply,
        Err(e) => format!("Rollback failed: {e}"),
    })
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
