//! Work alongside the conversation: `/background TEXT` (`/bg`, `/btw`) asks TEXT in a
//! separate, fresh conversation whose answer comes to this chat when it is done, while this
//! one goes on; `/agents` (`/tasks`) lists the background children the agent delegated here
//! (`delegate_task(background=true)`), which `/stop` cancels with the running turn.

use serde_json::Value;

use hermes_core::commands::ChatCommand;
use hermes_store::{Accepted, Channel, Route, StoreError, TurnTarget};

use crate::Gateway;
use crate::error::IngestError;
use crate::incoming::Incoming;
use crate::route::{route_for, source_of};

/// `/background` alone.
pub(crate) const BACKGROUND_USAGE: &str = "Write /background and a request: I work on it in a separate conversation \
                                           and answer here when done, while we go on talking.";

const NOTHING_RUNNING: &str = "No background tasks are running here.";

/// `/background /command`: refused, so no command gets past the channel's gating this way.
pub(crate) const NO_COMMANDS: &str = "/background takes a request in words; send a command on its own.";

/// Background requests one person may have at work at once in a chat's agent.
const MAX_OPEN: i64 = 3;

fn err(e: StoreError) -> IngestError {
    IngestError::new(e.to_string())
}

/// The request in `/background TEXT` (or an alias), if the message is one.
pub(crate) fn background_request(text: &str) -> Option<&str> {
    let (spec, rest) = hermes_core::commands::parse(text)?;
    (spec.command == ChatCommand::Background && !rest.trim().is_empty()).then_some(rest)
}

impl Gateway {
    /// `/background TEXT`: a turn of a new session of this chat's person, answering here; the
    /// chat's own conversation is left as it is. Stored with the message, so a redelivery
    /// starts nothing more.
    pub(crate) async fn background(
        &self,
        channel: &Channel,
        msg: Incoming,
        raw: &Value,
        request: String,
    ) -> Result<(), IngestError> {
        let tenant = channel.tenant_id;
        let route = route_for(channel, &msg);
        // A redelivered message is answered once below; a new one past the cap is told why.
        let open = self.store.conversations().side_turns_open(tenant, &route).await.map_err(err)?;
        if open >= MAX_OPEN {
            let why = format!("{open} background requests of yours are still at work; ask again when one is done.");
            return self.refuse(channel, &msg, raw, why).await;
        }
        let target = TurnTarget::New { source: route.source, user_key: route.user_key.clone(), history: Vec::new() };
        let (turn, transcriptions) = self.turn_of(channel, &msg, &route, target, request, None).await;
        let source = source_of(channel);
        let accepted =
            self.store.chat().accept_inbound_alone(tenant, &source, &msg.dedupe_key, raw, turn).await.map_err(err)?;
        let Accepted::Turn { session, turn } = accepted else { return Ok(()) };
        self.meter(tenant, Some((session, turn)), transcriptions).await;
        tracing::info!(channel.id = %channel.id, turn.id = %turn, "background request became a turn");
        self.signal_after(tenant, session, None);
        let ack = "Working on it in the background: the answer will come here. We can go on meanwhile.";
        self.reply(channel, &msg, ack.to_owned()).await
    }

    /// `/agents`: the background children at work for this conversation, with how far each got.
    pub(crate) async fn agents(&self, channel: &Channel, route: &Route) -> Result<String, IngestError> {
        let tenant = channel.tenant_id;
        let Some((session, _)) = self.store.conversations().route_state(tenant, route).await.map_err(err)? else {
            return Ok(NOTHING_RUNNING.into());
        };
        let running = self.store.turns().running_children(tenant, session).await.map_err(err)?;
        if running.is_empty() {
            return Ok(NOTHING_RUNNING.into());
        }
        let now = chrono::Utc::now();
        let mut text = format!("{} background task(s) at work:", running.len());
        for child in running {
            let goal: String = child.goal.chars().take(100).collect();
            let minutes = (now - child.started_at).num_minutes().max(0);
            let last = child.last_tool.map(|t| format!(", last: {t}")).unwrap_or_default();
            text.push_str(&format!(
                "\n• {}/{} {goal} — {minutes} min, {} tool call(s){last}",
                child.position, child.tasks, child.tool_calls
            ));
        }
        text.push_str("\n/stop cancels them.");
        Ok(text)
    }

    /// Cancels the background children of the chat's conversation; how many were at work.
    pub(crate) async fn stop_children(&self, channel: &Channel, route: &Route) -> Result<usize, IngestError> {
        let tenant = channel.tenant_id;
        let Some((session, _)) = self.store.conversations().route_state(tenant, route).await.map_err(err)? else {
            return Ok(0);
        };
        let turns = self.store.turns().cancel_children(tenant, session).await.map_err(err)?;
        for turn in &turns {
            self.stop_turn(tenant, *turn).await.map_err(err)?;
        }
        Ok(turns.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_background_request_is_the_text_after_the_command_or_an_alias() {
        assert_eq!(background_request("/background check the logs"), Some("check the logs"));
        assert_eq!(background_request("/bg check"), Some("check"));
        assert_eq!(background_request("/btw what is 2+2"), Some("what is 2+2"));
        assert_eq!(background_request("/background"), None, "alone: the gateway explains it");
        assert_eq!(background_request("/backgrounds x"), None);
        assert_eq!(background_request("check /background x"), None);
    }
}
