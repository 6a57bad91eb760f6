//! What a reply to a chat is, and where it goes: the one shape of `turns.reply_to`,
//! `outbox.destination` and `outbox.payload`. The gateway (a chat's message), the scheduler and
//! webhook triggers (delivery targets) and the worker (notices, `send_message`) write them; the
//! store copies them into the outbox when a turn ends or parks; the gateway's outbox sender
//! reads them back. A store test renders what the store writes and parses it with these types.

use serde::{Deserialize, Deserializer, Serialize};

use crate::{PendingInteraction, Platform, TurnOutcome};

/// One chat of one channel that a reply goes to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Destination {
    pub platform: Platform,
    pub channel_id: crate::ChannelId,
    /// The platform's chat (Telegram chat id, Slack channel, WeCom user or chat id).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub chat_id: String,
    /// A Slack thread, a Telegram topic.
    #[serde(default)]
    pub thread: Option<String>,
    /// The platform message this answers (Telegram quotes it).
    #[serde(default)]
    pub reply_to: Option<i64>,
    /// A WeCom AI bot's request id: the first part of the answer is sent under it.
    #[serde(default)]
    pub reply_token: Option<String>,
    /// The cron job whose run this delivers (its answer is headed with the job's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<CronLabel>,
    /// The webhook whose turn this delivers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<HookLabel>,
    /// Further chats the same answer goes to (a comma list of delivery targets); the store
    /// writes one outbox row for each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<Destination>,
    /// The answer is spoken too (the chat's `/voice` mode asked for it when the message came).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub voice_reply: bool,
    /// The chat is a group or channel, not a direct message (its bot's toolset rules differ).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub group: bool,
}

impl Destination {
    /// A chat of a channel, answering nothing in particular.
    pub fn chat(
        platform: Platform,
        channel_id: crate::ChannelId,
        chat_id: impl Into<String>,
        thread: Option<String>,
    ) -> Self {
        Destination {
            platform,
            channel_id,
            chat_id: chat_id.into(),
            thread,
            reply_to: None,
            reply_token: None,
            cron: None,
            webhook: None,
            also: Vec::new(),
            voice_reply: false,
            group: false,
        }
    }

    /// Whether two destinations are the same chat (thread included) of the same channel.
    pub fn same_chat(&self, other: &Destination) -> bool {
        self.channel_id == other.channel_id && self.chat_id == other.chat_id && self.thread == other.thread
    }

    /// An automated run's answer (cron or webhook), as opposed to a reply to a person.
    pub fn is_automated(&self) -> bool {
        self.cron.is_some() || self.webhook.is_some()
    }

    /// The same chat, labelled with the run it delivers.
    pub fn labelled(mut self, label: &RunLabel) -> Self {
        match label {
            RunLabel::Cron(cron) => self.cron = Some(cron.clone()),
            RunLabel::Webhook(hook) => self.webhook = Some(hook.clone()),
        }
        self
    }

    /// This chat only, without the further chats of a delivery.
    pub fn alone(&self) -> Self {
        Destination { also: Vec::new(), ..self.clone() }
    }
}

/// What an unattended run's answer is headed with.
#[derive(Debug, Clone, PartialEq)]
pub enum RunLabel {
    Cron(CronLabel),
    Webhook(HookLabel),
}

/// Names the cron job a delivery comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CronLabel {
    pub job_id: crate::JobId,
    pub name: String,
}

/// Names the webhook a delivery comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookLabel {
    pub id: crate::WebhookId,
    pub name: String,
}

/// What an outbox row sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OutboxPayload {
    /// A plain message: a notice, a command's reply, `send_message`.
    Text { text: String },
    /// A turn's answer, written by the store when the turn ends.
    Answer {
        status: AnswerStatus,
        #[serde(default)]
        outcome: Option<TurnOutcome>,
    },
    /// A question a parked turn waits on, written by the store when it parks.
    Interaction { interaction: PendingInteraction },
}

impl OutboxPayload {
    pub fn text(text: impl Into<String>) -> Self {
        OutboxPayload::Text { text: text.into() }
    }
}

/// How the turn whose answer this is ended (only these two answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerStatus {
    Completed,
    Failed,
}

/// One target of a `deliver` list (cron jobs, webhooks): `local` (stored only), `origin` (the
/// chat the job was made in), `all` (the home chat of each of the agent's bots) or
/// `platform[:chat[:thread]]` (a bare platform: its home chat). A chat may be named as upstream
/// does, `platform:#channel-name`: Slack takes `#name` as it is, Telegram a public channel as
/// `@name`; WeCom has no names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryTarget {
    Local,
    Origin,
    All,
    Chat { platform: Platform, chat: Option<String>, thread: Option<String> },
}

/// A `deliver` list names something that is none of the targets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "cannot deliver to `{0}`: use local, origin, all, or telegram|slack|wecom[:chat[:thread]] (comma-separated; \
     a chat by name as slack:#name or telegram:#name)"
)]
pub struct UnknownTarget(pub String);

impl std::str::FromStr for DeliveryTarget {
    type Err = UnknownTarget;

    fn from_str(target: &str) -> Result<Self, UnknownTarget> {
        match target {
            "local" => Ok(DeliveryTarget::Local),
            "origin" => Ok(DeliveryTarget::Origin),
            "all" => Ok(DeliveryTarget::All),
            other => {
                let unknown = || UnknownTarget(other.to_owned());
                let mut parts = other.splitn(3, ':');
                let platform: Platform = parts.next().unwrap_or_default().parse().map_err(|_| unknown())?;
                let mut named = || parts.next().filter(|p| !p.is_empty()).map(str::to_owned);
                let (chat, thread) = (named(), named());
                let chat = match chat.as_deref().and_then(|c| c.strip_prefix('#')) {
                    None => chat,
                    Some(name) if !valid_channel_name(name) => return Err(unknown()),
                    Some(name) => Some(match platform {
                        Platform::Slack => format!("#{name}"),
                        Platform::Telegram => format!("@{name}"),
                        Platform::Wecom => return Err(unknown()),
                    }),
                };
                Ok(DeliveryTarget::Chat { platform, chat, thread })
            }
        }
    }
}

/// A channel's name as Slack and Telegram have them: letters, digits, `-`, `_` and `.`.
fn valid_channel_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 80 && name.chars().all(|c| c.is_alphanumeric() || "-_.".contains(c))
}

impl DeliveryTarget {
    /// The targets of a comma-separated list (empty items are skipped).
    pub fn list(deliver: &str) -> Result<Vec<DeliveryTarget>, UnknownTarget> {
        deliver.split(',').map(str::trim).filter(|t| !t.is_empty()).map(str::parse).collect()
    }
}

fn null_as_empty<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_chat_destination_reads_back_as_written() {
        let id = crate::ChannelId::new();
        let mut dest = Destination::chat(Platform::Slack, id, "C1", Some("171.5".into()));
        dest.also.push(Destination::chat(Platform::Telegram, id, "42", None));
        let back: Destination = serde_json::from_value(serde_json::to_value(&dest).unwrap()).unwrap();
        assert_eq!(back, dest);
    }

    #[test]
    fn a_destination_without_a_chat_reads_as_empty() {
        let id = uuid::Uuid::now_v7();
        let dest: Destination =
            serde_json::from_value(json!({"platform": "telegram", "channel_id": id, "chat_id": null})).unwrap();
        assert_eq!(dest.chat_id, "");
        assert!(!dest.is_automated());
    }

    #[test]
    fn delivery_lists_name_local_origin_or_chats() {
        let chat = |platform, chat: Option<&str>, thread: Option<&str>| DeliveryTarget::Chat {
            platform,
            chat: chat.map(str::to_owned),
            thread: thread.map(str::to_owned),
        };
        assert_eq!(
            DeliveryTarget::list("local, origin,telegram, slack:C1:171.5,wecom:u1,").unwrap(),
            [
                DeliveryTarget::Local,
                DeliveryTarget::Origin,
                chat(Platform::Telegram, None, None),
                chat(Platform::Slack, Some("C1"), Some("171.5")),
                chat(Platform::Wecom, Some("u1"), None),
            ]
        );
        assert_eq!(DeliveryTarget::list("local,fax:123"), Err(UnknownTarget("fax:123".into())));
        assert_eq!(
            DeliveryTarget::list("all, slack:#ops-alerts, telegram:#release_notes").unwrap(),
            [
                DeliveryTarget::All,
                chat(Platform::Slack, Some("#ops-alerts"), None),
                chat(Platform::Telegram, Some("@release_notes"), None),
            ],
            "upstream's names: Slack's as they are, a Telegram channel by its public name"
        );
        for bad in ["wecom:#team", "slack:#", "slack:#bad name", "telegram:#a/b"] {
            assert!(DeliveryTarget::list(bad).is_err(), "{bad}");
        }
        assert_eq!(DeliveryTarget::list("").unwrap(), []);
    }

    #[test]
    fn payload_kinds_use_their_wire_names() {
        assert_eq!(serde_json::to_value(OutboxPayload::text("hi")).unwrap(), json!({"kind": "text", "text": "hi"}));
        let failed: OutboxPayload =
            serde_json::from_value(json!({"kind": "answer", "status": "failed", "outcome": null})).unwrap();
        assert_eq!(failed, OutboxPayload::Answer { status: AnswerStatus::Failed, outcome: None });
        assert!(serde_json::from_value::<OutboxPayload>(json!({"kind": "fax"})).is_err());
    }
}
