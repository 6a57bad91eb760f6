//! Chat commands about the conversations of a chat and their cost: `/status`, `/title`,
//! `/sessions`, `/resume N` and `/usage` (see [`crate::commands`] for the rest).

use hermes_store::{Channel, Route, StoreError, UsageGroup};

use crate::Gateway;
use crate::error::IngestError;

/// How many earlier conversations `/sessions` lists.
const LISTED_SESSIONS: i64 = 5;

pub(crate) const NO_CONVERSATION: &str = "No conversation yet: just write to me.";

fn err(e: StoreError) -> IngestError {
    IngestError::new(e.to_string())
}

impl Gateway {
    /// `/status`: the conversation's title, size, age and whether the agent is at work.
    pub(crate) async fn status(&self, channel: &Channel, route: &Route) -> Result<String, IngestError> {
        let tenant = channel.tenant_id;
        let Some((session, _)) = self.store.conversations().route_state(tenant, route).await.map_err(err)? else {
            return Ok(NO_CONVERSATION.into());
        };
        let info = self.store.conversations().session_info(tenant, None, session).await.map_err(err)?;
        let (busy, open) = self.store.chat().route_busy_turns(tenant, route).await.map_err(err)?;
        Ok(format!(
            "Conversation “{}”: {} messages since {}. {}",
            info.title.as_deref().unwrap_or("untitled"),
            info.message_count,
            info.created_at.format("%Y-%m-%d %H:%M UTC"),
            match (busy.len(), open) {
                (0, 0) => "Idle.".to_owned(),
                (_, n) => format!("Working ({n} message(s) in progress)."),
            }
        ))
    }

    /// `/title TEXT` renames the conversation.
    pub(crate) async fn title(&self, channel: &Channel, route: &Route, text: &str) -> Result<String, IngestError> {
        let tenant = channel.tenant_id;
        let title: String = text.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(120).collect();
        let Some((session, _)) = self.store.conversations().route_state(tenant, route).await.map_err(err)? else {
            return Ok(NO_CONVERSATION.into());
        };
        if title.is_empty() {
            return Ok("Use /title followed by the new title.".into());
        }
        self.store.conversations().set_session_title(tenant, session, Some(&title)).await.map_err(err)?;
        Ok(format!("Renamed to “{title}”."))
    }

    /// `/sessions`: the chat's recent conversations, numbered for `/resume N`.
    pub(crate) async fn sessions(&self, channel: &Channel, route: &Route) -> Result<String, IngestError> {
        let tenant = channel.tenant_id;
        let list = self.store.conversations().route_sessions(tenant, route, LISTED_SESSIONS).await.map_err(err)?;
        if list.is_empty() {
            return Ok("No conversations yet: just write to me.".into());
        }
        let current = self.store.conversations().route_state(tenant, route).await.map_err(err)?.map(|(s, _)| s);
        let mut text = String::from("Your recent conversations (continue one with /resume N):");
        for (n, s) in list.iter().enumerate() {
            let mark = if Some(s.id) == current { " ← current" } else { "" };
            text.push_str(&format!(
                "\n{}. {} ({} messages, {}){mark}",
                n + 1,
                s.title.as_deref().unwrap_or("untitled"),
                s.message_count,
                s.updated_at.format("%Y-%m-%d %H:%M UTC")
            ));
        }
        Ok(text)
    }

    /// `/resume N`: back to the Nth conversation `/sessions` lists (what runs now stops).
    pub(crate) async fn resume(
        &self,
        channel: &Channel,
        route: &Route,
        n: Option<&str>,
    ) -> Result<String, IngestError> {
        let tenant = channel.tenant_id;
        let list = self.store.conversations().route_sessions(tenant, route, LISTED_SESSIONS).await.map_err(err)?;
        let pick = n.and_then(|n| n.parse::<usize>().ok()).and_then(|n| list.get(n.checked_sub(1)?));
        let Some(pick) = pick else {
            return Ok("Use /resume N with a number from /sessions.".into());
        };
        self.stop_route(channel, route).await?;
        self.store.conversations().resume_route(tenant, route, pick.id).await.map_err(err)?;
        Ok(format!("Back to “{}”.", pick.title.as_deref().unwrap_or("untitled")))
    }

    /// `/usage`: today's model calls, tokens and cost of this channel's agent.
    pub(crate) async fn usage(&self, channel: &Channel) -> Result<String, IngestError> {
        let today = chrono::Utc::now().date_naive();
        let lines = self
            .store
            .tenancy()
            .usage_report(channel.tenant_id, Some(channel.agent_id), UsageGroup::Day, today, today)
            .await
            .map_err(err)?;
        let mut today = hermes_store::UsageTotals::default();
        for line in &lines {
            today.add(&line.usage);
        }
        let (calls, tokens, cost) = (today.calls, today.prompt_tokens + today.completion_tokens, today.cost_usd);
        Ok(format!("Today this assistant made {calls} model calls with {tokens} tokens, costing ${cost:.4}."))
    }
}
