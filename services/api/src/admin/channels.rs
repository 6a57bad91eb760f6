//! Chat bots: binding one (checked with its platform before anything is stored, credentials
//! sealed, then activated: a webhook registered or a socket opened), and approving a pairing
//! code someone got from the bot. The tenant API (`/v1/channels`) and the admin API
//! (`/admin/v1/tenants/{id}/channels`) both bind through [`bind`] and approve through
//! [`approve_pairing`]; each answers in its own way.

use serde::Deserialize;

use hermes_chat::binding::{self, BindError, BindRequest};
use hermes_core::kinds::UnknownName;
use hermes_core::{AgentId, DmPolicy, ErrorCode, GroupPolicy, TenantId};
use hermes_http::ApiError;
use hermes_store::admin::{Audit, Change};
use hermes_store::{Channel, NewChannel, PairingApproval, SecretBox, Store, StoreError};
use hermes_wire::v1::{ChannelBound, PairingApproved};

/// A bot to bind: the platform's credentials for its mode, and who may talk to it.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
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

/// Why binding or approving failed: a refusal to show as it is, or a storage failure each API
/// maps its own way.
#[derive(Debug)]
pub enum ChannelFailure {
    Refused(ApiError),
    Store(StoreError),
}

impl From<StoreError> for ChannelFailure {
    fn from(e: StoreError) -> Self {
        ChannelFailure::Store(e)
    }
}

impl From<ApiError> for ChannelFailure {
    fn from(e: ApiError) -> Self {
        ChannelFailure::Refused(e)
    }
}

/// What binding needs.
pub struct Binder<'a> {
    pub store: &'a Store,
    /// Held to the outbound policy; the platforms' hosts trusted as the operator configured.
    pub http: &'a reqwest::Client,
    pub secrets: Option<&'a SecretBox>,
    pub config: &'a hermes_config::HermesConfig,
}

/// A vocabulary value from a request body: an unknown name is a 400 `invalid_value` naming the
/// allowed ones.
pub fn parse<T: std::str::FromStr<Err = UnknownName>>(value: &str) -> Result<T, ApiError> {
    value.parse().map_err(|e: UnknownName| ApiError::invalid_request(ErrorCode::InvalidValue, e.to_string()))
}

fn bind_error(e: BindError) -> ApiError {
    match e {
        BindError::Invalid(why) => ApiError::invalid_request(ErrorCode::InvalidValue, why),
        BindError::Platform(why) => ApiError::invalid_request(ErrorCode::PlatformRefused, why),
    }
}

/// A bot its platform has accepted, ready to store.
struct Checked {
    prepared: binding::Prepared,
    new: NewChannel,
    public_url: Option<String>,
}

/// Checks the bot `c` names with its platform, for `agent`.
async fn check(b: &Binder<'_>, agent: AgentId, c: ChannelRequest) -> Result<Checked, ChannelFailure> {
    // Checked before the platform is asked anything.
    let dm_policy = c.dm_policy.as_deref().map(parse::<DmPolicy>).transpose()?.unwrap_or(DmPolicy::Pairing);
    let group_policy = c.group_policy.as_deref().map(parse::<GroupPolicy>).transpose()?.unwrap_or(GroupPolicy::Mention);
    let (platform, mode) = (parse(&c.platform)?, c.mode.as_deref().map(parse).transpose()?);
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
        // The operator's, never the tenant's: the bot's token goes there.
        api_base: Some(b.config.platforms.base_for(platform, mode).to_owned()),
    };
    let prepared = binding::prepare(b.http, &request).await.map_err(bind_error)?;
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
    Ok(Checked { prepared, new, public_url: c.public_url })
}

/// Activates a stored bot (webhook or socket); the channel as shown, with `setup`: what is
/// left to do on the platform.
async fn activate(
    b: &Binder<'_>,
    prepared: &binding::Prepared,
    public_url: Option<&str>,
    mut channel: Channel,
) -> Result<ChannelBound, ChannelFailure> {
    channel.bot_username = Some(prepared.username.clone());
    let setup = binding::activate(b.http, prepared, channel.id, &channel.webhook_secret, public_url).await;
    Ok(ChannelBound { setup: setup.map_err(bind_error)?, channel: crate::shown::channel(channel) })
}

/// Checks the bot `c` names with its platform, stores it sealed for `agent` and activates it
/// (webhook or socket); the channel as shown, with `setup`: what is left to do on the platform.
/// A bot the platform would not activate is taken back, so it can be bound again.
pub async fn bind(
    b: &Binder<'_>,
    tenant: TenantId,
    agent: AgentId,
    c: ChannelRequest,
) -> Result<ChannelBound, ChannelFailure> {
    let Checked { prepared, new, public_url } = check(b, agent, c).await?;
    let channel = b.store.create_channel(tenant, new, b.secrets).await?;
    b.store.set_bot_username(tenant, channel.id, &prepared.username).await?;
    let id = channel.id;
    let activated = activate(b, &prepared, public_url.as_deref(), channel).await;
    if activated.is_err() {
        let _ = b.store.delete_channel(tenant, id).await;
    }
    activated
}

/// [`bind`] as an admin's change `by`: the channel and its `channel.bound` entry commit
/// together once the platform has activated the bot; one it would not activate leaves nothing.
pub(crate) async fn bind_audited(
    b: &Binder<'_>,
    tenant: TenantId,
    agent: AgentId,
    c: ChannelRequest,
    by: Audit,
) -> Result<ChannelBound, ChannelFailure> {
    let Checked { prepared, new, public_url } = check(b, agent, c).await?;
    let mut tx = b.store.audited(tenant, by).await?;
    let channel = tx.create_channel(new, b.secrets).await?;
    tx.set_bot_username(channel.id, &prepared.username).await?;
    let id = channel.id;
    // The platform is asked with the row not yet committed: a refusal rolls it back.
    let bound = activate(b, &prepared, public_url.as_deref(), channel).await?;
    tx.commit(Change::new("channel.bound", "channel", id).after(&bound)).await?;
    Ok(bound)
}

/// Approves the pairing `code` of `channel`: the person may talk to the bot now, and is told
/// so in the chat. `{"approved": true, "user_id": ...}`.
pub async fn approve_pairing(store: &Store, channel: &Channel, code: &str) -> Result<PairingApproved, ChannelFailure> {
    let approval = store.approve_pairing(channel.tenant_id, channel.id, code).await?;
    if let PairingApproval::Approved { user_id, chat_id } = &approval {
        let note = hermes_chat::pairing::announcement(channel.platform, channel.id, user_id, chat_id);
        store.enqueue_outbox(channel.tenant_id, &note.destination, &note.dedupe_key, &note.payload).await?;
    }
    approval_answer(&approval)
}

/// [`approve_pairing`] as an admin's change `by`: the approval, its announcement and its
/// `pairing.approved` entry commit together. A wrong code still counts toward the lockout.
pub(crate) async fn approve_pairing_audited(
    store: &Store,
    channel: &Channel,
    code: &str,
    by: Audit,
) -> Result<PairingApproved, ChannelFailure> {
    let mut tx = store.audited(channel.tenant_id, by).await?;
    let approval = tx.approve_pairing(channel.id, code).await?;
    let answer = approval_answer(&approval);
    if let PairingApproval::Approved { user_id, chat_id } = &approval
        && let Ok(shown) = &answer
    {
        let note = hermes_chat::pairing::announcement(channel.platform, channel.id, user_id, chat_id);
        tx.enqueue_outbox(&note.destination, &note.dedupe_key, &note.payload).await?;
        tx.commit(Change::new("pairing.approved", "channel", channel.id).after(shown)).await?;
    } else {
        tx.commit_refusal().await?;
    }
    answer
}

/// What approving answers: the person let in, or why not.
fn approval_answer(approval: &PairingApproval) -> Result<PairingApproved, ChannelFailure> {
    match approval {
        PairingApproval::Approved { user_id, .. } => Ok(PairingApproved { approved: true, user_id: user_id.clone() }),
        PairingApproval::WrongCode => {
            Err(ApiError::invalid_request(ErrorCode::WrongCode, "no such code is waiting (it may have expired)").into())
        }
        PairingApproval::Locked { until } => Err(ApiError::new(
            axum::http::StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_error",
            Some(ErrorCode::PairingLocked),
            format!("too many wrong codes: approvals are locked until {until}"),
        )
        .into()),
    }
}
