//! `/v1/channels`: a tenant's chat bots, as `hermesctl channel` manages them. Creating one
//! checks the bot with its platform ([`hermes_chat::binding`]) before anything is stored;
//! credentials are sealed at rest and never shown again. Pairing codes people got from a bot
//! are listed and approved here too. Only a tenant-wide key manages channels; another
//! tenant's channel is a 404 like a missing one.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use hermes_chat::binding::{self, BindError, BindRequest};
use hermes_core::kinds::UnknownName;
use hermes_core::{BusyMode, DmPolicy, GroupPolicy, GroupSessions};
use hermes_http::{ApiError, ApiJson, ErrorCode};
use hermes_store::{Channel, ChannelAccess, KeyAuth, NewChannel, PairingApproval};

use crate::agents::resolve_agent;
use crate::auth::{Caller, tenant_wide};
use crate::errors::{Failure, Resource, resource};
use crate::state::AppState;

/// This module's handlers' error: a store error is about a channel.
type Result<T> = std::result::Result<T, Failure<resource::Channel>>;

fn not_found() -> ApiError {
    resource::Channel::not_found()
}

/// The caller's channel `id`.
async fn owned(state: &AppState, auth: &KeyAuth, id: &str) -> Result<Channel> {
    tenant_wide(auth, "managing channels")?;
    let id = uuid::Uuid::parse_str(id).map_err(|_| not_found())?;
    Ok(state.store.channel(auth.tenant_id, id).await?)
}

#[utoipa::path(get, path = "/v1/channels", tag = "channels",
    responses((status = 200, description = "The tenant's channels", body = crate::schemas::ObjectList), (status = 401, description = "Missing or invalid API key", body = crate::schemas::ErrorBody), (status = 403, description = "The key is restricted to one agent", body = crate::schemas::ErrorBody)))]
pub(crate) async fn list(State(state): State<AppState>, Caller(auth): Caller) -> Result<Json<Value>> {
    tenant_wide(&auth, "managing channels")?;
    let channels = state.store.list_channels(auth.tenant_id).await?;
    Ok(Json(json!({ "object": "list", "data": channels, "has_more": false })))
}

/// A bot to bind: the platform's credentials for its mode, and who may talk to it.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateChannel {
    /// The agent's name.
    agent: String,
    platform: String,
    mode: Option<String>,
    token: Option<String>,
    signing_secret: Option<String>,
    app_token: Option<String>,
    corp_id: Option<String>,
    wecom_agent_id: Option<i64>,
    secret: Option<String>,
    aes_key: Option<String>,
    bot_id: Option<String>,
    /// Webhook modes: where the platform reaches the gateway.
    public_url: Option<String>,
    dm_policy: Option<String>,
    group_policy: Option<String>,
    #[serde(default)]
    allow_users: Vec<String>,
    #[serde(default)]
    allow_chats: Vec<String>,
    #[serde(default)]
    admins: Vec<String>,
}

/// A vocabulary value from a request body: an unknown name is a 400 `invalid_value` naming the
/// allowed ones (the code an unknown platform or busy mode always had).
fn parse<T: std::str::FromStr<Err = UnknownName>>(value: &str) -> std::result::Result<T, ApiError> {
    value.parse().map_err(|e: UnknownName| ApiError::invalid_request(ErrorCode::InvalidValue, e.to_string()))
}

fn bind_error(e: BindError) -> ApiError {
    match e {
        BindError::Invalid(why) => ApiError::invalid_request(ErrorCode::InvalidValue, why),
        BindError::Platform(why) => ApiError::invalid_request(ErrorCode::PlatformRefused, why),
    }
}

#[utoipa::path(post, path = "/v1/channels", tag = "channels", request_body = CreateChannel,
    responses((status = 201, description = "The bot is bound; `setup` says what is left to do on the platform", body = crate::schemas::Channel), (status = 400, description = "Invalid request, or the platform refused the credentials", body = crate::schemas::ErrorBody), (status = 409, description = "The bot is bound already", body = crate::schemas::ErrorBody)))]
pub(crate) async fn create(
    State(state): State<AppState>,
    Caller(auth): Caller,
    body: std::result::Result<ApiJson<CreateChannel>, ApiError>,
) -> Result<(StatusCode, Json<Value>)> {
    // The key's reach first: a restricted key is refused whatever the body.
    tenant_wide(&auth, "managing channels")?;
    let ApiJson(c) = body?;
    Ok((StatusCode::CREATED, Json(bind(&state, &auth, c).await?)))
}

/// Checks the bot `c` names with its platform, stores it sealed and activates it (webhook or
/// socket); the channel as shown, with `setup`: what is left to do on the platform.
async fn bind(state: &AppState, auth: &KeyAuth, c: CreateChannel) -> Result<Value> {
    let agent = resolve_agent(state, auth, Some(&c.agent)).await?;
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
        api_base: Some(state.config.platforms.base_for(platform, mode).to_owned()),
    };
    let prepared = binding::prepare(&state.http, &request).await.map_err(bind_error)?;
    let new = NewChannel {
        agent_id: agent.id,
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
    let store = &state.store;
    let mut channel = store.create_channel(auth.tenant_id, new, state.secrets.as_ref()).await?;
    store.set_bot_username(auth.tenant_id, channel.id, &prepared.username).await?;
    channel.bot_username = Some(prepared.username.clone());
    let webhook = &channel.webhook_secret;
    match binding::activate(&state.http, &prepared, channel.id, webhook, c.public_url.as_deref()).await {
        Ok(setup) => {
            let mut body = json!(channel);
            body["setup"] = json!(setup);
            Ok(body)
        }
        Err(e) => {
            // Not usable: take it back, so the bot can be bound again.
            let _ = store.delete_channel(auth.tenant_id, channel.id).await;
            Err(bind_error(e).into())
        }
    }
}

#[utoipa::path(get, path = "/v1/channels/{id}", tag = "channels", params(("id" = String, Path, description = "Channel id")),
    responses((status = 200, description = "The channel", body = crate::schemas::Channel), (status = 404, description = "No such channel", body = crate::schemas::ErrorBody)))]
pub(crate) async fn get(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
) -> Result<Json<Channel>> {
    Ok(Json(owned(&state, &auth, &id).await?))
}

/// Changes to who may talk to the bot and how it behaves (absent fields stay as they are).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct UpdateChannel {
    dm_policy: Option<String>,
    group_policy: Option<String>,
    allow_users: Option<Vec<String>>,
    allow_chats: Option<Vec<String>>,
    admins: Option<Vec<String>>,
    busy_mode: Option<String>,
    streaming: Option<bool>,
    group_sessions: Option<String>,
    admin_commands: Option<Vec<String>>,
    tool_progress: Option<bool>,
    /// `chat` or `chat:thread` where deliveries to the bare platform go; "" clears it.
    home_chat: Option<String>,
}

/// The changes as the store takes them (admin commands without their `/`); an unknown busy mode
/// or group-sessions value is refused here.
impl TryFrom<UpdateChannel> for ChannelAccess {
    type Error = ApiError;

    fn try_from(u: UpdateChannel) -> std::result::Result<Self, ApiError> {
        Ok(ChannelAccess {
            dm_policy: u.dm_policy.as_deref().map(parse::<DmPolicy>).transpose()?,
            group_policy: u.group_policy.as_deref().map(parse::<GroupPolicy>).transpose()?,
            allow_users: u.allow_users,
            allow_chats: u.allow_chats,
            admins: u.admins,
            busy_mode: u.busy_mode.as_deref().map(parse::<BusyMode>).transpose()?,
            streaming: u.streaming,
            group_sessions: u.group_sessions.as_deref().map(parse::<GroupSessions>).transpose()?,
            tool_progress: u.tool_progress,
            home_chat: u.home_chat,
            admin_commands: u
                .admin_commands
                .map(|list| list.iter().map(|c| c.trim_start_matches('/').to_owned()).collect()),
        })
    }
}

#[utoipa::path(patch, path = "/v1/channels/{id}", tag = "channels", params(("id" = String, Path, description = "Channel id")),
    responses((status = 200, description = "The changed channel", body = crate::schemas::Channel), (status = 400, description = "Invalid request", body = crate::schemas::ErrorBody), (status = 404, description = "No such channel", body = crate::schemas::ErrorBody)))]
pub(crate) async fn update(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
    body: std::result::Result<ApiJson<UpdateChannel>, ApiError>,
) -> Result<Json<Channel>> {
    // Whose it is first: another tenant's channel is a 404 whatever the body.
    let channel = owned(&state, &auth, &id).await?;
    let ApiJson(u) = body?;
    let access = ChannelAccess::try_from(u)?;
    let changed = state.store.update_channel_access(auth.tenant_id, channel.id, &access).await?;
    Ok(Json(changed))
}

#[utoipa::path(delete, path = "/v1/channels/{id}", tag = "channels", params(("id" = String, Path, description = "Channel id")),
    responses((status = 200, description = "Unbound", body = crate::schemas::Deleted), (status = 404, description = "No such channel", body = crate::schemas::ErrorBody)))]
pub(crate) async fn delete(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>> {
    let channel = owned(&state, &auth, &id).await?;
    if !state.store.delete_channel(auth.tenant_id, channel.id).await? {
        return Err(not_found().into());
    }
    Ok(Json(json!({ "id": channel.id, "object": "channel.deleted", "deleted": true })))
}

#[utoipa::path(get, path = "/v1/channels/{id}/pairings", tag = "channels", params(("id" = String, Path, description = "Channel id")),
    responses((status = 200, description = "Codes waiting for an admin", body = crate::schemas::ObjectList), (status = 404, description = "No such channel", body = crate::schemas::ErrorBody)))]
pub(crate) async fn pairings(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>> {
    let channel = owned(&state, &auth, &id).await?;
    let waiting = state.store.pending_pairings(auth.tenant_id, channel.id).await?;
    Ok(Json(json!({ "object": "list", "data": waiting, "has_more": false })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Approve {
    code: String,
}

#[utoipa::path(post, path = "/v1/channels/{id}/pairings/approve", tag = "channels", params(("id" = String, Path, description = "Channel id")),
    responses((status = 200, description = "The person may talk to the bot now (and is told so)", body = crate::schemas::PairingApproved), (status = 400, description = "No such code is waiting", body = crate::schemas::ErrorBody), (status = 404, description = "No such channel", body = crate::schemas::ErrorBody), (status = 429, description = "Too many wrong codes: approvals are locked for a while", body = crate::schemas::ErrorBody)))]
pub(crate) async fn approve(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
    body: std::result::Result<ApiJson<Approve>, ApiError>,
) -> Result<Json<Value>> {
    let channel = owned(&state, &auth, &id).await?;
    let ApiJson(a) = body?;
    let approval = state.store.approve_pairing(auth.tenant_id, channel.id, &a.code).await?;
    if let PairingApproval::Approved { user_id, chat_id } = &approval {
        let note = hermes_chat::pairing::announcement(channel.platform, channel.id, user_id, chat_id);
        state
            .store
            .enqueue_outbox(channel.tenant_id, &note.destination, &note.dedupe_key, &note.payload)
            .await
            .map_err(ApiError::internal)?;
    }
    match approval {
        PairingApproval::Approved { user_id, .. } => Ok(Json(json!({ "approved": true, "user_id": user_id }))),
        PairingApproval::WrongCode => {
            Err(ApiError::invalid_request(ErrorCode::WrongCode, "no such code is waiting (it may have expired)").into())
        }
        PairingApproval::Locked { until } => Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_error",
            Some(ErrorCode::PairingLocked),
            format!("too many wrong codes: approvals are locked until {until}"),
        )
        .into()),
    }
}
