//! Channels (migration 0017): an agent bound to a bot on a chat platform. The bot's
//! credentials are sealed at rest; a bot can be bound once in the whole installation.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgConnection;

use hermes_core::{
    AgentId, BusyMode, ChannelId, ChannelMode, ChannelStatus, DmPolicy, GroupPolicy, GroupSessions, Platform, TenantId,
};

use crate::admin::audited::tenant_writes;
use crate::{Result, SecretBox, StoreError, views::Chat};

/// A channel to create.
#[derive(Debug, Clone)]
pub struct NewChannel {
    pub agent_id: AgentId,
    pub platform: Platform,
    pub mode: ChannelMode,
    pub api_base: String,
    /// Platform credentials (`{"token": ...}` for Telegram), sealed before they are stored.
    pub credentials: Value,
    /// What identifies the bot on its platform (a Telegram token, a Slack app id): bound once.
    pub bot_identity: String,
    pub dm_policy: DmPolicy,
    pub group_policy: GroupPolicy,
    pub allow_users: Vec<String>,
    pub allow_chats: Vec<String>,
    pub admins: Vec<String>,
}

/// Changes to a channel's access rules (`None`: unchanged).
#[derive(Debug, Clone, Default)]
pub struct ChannelAccess {
    pub dm_policy: Option<DmPolicy>,
    pub group_policy: Option<GroupPolicy>,
    pub allow_users: Option<Vec<String>>,
    pub allow_chats: Option<Vec<String>>,
    pub admins: Option<Vec<String>>,
    pub busy_mode: Option<BusyMode>,
    pub streaming: Option<bool>,
    pub group_sessions: Option<GroupSessions>,
    pub admin_commands: Option<Vec<String>>,
    pub tool_progress: Option<bool>,
    pub show_reasoning: Option<bool>,
    /// `chat` or `chat:thread`; an empty string clears it.
    pub home_chat: Option<String>,
    /// Replaces the toolset rules when set.
    pub toolsets: Option<hermes_core::audience::ChatToolsets>,
}

/// A stored channel.
#[derive(Debug, Clone, serde::Serialize, sqlx::FromRow)]
pub struct Channel {
    #[sqlx(try_from = "crate::rows::Id")]
    pub id: ChannelId,
    #[serde(skip)]
    #[sqlx(try_from = "crate::rows::Id")]
    pub tenant_id: TenantId,
    #[sqlx(try_from = "crate::rows::Id")]
    pub agent_id: AgentId,
    #[sqlx(try_from = "String")]
    pub platform: Platform,
    #[sqlx(try_from = "String")]
    pub mode: ChannelMode,
    pub api_base: String,
    #[serde(skip)]
    #[sqlx(rename = "credentials")]
    pub sealed_credentials: Vec<u8>,
    pub bot_username: Option<String>,
    #[serde(skip)]
    pub webhook_secret: String,
    #[sqlx(try_from = "String")]
    pub dm_policy: DmPolicy,
    #[sqlx(try_from = "String")]
    pub group_policy: GroupPolicy,
    pub allow_users: Vec<String>,
    pub allow_chats: Vec<String>,
    pub admins: Vec<String>,
    /// What a message does while the agent is busy (migration 0019).
    #[sqlx(try_from = "String")]
    pub busy_mode: BusyMode,
    /// Answers are shown as they are written (migration 0021).
    pub streaming: bool,
    /// A group chat is one conversation (`chat`) or one per person (`user`) (migration 0023).
    #[sqlx(try_from = "String")]
    pub group_sessions: GroupSessions,
    /// Chat commands (without the slash) only the admins may use (migration 0024).
    pub admin_commands: Vec<String>,
    /// Tools at work are shown in one edited message (migration 0025).
    pub tool_progress: bool,
    /// The model's reasoning is shown above each answer (migration 0066).
    pub show_reasoning: bool,
    /// Where deliveries to the bare platform go: `chat` or `chat:thread` (migration 0030).
    pub home_chat: Option<String>,
    /// The only toolsets of the agent's each kind of chat may use (migration 0060).
    #[sqlx(json)]
    pub toolsets: hermes_core::audience::ChatToolsets,
    #[sqlx(try_from = "String")]
    pub status: ChannelStatus,
    pub status_reason: Option<String>,
    #[serde(skip)]
    pub poll_offset: i64,
    pub created_at: DateTime<Utc>,
}

/// Among a tenant's `channels`, `agent`'s own active bot on `platform` (never another agent's:
/// a key or a job restricted to one agent must not speak through another's bot). With
/// `needs_home`, only a bot that has a home chat.
pub fn pick_channel(channels: &[Channel], platform: Platform, agent: AgentId, needs_home: bool) -> Option<&Channel> {
    channels.iter().find(|c| {
        c.agent_id == agent
            && c.platform == platform
            && c.status == ChannelStatus::Active
            && (!needs_home || c.home_chat.is_some())
    })
}

fn context(id: ChannelId) -> String {
    format!("channel:{id}")
}

/// The `allow_chats` entry that admits every group chat: an admin's explicit choice, since
/// groups are closed until allowed (anyone can add a bot to a group of their own).
pub const ANY_CHAT: &str = "*";

impl Channel {
    /// Whether `user` is one of the channel's admins. A channel that names none has no admins
    /// (admin commands, group approvals and `always` grants are then for nobody in chat).
    pub fn is_admin(&self, user: &str) -> bool {
        self.admins.iter().any(|a| a == user)
    }

    /// Whether the bot talks in group chat `chat`: only the chats its `allow_chats` lists (or
    /// every chat, with [`ANY_CHAT`]).
    pub fn admits_group(&self, chat: &str) -> bool {
        self.allow_chats.iter().any(|c| c == chat || c == ANY_CHAT)
    }

    /// The platform credentials in clear.
    pub fn credentials(&self, secrets: Option<&SecretBox>) -> Result<Value> {
        let plain = SecretBox::required(secrets, "reading bot credentials")?
            .open(&context(self.id), &self.sealed_credentials)?;
        serde_json::from_slice(&plain).map_err(|e| StoreError::Corrupt(format!("channel credentials: {e}")))
    }
}

/// A random secret of URL- and header-safe characters (Telegram allows `A-Za-z0-9_-`).
fn webhook_secret() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    (0..40).map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())])).collect()
}

impl Chat<'_> {
    pub async fn list_channels(self, tenant: TenantId) -> Result<Vec<Channel>> {
        self.rows_of(tenant, "SELECT * FROM channels WHERE tenant_id = $1 ORDER BY created_at").await
    }

    pub async fn channel(self, tenant: TenantId, id: ChannelId) -> Result<Channel> {
        self.row_of(tenant, "SELECT * FROM channels WHERE tenant_id = $1 AND id = $2", id.as_uuid()).await
    }

    /// Marks why a channel stopped delivering (`blocked`), or `active` again.
    pub async fn set_channel_status(
        self,
        tenant: TenantId,
        id: ChannelId,
        status: ChannelStatus,
        reason: Option<&str>,
    ) -> Result<()> {
        sqlx::query(
            "UPDATE channels SET status = $3, status_reason = $4, updated_at = now() WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(id.as_uuid())
        .bind(status.as_str())
        .bind(reason.map(crate::messages::without_nul))
        .execute(&mut *self.as_tenant(tenant).await?)
        .await?;
        Ok(())
    }

    /// Moves a long-poll position forward (never back: a slower pod cannot rewind it).
    pub async fn advance_poll_offset(self, tenant: TenantId, id: ChannelId, offset: i64) -> Result<()> {
        sqlx::query("UPDATE channels SET poll_offset = GREATEST(poll_offset, $3) WHERE tenant_id = $1 AND id = $2")
            .bind(tenant.as_uuid())
            .bind(id.as_uuid())
            .bind(offset)
            .execute(&mut *self.as_tenant(tenant).await?)
            .await?;
        Ok(())
    }
}

tenant_writes! {
    in Chat;
    /// Binds a bot to an agent. `Conflict` when the bot is bound already (by anyone).
    pub async fn create_channel(new: NewChannel, secrets: Option<&SecretBox>) -> Result<Channel> = create_channel_on;

    /// Unbinds a bot; `false` when there was no such channel.
    pub async fn delete_channel(id: ChannelId) -> Result<bool> = delete_channel_on;

    /// Changes who may talk to the bot; `None` leaves a setting as it is.
    pub async fn update_channel_access(id: ChannelId, access: &ChannelAccess) -> Result<Channel>
        = update_channel_access_on;

    /// Records what the platform says the bot is called.
    pub async fn set_bot_username(id: ChannelId, name: &str) -> Result<()> = set_bot_username_on;
}

/// [`Chat::create_channel`](crate::views::Chat::create_channel) on a connection already set to `tenant`.
async fn create_channel_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    new: NewChannel,
    secrets: Option<&SecretBox>,
) -> Result<Channel> {
    use sha2::Digest;
    let secrets = SecretBox::required(secrets, "storing bot credentials")?;
    let id = ChannelId::new();
    let sealed = secrets.seal(&context(id), new.credentials.to_string().as_bytes())?;
    let digest = sha2::Sha256::digest(format!("{}:{}", new.platform, new.bot_identity).as_bytes());
    let fingerprint: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let row = sqlx::query(
        "INSERT INTO channels (id, tenant_id, agent_id, platform, mode, api_base, credentials, bot_fingerprint,
                               webhook_secret, dm_policy, group_policy, allow_users, allow_chats, admins)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING *",
    )
    .bind(id.as_uuid())
    .bind(tenant.as_uuid())
    .bind(new.agent_id.as_uuid())
    .bind(new.platform.as_str())
    .bind(new.mode.as_str())
    .bind(&new.api_base)
    .bind(sealed)
    .bind(fingerprint)
    .bind(webhook_secret())
    .bind(new.dm_policy.as_str())
    .bind(new.group_policy.as_str())
    .bind(&new.allow_users)
    .bind(&new.allow_chats)
    .bind(&new.admins)
    .fetch_one(conn)
    .await
    .map_err(|e| match &e {
        sqlx::Error::Database(db) if db.is_foreign_key_violation() => StoreError::NotFound,
        sqlx::Error::Database(db) if db.is_check_violation() => {
            StoreError::Invalid("unknown platform, mode or policy".into())
        }
        _ => StoreError::conflict_on_unique(e, "this bot is already bound to an agent; delete that channel first"),
    })?;
    crate::rows::read::<Channel>(&row)
}

/// [`Chat::delete_channel`](crate::views::Chat::delete_channel) on a connection already set to `tenant`.
async fn delete_channel_on(conn: &mut PgConnection, tenant: TenantId, id: ChannelId) -> Result<bool> {
    crate::rows::delete_row_on(conn, tenant, "DELETE FROM channels WHERE tenant_id = $1 AND id = $2", id.as_uuid())
        .await
}

/// [`Chat::update_channel_access`](crate::views::Chat::update_channel_access) on a connection already set to `tenant`.
async fn update_channel_access_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    id: ChannelId,
    access: &ChannelAccess,
) -> Result<Channel> {
    let row = sqlx::query(
        "UPDATE channels SET dm_policy = COALESCE($3, dm_policy), group_policy = COALESCE($4, group_policy),
                allow_users = COALESCE($5, allow_users), allow_chats = COALESCE($6, allow_chats),
                admins = COALESCE($7, admins), busy_mode = COALESCE($8, busy_mode),
                streaming = COALESCE($9, streaming), group_sessions = COALESCE($10, group_sessions),
                admin_commands = COALESCE($11, admin_commands), tool_progress = COALESCE($12, tool_progress),
                home_chat = CASE WHEN $13::text IS NULL THEN home_chat ELSE NULLIF($13, '') END,
                toolsets = COALESCE($14, toolsets), show_reasoning = COALESCE($15, show_reasoning),
                updated_at = now()
         WHERE tenant_id = $1 AND id = $2 RETURNING *",
    )
    .bind(tenant.as_uuid())
    .bind(id.as_uuid())
    .bind(access.dm_policy.map(DmPolicy::as_str))
    .bind(access.group_policy.map(GroupPolicy::as_str))
    .bind(&access.allow_users)
    .bind(&access.allow_chats)
    .bind(&access.admins)
    .bind(access.busy_mode.map(BusyMode::as_str))
    .bind(access.streaming)
    .bind(access.group_sessions.map(GroupSessions::as_str))
    .bind(&access.admin_commands)
    .bind(access.tool_progress)
    .bind(access.home_chat.as_deref())
    .bind(access.toolsets.as_ref().map(sqlx::types::Json))
    .bind(access.show_reasoning)
    .fetch_optional(conn)
    .await
    .map_err(|e| StoreError::invalid_on_check(e, "unknown policy"))?
    .ok_or(StoreError::NotFound)?;
    crate::rows::read::<Channel>(&row)
}

/// [`Chat::set_bot_username`](crate::views::Chat::set_bot_username) on a connection already set to `tenant`.
async fn set_bot_username_on(conn: &mut PgConnection, tenant: TenantId, id: ChannelId, name: &str) -> Result<()> {
    sqlx::query("UPDATE channels SET bot_username = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.as_uuid())
        .bind(id.as_uuid())
        .bind(crate::messages::without_nul(name))
        .execute(conn)
        .await?;
    Ok(())
}
