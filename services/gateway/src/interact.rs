//! Questions a chat turn waits on: a dangerous command's approval or a clarifying question.
//! The question reaches the chat through the outbox (a trigger queues it when the turn parks),
//! with buttons where the platform has them. The answer comes back as a button press, as
//! `/approve [session|always]` or `/deny`, or, for a question, as the next plain message in that
//! conversation; the turn then resumes on any worker.

use serde_json::Value;

use hermes_core::{ApprovalChoice, InteractionAnswer, InteractionId, InteractionKind, PendingInteraction, Platform};
use hermes_queue::SessionWork;
use hermes_store::{Accepted, Channel, StoreError};

use crate::Gateway;
use crate::error::IngestError;
use crate::incoming::{ButtonPress, ChatKind, Incoming};
use crate::route::route_for;

/// Buttons under a message: rows of (label, data).
pub type Buttons = Vec<Vec<(String, String)>>;

/// The button of each choice.
fn label(choice: ApprovalChoice) -> &'static str {
    match choice {
        ApprovalChoice::Once => "Allow once",
        ApprovalChoice::Session => "Allow for this chat",
        ApprovalChoice::Always => "Always allow",
        ApprovalChoice::Deny => "Deny",
    }
}

/// What the person reads, and the buttons to answer with.
pub fn question(interaction: &PendingInteraction) -> (String, Buttons) {
    let id = interaction.id.as_uuid().simple();
    let prompt = &interaction.prompt;
    if interaction.kind == InteractionKind::Approval {
        let text = format!(
            "⚠️ I want to run a command that needs your approval:\n\n{}\n\nReason: {}\n\nAnswer with the buttons, or \
             /approve, /approve session, /approve always or /deny.",
            prompt["command"].as_str().unwrap_or_default(),
            prompt["description"].as_str().unwrap_or("it may be destructive"),
        );
        let buttons = ApprovalChoice::ALL
            .iter()
            .map(|choice| vec![(label(*choice).to_owned(), format!("ia:{id}:{choice}"))])
            .collect();
        return (text, buttons);
    }
    let mut text = format!("❓ {}", prompt["question"].as_str().unwrap_or_default());
    let choices: Vec<&str> =
        prompt["choices"].as_array().map_or(Vec::new(), |c| c.iter().filter_map(Value::as_str).collect());
    let buttons =
        choices.iter().enumerate().map(|(n, choice)| vec![((*choice).to_owned(), format!("ic:{id}:{n}"))]).collect();
    if choices.is_empty() {
        text.push_str("\n\nReply with your answer.");
    }
    (text, buttons)
}

/// The approval choice in `/approve`, `/approve session`, `/approve always`, `/deny`.
fn approval_command(text: &str) -> Option<ApprovalChoice> {
    let mut words = text.split_whitespace();
    match (words.next()?, words.next()) {
        ("/approve", None) => Some(ApprovalChoice::Once),
        ("/approve", Some(choice)) => choice.parse().ok().filter(|c: &ApprovalChoice| c.allows()),
        ("/deny", _) => Some(ApprovalChoice::Deny),
        _ => None,
    }
}

pub fn is_approval_command(text: &str) -> bool {
    matches!(text.split_whitespace().next(), Some("/approve" | "/deny"))
}

/// Who may answer: the person in a direct chat; in a group, the channel's admins (nobody,
/// when it names none).
fn may_answer(channel: &Channel, msg: &Incoming) -> bool {
    msg.kind == ChatKind::Direct || channel.is_admin(&msg.user_id)
}

/// Why `choice` is refused to the person who chose it: `always` allows the command's patterns
/// for the whole agent, every chat and every user, so only an admin may grant it.
fn refused_choice(channel: &Channel, msg: &Incoming, choice: ApprovalChoice) -> Option<&'static str> {
    (choice == ApprovalChoice::Always && !channel.is_admin(&msg.user_id))
        .then_some("Only this bot's admins can always allow a command. Use /approve (once) or /approve session.")
}

impl Gateway {
    /// The question the conversation of `msg` waits on, if any.
    async fn pending(&self, channel: &Channel, msg: &Incoming) -> Result<Option<PendingInteraction>, IngestError> {
        let route = route_for(channel, msg);
        let err = |e: StoreError| IngestError::new(e.to_string());
        let Some((session, _)) =
            self.store.conversations().route_state(channel.tenant_id, &route).await.map_err(err)?
        else {
            return Ok(None);
        };
        self.store.turns().session_pending_interaction(channel.tenant_id, session).await.map_err(err)
    }

    /// Stores an answer and resumes the turn; the text to show, or why not.
    async fn answer(
        &self,
        channel: &Channel,
        id: InteractionId,
        answer: &InteractionAnswer,
    ) -> Result<String, IngestError> {
        match self.store.turns().answer_interaction(channel.tenant_id, id, answer, None).await {
            Ok(answered) => {
                let work = SessionWork { tenant_id: channel.tenant_id, session_id: answered.session_id };
                if let Err(e) = self.broker.publish_work(&work).await {
                    tracing::warn!(error = %e, "cannot signal the resumed turn; the reaper will pick it up");
                }
                Ok(match answer {
                    InteractionAnswer::Approval { choice: ApprovalChoice::Deny } => "🚫 Denied.",
                    InteractionAnswer::Approval { choice: ApprovalChoice::Session } => {
                        "✅ Allowed for this conversation."
                    }
                    InteractionAnswer::Approval { choice: ApprovalChoice::Always } => "✅ Always allowed.",
                    InteractionAnswer::Approval { choice: ApprovalChoice::Once } => "✅ Allowed once.",
                    InteractionAnswer::Text { .. } | InteractionAnswer::Expired { .. } => "👍 Got it.",
                }
                .to_owned())
            }
            Err(StoreError::NotFound | StoreError::Conflict(_)) => {
                Ok("That question was already answered or expired.".into())
            }
            Err(e) => Err(IngestError::new(e.to_string())),
        }
    }

    /// `/approve` and `/deny`: the reply to show.
    pub(crate) async fn approval_reply(&self, channel: &Channel, msg: &Incoming) -> Result<String, IngestError> {
        let Some(choice) = approval_command(&msg.text) else {
            return Ok("Use /approve, /approve session, /approve always or /deny.".into());
        };
        if !may_answer(channel, msg) {
            return Ok("Only this bot's admins can answer approvals here.".into());
        }
        if let Some(why) = refused_choice(channel, msg, choice) {
            return Ok(why.into());
        }
        match self.pending(channel, msg).await? {
            Some(p) if p.kind == InteractionKind::Approval => {
                self.answer(channel, p.id, &InteractionAnswer::Approval { choice }).await
            }
            _ => Ok("Nothing is waiting for an approval here.".into()),
        }
    }

    /// Whether `msg` answers a clarifying question its conversation waits on.
    pub(crate) async fn clarify_reply_ready(&self, channel: &Channel, msg: &Incoming) -> Result<bool, IngestError> {
        Ok(
            matches!(self.pending(channel, msg).await?, Some(p) if p.kind == InteractionKind::Clarify && may_answer(channel, msg)),
        )
    }

    /// A plain message that answers a waiting clarifying question: the reply to show, or
    /// `None` when nothing waits (the message then goes to the agent).
    pub(crate) async fn clarify_reply(&self, channel: &Channel, msg: &Incoming) -> Result<Option<String>, IngestError> {
        match self.pending(channel, msg).await? {
            Some(p) if p.kind == InteractionKind::Clarify && may_answer(channel, msg) => {
                let text: String = msg.text.chars().take(4_000).collect();
                self.answer(channel, p.id, &InteractionAnswer::text(text)).await.map(Some)
            }
            _ => Ok(None),
        }
    }

    /// A button press: answer the question it belongs to, once.
    pub async fn press(&self, channel: &Channel, press: ButtonPress, raw: &Value) -> Result<(), IngestError> {
        let msg = press.as_incoming();
        if crate::access::decide(channel, &msg) != crate::access::Verdict::Allow {
            return Ok(());
        }
        let source = format!("{}:{}", channel.platform, channel.id);
        let accepted = self
            .store
            .chat()
            .accept_inbound(channel.tenant_id, &source, &press.dedupe_key, raw, None, None)
            .await
            .map_err(|e| IngestError::new(e.to_string()))?;
        if accepted == Accepted::Duplicate {
            return Ok(());
        }
        let mut parts = press.data.splitn(3, ':');
        let (kind, id, value) = (parts.next(), parts.next(), parts.next());
        let id = id.and_then(|hex| uuid::Uuid::try_parse(hex).ok().map(InteractionId::from_uuid));
        let choice = value.and_then(|v| v.parse::<ApprovalChoice>().ok());
        let refusal = choice.and_then(|c| refused_choice(channel, &msg, c));
        let shown = match (kind, id, value, choice, refusal) {
            _ if !may_answer(channel, &msg) => "Only this bot's admins can answer approvals here.".to_owned(),
            (Some("ia"), Some(_), _, _, Some(why)) => why.to_owned(),
            (Some("ia"), Some(id), _, Some(choice), None) => {
                self.answer(channel, id, &InteractionAnswer::Approval { choice }).await?
            }
            (Some("ic"), Some(id), Some(n), _, _) => {
                let choice = self.choice_text(channel, id, n).await;
                match choice {
                    Some(text) => self.answer(channel, id, &InteractionAnswer::text(text)).await?,
                    None => "That question was already answered or expired.".to_owned(),
                }
            }
            _ => "This button is no longer valid.".to_owned(),
        };
        self.acknowledge(channel, &press, &shown).await;
        Ok(())
    }

    /// Shows a press's outcome: the question's message now says what was answered, and by whom.
    async fn acknowledge(&self, channel: &Channel, press: &ButtonPress, shown: &str) {
        let who = press.user_name.as_deref().map(|u| format!(" (@{u})")).unwrap_or_default();
        let text = format!("{shown}{who}");
        match channel.platform {
            Platform::Telegram => {
                let Ok(api) = self.telegram(channel) else { return };
                if let Err(e) = api.answer_callback(&press.callback_id, shown).await {
                    tracing::debug!(error = %e, "cannot acknowledge a button press");
                }
                if let Some(id) = press.message_ref.as_deref().and_then(|m| m.parse::<i64>().ok())
                    && let Err(e) = api.edit_text(&press.chat_id, id, &text).await
                {
                    tracing::debug!(error = %e, "cannot update the question's message");
                }
            }
            Platform::Slack => {
                let Ok(api) = self.slack(channel) else { return };
                if let Some(ts) = press.message_ref.as_deref()
                    && let Err(e) = api.update_message(&press.chat_id, ts, &text).await
                {
                    tracing::debug!(error = %e, "cannot update the question's message");
                }
            }
            Platform::Wecom => {}
        }
    }

    /// The text of choice `n` of a pending question.
    async fn choice_text(&self, channel: &Channel, id: InteractionId, n: &str) -> Option<String> {
        let (pending, _) = self.store.turns().pending_interaction(channel.tenant_id, id).await.ok()?;
        let n: usize = n.parse().ok()?;
        pending.prompt["choices"].as_array()?.get(n)?.as_str().map(str::to_owned)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn approvals_get_four_buttons_and_questions_one_per_choice() {
        let pending = |v: Value| -> PendingInteraction { serde_json::from_value(v).unwrap() };
        let approval = pending(json!({"id": "01a22bf1-557b-757a-8e05-1d51814a8f1d", "kind": "approval",
            "prompt": {"command": "rm -rf build", "description": "recursive delete"}, "expires_at": "2030-01-01T00:00:00Z"}));
        let (text, buttons) = question(&approval);
        assert!(text.contains("rm -rf build") && text.contains("recursive delete"));
        assert_eq!(buttons.len(), 4);
        assert_eq!(buttons[3][0].1, "ia:01a22bf1557b757a8e051d51814a8f1d:deny");
        assert!(buttons.iter().all(|row| row[0].1.len() <= 64), "Telegram's callback data limit");
        let clarify = pending(json!({"id": "01a22bf1-557b-757a-8e05-1d51814a8f1d", "kind": "clarify",
            "prompt": {"question": "Which env?", "choices": ["staging", "prod"]}, "expires_at": "2030-01-01T00:00:00Z"}));
        let (text, buttons) = question(&clarify);
        assert_eq!(text, "❓ Which env?");
        assert_eq!(buttons[1][0], ("prod".to_owned(), "ic:01a22bf1557b757a8e051d51814a8f1d:1".to_owned()));
    }

    #[test]
    fn approval_commands_name_a_choice() {
        assert_eq!(approval_command("/approve"), Some(ApprovalChoice::Once));
        assert_eq!(approval_command("/approve session"), Some(ApprovalChoice::Session));
        assert_eq!(approval_command("/approve always"), Some(ApprovalChoice::Always));
        assert_eq!(approval_command("/deny"), Some(ApprovalChoice::Deny));
        assert_eq!(approval_command("/approve forever"), None);
    }
}
