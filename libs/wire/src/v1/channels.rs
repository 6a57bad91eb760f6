//! Chat bots bound to agents, as `/v1/channels` and the admin console show them (their
//! credentials never).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use hermes_core::{AgentId, BusyMode, ChannelMode, ChannelStatus, DmPolicy, GroupPolicy, GroupSessions, Platform};

/// A chat bot bound to an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Channel {
    #[schema(value_type = String, format = "uuid")]
    pub id: hermes_core::ChannelId,
    #[schema(value_type = String, format = "uuid")]
    pub agent_id: AgentId,
    /// `telegram`, `slack` or `wecom`.
    #[schema(value_type = String)]
    pub platform: Platform,
    /// `webhook`, `poll` (Telegram), `socket` (Slack Socket Mode) or `websocket` (WeCom AI bot).
    #[schema(value_type = String)]
    pub mode: ChannelMode,
    pub api_base: String,
    pub bot_username: Option<String>,
    /// `open`, `allowlist`, `pairing` or `disabled`.
    #[schema(value_type = String)]
    pub dm_policy: DmPolicy,
    /// `mention`, `open` or `disabled`.
    #[schema(value_type = String)]
    pub group_policy: GroupPolicy,
    pub allow_users: Vec<String>,
    pub allow_chats: Vec<String>,
    pub admins: Vec<String>,
    /// `interrupt`, `queue` or `steer`.
    #[schema(value_type = String)]
    pub busy_mode: BusyMode,
    pub streaming: bool,
    /// `chat` or `user`.
    #[schema(value_type = String)]
    pub group_sessions: GroupSessions,
    /// Chat commands only the channel's admins may use.
    pub admin_commands: Vec<String>,
    /// Tools at work are shown in one edited message (Telegram, Slack).
    pub tool_progress: bool,
    /// The model's reasoning is shown above each answer (off by default: it is scratch work,
    /// not the answer).
    pub show_reasoning: bool,
    /// Where deliveries to the bare platform go (`chat` or `chat:thread`).
    pub home_chat: Option<String>,
    /// The only toolsets of the agent's each kind of chat may use: `direct`, `groups`, and
    /// `chats` by chat id (the most specific wins); absent: all the agent's.
    #[schema(value_type = Object)]
    pub toolsets: hermes_core::audience::ChatToolsets,
    /// `active`, or `blocked` when the platform refuses the bot.
    #[schema(value_type = String)]
    pub status: ChannelStatus,
    pub status_reason: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// A channel just bound, with what is left to set up on the platform's side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChannelBound {
    #[serde(flatten)]
    pub channel: Channel,
    /// A webhook URL to paste, a socket to enable, ...
    pub setup: String,
}

/// A pairing code a person got from a bot, waiting for an admin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct PairingRequest {
    pub code: String,
    /// The person's id on the platform.
    pub user_id: String,
    pub user_name: Option<String>,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// A bot to bind: the platform's credentials for its mode, and who may talk to it. Values of
/// closed sets are names (`telegram`, `pairing`, ...), checked by the use case so an unknown
/// one is answered with the allowed ones.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelRequest {
    /// The agent (by name; the admin API takes an id too).
    pub agent: String,
    /// `telegram`, `slack` or `wecom`.
    pub platform: String,
    /// `poll`, `webhook`, `socket`, ... (each platform has its default).
    pub mode: Option<String>,
    /// The bot token (Telegram, Slack `xoxb-`), or the WeCom callback Token.
    pub token: Option<String>,
    pub signing_secret: Option<String>,
    pub app_token: Option<String>,
    pub corp_id: Option<String>,
    pub wecom_agent_id: Option<i64>,
    pub secret: Option<String>,
    pub aes_key: Option<String>,
    pub bot_id: Option<String>,
    /// Webhook modes: where the platform reaches the gateway.
    pub public_url: Option<String>,
    pub dm_policy: Option<String>,
    pub group_policy: Option<String>,
    #[serde(default)]
    pub allow_users: Vec<String>,
    #[serde(default)]
    pub allow_chats: Vec<String>,
    #[serde(default)]
    pub admins: Vec<String>,
}

/// Changes to who may talk to a bot and how it behaves; absent fields stay as they are, and a
/// list given replaces the old one.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChannelChanges {
    pub dm_policy: Option<String>,
    pub group_policy: Option<String>,
    pub allow_users: Option<Vec<String>>,
    pub allow_chats: Option<Vec<String>>,
    pub admins: Option<Vec<String>>,
    pub busy_mode: Option<String>,
    pub streaming: Option<bool>,
    pub group_sessions: Option<String>,
    /// Chat commands (with or without their `/`) only the channel's admins may use.
    pub admin_commands: Option<Vec<String>>,
    pub tool_progress: Option<bool>,
    /// Show the model's reasoning above each answer.
    pub show_reasoning: Option<bool>,
    /// `chat` or `chat:thread` where deliveries to the bare platform go; "" clears it.
    pub home_chat: Option<String>,
    /// Replaces the rules of which toolsets each kind of chat may use (`{}` lifts them):
    /// `{"groups": ["web", "memory"], "chats": {"C0TEAM": ["terminal", "web"]}}`.
    #[schema(value_type = Option<Object>)]
    pub toolsets: Option<hermes_core::audience::ChatToolsets>,
}
