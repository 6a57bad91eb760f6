//! `/reasoning` and `/fast` (upstream's commands): what this conversation asks of the agent's
//! model, kept on its session over the agent's own settings, within what the agent allows
//! callers (`client_limits`: the most reasoning effort, by default the agent's own or `medium`;
//! whether priority processing).

use hermes_core::{ModelSettings, ReasoningEffort, SessionId};
use hermes_store::{Channel, Route};

use crate::Gateway;
use crate::conversation_commands::NO_CONVERSATION;
use crate::error::IngestError;

const EFFORTS: &str = "none, minimal, low, medium, high or xhigh (or default)";

fn err(e: hermes_store::StoreError) -> IngestError {
    IngestError::new(e.to_string())
}

/// The effort the conversation's turns run with, in words.
fn effort_here(agent: &hermes_store::Agent, own: &ModelSettings) -> String {
    let effort = agent.model_settings.overlaid(own).reasoning_effort;
    effort.map_or_else(|| "the model's default".to_owned(), |e| e.to_string())
}

impl Gateway {
    /// The route's session, its agent and what the session asks of the model so far.
    async fn conversation_settings(
        &self,
        channel: &Channel,
        route: &Route,
    ) -> Result<Option<(SessionId, hermes_store::Agent, ModelSettings)>, IngestError> {
        let tenant = channel.tenant_id;
        let Some((session, _)) = self.store.conversations().route_state(tenant, route).await.map_err(err)? else {
            return Ok(None);
        };
        let agent = self.store.agents().agent(tenant, channel.agent_id).await.map_err(err)?;
        let own = self.store.conversations().session_model_settings(tenant, session).await.map_err(err)?;
        Ok(Some((session, agent, own)))
    }

    /// `/reasoning [effort|default]`: shows or sets how hard the model thinks here.
    pub(crate) async fn reasoning_command(
        &self,
        channel: &Channel,
        route: &Route,
        arg: Option<&str>,
    ) -> Result<String, IngestError> {
        let Some((session, agent, mut own)) = self.conversation_settings(channel, route).await? else {
            return Ok(NO_CONVERSATION.into());
        };
        let Some(arg) = arg.map(str::to_ascii_lowercase) else {
            let now = effort_here(&agent, &own);
            return Ok(format!("Reasoning effort here: {now}. Change it with /reasoning and one of {EFFORTS}."));
        };
        if arg == "default" {
            own.reasoning_effort = None;
        } else {
            let Ok(effort) = arg.parse::<ReasoningEffort>() else {
                return Ok(format!("I don't know the effort “{arg}”: use {EFFORTS}."));
            };
            let most = agent.client_limits.effort_ceiling(&agent.model_settings);
            if effort > most {
                return Ok(format!("This bot allows at most “{most}” here."));
            }
            own.reasoning_effort = Some(effort);
        }
        self.store.conversations().set_session_model_settings(channel.tenant_id, session, &own).await.map_err(err)?;
        let now = effort_here(&agent, &own);
        Ok(format!("Reasoning effort for this conversation: {now}. The next message uses it."))
    }

    /// `/fast [on|off]`: shows, or turns on or off, priority processing here (bare: toggles).
    pub(crate) async fn fast_command(
        &self,
        channel: &Channel,
        route: &Route,
        arg: Option<&str>,
    ) -> Result<String, IngestError> {
        let Some((session, agent, mut own)) = self.conversation_settings(channel, route).await? else {
            return Ok(NO_CONVERSATION.into());
        };
        let now = agent.model_settings.overlaid(&own).fast == Some(true);
        let wanted = match arg.map(str::to_ascii_lowercase).as_deref() {
            None => !now,
            Some("on") => true,
            Some("off") => false,
            Some("status") => {
                return Ok(format!("Priority processing here is {}.", if now { "on" } else { "off" }));
            }
            Some(other) => return Ok(format!("Use /fast on or /fast off (not “{other}”).")),
        };
        if wanted && !agent.client_limits.fast_allowed(&agent.model_settings) {
            return Ok("This bot's admins have not allowed priority processing (it costs more).".into());
        }
        own.fast = Some(wanted);
        self.store.conversations().set_session_model_settings(channel.tenant_id, session, &own).await.map_err(err)?;
        Ok(if wanted {
            format!("Priority processing is on for this conversation, where {} offers it (billed higher).", agent.model)
        } else {
            "Priority processing is off for this conversation.".into()
        })
    }
}
