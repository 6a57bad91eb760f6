//! Chat bots: bound (checked with the platform before anything is stored, credentials sealed,
//! then activated: a webhook registered or a socket opened), changed, unbound, and pairing
//! codes approved. The tenant API (`/v1/channels`), the admin API and `hermesctl channel` all
//! come here, so each change is checked and recorded the same way.

use hermes_chat::binding::{self, BindError, BindRequest};
use hermes_config::PlatformsConfig;
use hermes_core::kinds::UnknownName;
use hermes_core::{AgentId, DmPolicy, ErrorCode, GroupPolicy, TenantId};
use hermes_store::admin::{Audit, Change};
use hermes_store::{Channel, ChannelAccess, NewChannel, PairingApproval, SecretBox, Store};
use hermes_wire::v1::{ChannelBound, ChannelChanges, ChannelRequest, PairingApproved};

use crate::{OpsError, Result};

/// What binding a bot needs besides the store.
pub struct Platforms<'a> {
    /// Held to the outbound policy, with the platforms' hosts trusted as the operator configured.
    pub http: &'a reqwest::Client,
    pub secrets: Option<&'a SecretBox>,
    pub bases: &'a PlatformsConfig,
    /// The platform host the operator chose for this bot (`hermesctl --api-base`); tenants
    /// cannot choose one, since the bot's token goes there.
    pub api_base: Option<&'a str>,
}

/// A name of a closed set from a request: an unknown one is refused with the allowed ones.
fn parse<T: std::str::FromStr<Err = UnknownName>>(param: &'static str, value: &str) -> Result<T> {
    value.parse().map_err(|e: UnknownName| OpsError::invalid(param, e.to_string()))
}

fn optional<T: std::str::FromStr<Err = UnknownName>>(param: &'static str, value: Option<&str>) -> Result<Option<T>> {
    value.map(|v| parse(param, v)).transpose()
}

fn bind_error(e: BindError) -> OpsError {
    match e {
        BindError::Invalid(why) => OpsError::Refused { code: ErrorCode::InvalidValue, message: why },
        BindError::Platform(why) => OpsError::Refused { code: ErrorCode::PlatformRefused, message: why },
    }
}

/// Checks the bot `c` names with its platform, seals it for `agent` and activates it (webhook
/// or socket); the channel as shown, with `setup`: what is left to do on the platform. The
/// channel and its `channel.bound` entry commit together once the platform has activated the
/// bot; one it would not activate leaves nothing, so it can be bound again.
pub async fn bind(
    platforms: &Platforms<'_>,
    store: &Store,
    by: Audit,
    (tenant, agent): (TenantId, AgentId),
    c: ChannelRequest,
) -> Result<ChannelBound> {
    // Checked before the platform is asked anything.
    let dm_policy = optional("dm_policy", c.dm_policy.as_deref())?.unwrap_or(DmPolicy::Pairing);
    let group_policy = optional("group_policy", c.group_policy.as_deref())?.unwrap_or(GroupPolicy::Mention);
    let (platform, mode) = (parse("platform", &c.platform)?, optional("mode", c.mode.as_deref())?);
    let api_base = platforms.api_base.unwrap_or_else(|| platforms.bases.base_for(platform, mode)).to_owned();
    let request = BindRequest {
        platform,
        mode,
        token: c.token,
        signing_secret: c.signing_secret,
        app_token: c.app_token,
        corp_id: c.corp_id,
        agent_id: c.wecom_agent_id,
        secret: c.secret,
        aes_key: c.aes_key,
        bot_id: c.bot_id,
        api_base: Some(api_base),
    };
    let prepared = binding::prepare(platforms.http, &request).await.map_err(bind_error)?;
    let new = NewChannel {
        agent_id: agent,
        platform: prepared.platform,
        mode: prepared.mode,
        api_base: prepared.api_base.clone(),
        credentials: prepared.credentials.clone(),
        bot_identity: prepared.identity.clone(),
        dm_policy,
        group_policy,
        allow_users: c.allow_users,
        allow_chats: c.allow_chats,
        admins: c.admins,
    };
    let mut tx = store.audited(tenant, by).await?;
    let mut channel = tx.create_channel(new, platforms.secrets).await?;
    tx.set_bot_username(channel.id, &prepared.username).await?;
    channel.bot_username = Some(prepared.username.clone());
    // The platform is asked with the row not yet committed: a refusal rolls it back.
    let setup =
        binding::activate(platforms.http, &prepared, channel.id, &channel.webhook_secret, c.public_url.as_deref())
            .await
            .map_err(bind_error)?;
    let bound = ChannelBound { setup, channel: shown(channel) };
    tx.commit(Change::new("channel.bound", "channel", bound.channel.id).after(&bound)).await?;
    Ok(bound)
}

/// The store's changes for `c`: closed sets by name, admin commands without their `/`.
fn access(c: ChannelChanges) -> Result<ChannelAccess> {
    crate::agents::check_toolsets(c.toolsets.iter().flat_map(|t| t.names()))?;
    Ok(ChannelAccess {
        dm_policy: optional("dm_policy", c.dm_policy.as_deref())?,
        group_policy: optional("group_policy", c.group_policy.as_deref())?,
        allow_users: c.allow_users,
        allow_chats: c.allow_chats,
        admins: c.admins,
        busy_mode: optional("busy_mode", c.busy_mode.as_deref())?,
        streaming: c.streaming,
        group_sessions: optional("group_sessions", c.group_sessions.as_deref())?,
        tool_progress: c.tool_progress,
        show_reasoning: c.show_reasoning,
        home_chat: c.home_chat,
        toolsets: c.toolsets,
        admin_commands: c
            .admin_commands
            .map(|list| list.iter().map(|c| c.trim_start_matches('/').to_owned()).collect()),
    })
}

/// Changes who may talk to `channel` and how it behaves; its next message sees the change.
pub async fn change(
    store: &Store,
    by: Audit,
    channel: &Channel,
    changes: ChannelChanges,
) -> Result<hermes_wire::v1::Channel> {
    let access = access(changes)?;
    let mut tx = store.audited(channel.tenant_id, by).await?;
    let changed = shown(tx.update_channel_access(channel.id, &access).await?);
    tx.commit(Change::new("channel.changed", "channel", channel.id).before(shown(channel.clone())).after(&changed))
        .await?;
    Ok(changed)
}

/// Unbinds `channel`: its platform's updates are refused from now on.
pub async fn unbind(store: &Store, by: Audit, channel: &Channel) -> Result<()> {
    let mut tx = store.audited(channel.tenant_id, by).await?;
    if !tx.delete_channel(channel.id).await? {
        return Err(OpsError::NotFound { code: ErrorCode::ChannelNotFound, what: "channel" });
    }
    tx.commit(Change::new("channel.unbound", "channel", channel.id).before(shown(channel.clone()))).await?;
    Ok(())
}

/// Approves the pairing `code` of `channel`: the person may talk to the bot now, and is told so
/// in the chat. The approval, its announcement and its `pairing.approved` entry commit
/// together; a wrong code still counts toward the lockout.
pub async fn approve_pairing(store: &Store, by: Audit, channel: &Channel, code: &str) -> Result<PairingApproved> {
    let mut tx = store.audited(channel.tenant_id, by).await?;
    match tx.approve_pairing(channel.id, code.trim()).await? {
        PairingApproval::Approved { user_id, chat_id } => {
            let note = hermes_chat::pairing::announcement(channel.platform, channel.id, &user_id, &chat_id);
            tx.enqueue_outbox(&note.destination, &note.dedupe_key, &note.payload).await?;
            let approved = PairingApproved { approved: true, user_id };
            tx.commit(Change::new("pairing.approved", "channel", channel.id).after(&approved)).await?;
            Ok(approved)
        }
        PairingApproval::WrongCode => {
            tx.commit_refusal().await?;
            Err(OpsError::Refused {
                code: ErrorCode::WrongCode,
                message: "no such code is waiting (it may have expired)".into(),
            })
        }
        PairingApproval::Locked { until } => {
            tx.commit_refusal().await?;
            Err(OpsError::Locked {
                code: ErrorCode::PairingLocked,
                message: format!("too many wrong codes: approvals are locked until {until}"),
            })
        }
    }
}

/// A stored channel as the APIs show it (its credentials never).
pub fn shown(c: Channel) -> hermes_wire::v1::Channel {
    hermes_wire::v1::Channel {
        id: c.id,
        agent_id: c.agent_id,
        platform: c.platform,
        mode: c.mode,
        api_base: c.api_base,
        bot_username: c.bot_username,
        dm_policy: c.dm_policy,
        group_policy: c.group_policy,
        allow_users: c.allow_users,
        allow_chats: c.allow_chats,
        admins: c.admins,
        busy_mode: c.busy_mode,
        streaming: c.streaming,
        group_sessions: c.group_sessions,
        admin_commands: c.admin_commands,
        tool_progress: c.tool_progress,
        show_reasoning: c.show_reasoning,
        home_chat: c.home_chat,
        toolsets: c.toolsets,
        status: c.status,
        status_reason: c.status_reason,
        created_at: c.created_at,
    }
}
