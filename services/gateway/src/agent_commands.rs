//! Chat commands about the agent and the conversation's history: `/undo`, `/model`,
//! `/memory` and `/skills` (see [`crate::commands`] for the rest).

use hermes_store::{Channel, Route, StoreError};

use crate::Gateway;
use crate::error::IngestError;

/// How many skills `/skills` lists.
const LISTED_SKILLS: usize = 30;

fn err(e: StoreError) -> IngestError {
    IngestError::new(e.to_string())
}

impl Gateway {
    /// `/undo`: the conversation's last message and the answer to it are taken back.
    pub(crate) async fn undo(&self, channel: &Channel, route: &Route) -> Result<String, IngestError> {
        let Some((session, _)) = self.store.conversations().route_state(channel.tenant_id, route).await.map_err(err)?
        else {
            return Ok("Nothing to undo yet.".into());
        };
        Ok(match self.store.conversations().undo_last_exchange(channel.tenant_id, session).await {
            Ok(0) => "Nothing to undo yet.".into(),
            Ok(n) => format!("Took back your last message and what followed it ({n} messages)."),
            Err(StoreError::Busy(_)) => "I'm still working on it: /stop first, then /undo.".into(),
            Err(e) => return Err(err(e)),
        })
    }

    /// `/model` shows the agent's model; `/model NAME` switches it (for everyone who talks to
    /// this agent, as upstream's `/model` does).
    pub(crate) async fn model_command(
        &self,
        channel: &Channel,
        msg: &crate::incoming::Incoming,
        name: Option<&str>,
    ) -> Result<String, IngestError> {
        let tenant = channel.tenant_id;
        let Some(name) = name else {
            let agent = self.store.agents().agent(tenant, channel.agent_id).await.map_err(err)?;
            let fallbacks: Vec<&str> = agent.fallbacks.iter().map(|f| f.model.as_str()).collect();
            let mut text = format!("I'm using {}.", agent.model);
            if !fallbacks.is_empty() {
                text.push_str(&format!(" If it fails: {}.", fallbacks.join(", ")));
            }
            text.push_str(" Switch with /model NAME.");
            return Ok(text);
        };
        let mut tx = self.store.audited(tenant, msg.audit(channel.platform)).await.map_err(err)?;
        Ok(match tx.set_agent_model(channel.agent_id, name).await {
            Ok(old) => {
                let change = hermes_store::admin::Change::new("agent.model_switched", "agent", channel.agent_id)
                    .before(serde_json::json!({ "model": old }))
                    .after(serde_json::json!({ "model": name }));
                tx.commit(change).await.map_err(err)?;
                format!("Switched from {old} to {name}. The next message uses it.")
            }
            Err(StoreError::Invalid(why)) => format!("Cannot switch: {why}."),
            Err(e) => return Err(err(e)),
        })
    }

    /// `/memory`: what the agent keeps in its memory, and what it knows about this person.
    pub(crate) async fn memory_command(&self, channel: &Channel, route: &Route) -> Result<String, IngestError> {
        let snapshot = self.store.agents().memory_snapshot(channel.tenant_id, channel.agent_id, &route.user_key).await;
        let snapshot = snapshot.map_err(err)?;
        if snapshot.memory.is_empty() && snapshot.user.is_empty() {
            return Ok("I have not written anything down yet.".into());
        }
        let list = |title: &str, entries: &[String]| {
            if entries.is_empty() {
                return String::new();
            }
            let lines: Vec<String> = entries.iter().map(|e| format!("• {e}")).collect();
            format!("{title}\n{}\n", lines.join("\n"))
        };
        let text = [list("My notes:", &snapshot.memory), list("About you:", &snapshot.user)].concat();
        Ok(text.trim_end().to_owned())
    }

    /// `/skills`: the skills the agent can use, each also a command (`/skill-name`).
    pub(crate) async fn skills_command(&self, channel: &Channel) -> Result<String, IngestError> {
        let skills = self.store.agents().visible_skills(channel.tenant_id, channel.agent_id).await.map_err(err)?;
        let active: Vec<_> = skills.iter().filter(|s| s.state != hermes_core::SkillState::Archived).collect();
        if active.is_empty() {
            return Ok("I have no skills yet.".into());
        }
        let mut text = format!("I have {} skills; run one with /name:", active.len());
        for s in active.iter().take(LISTED_SKILLS) {
            let about: String = s.skill.description.chars().take(80).collect();
            text.push_str(&format!("\n/{} - {about}", s.skill.name));
        }
        if active.len() > LISTED_SKILLS {
            text.push_str(&format!("\n…and {} more.", active.len() - LISTED_SKILLS));
        }
        Ok(text)
    }
}
