//! `/v1/channels`: a tenant's chat bots, as `hermesctl channel` manages them. Creating one
//! checks the bot with its platform (`crate::admin::channels::bind`, which the admin API uses
//! too) before anything is stored;
//! credentials are sealed at rest and never shown again. Pairing codes people got from a bot
//! are listed and approved here too. Only a tenant-wide key manages channels; another
//! tenant's channel is a 404 like a missing one.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;

use crate::admin::channels::{self, Binder, ChannelFailure, ChannelRequest, parse};
use hermes_core::{BusyMode, DmPolicy, GroupPolicy, GroupSessions};
use hermes_http::{ApiError, ApiJson};
use hermes_store::{Channel, ChannelAccess, KeyAuth};
use hermes_wire::Slice;
use hermes_wire::v1::{Channel as Shown, ChannelBound, Deleted, PairingApproved};

use crate::agents::resolve_agent;
use crate::auth::{Caller, tenant_wide};
use crate::errors::{Failure, Resource, resource};
use crate::shown;
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
    responses((status = 200, description = "The tenant's channels", body = Slice<hermes_wire::v1::Channel>), (status = 401, description = "Missing or invalid API key", body = hermes_wire::ErrorBody), (status = 403, description = "The key is restricted to one agent", body = hermes_wire::ErrorBody)))]
pub(crate) async fn list(State(state): State<AppState>, Caller(auth): Caller) -> Result<Json<Slice<Shown>>> {
    tenant_wide(&auth, "managing channels")?;
    let channels = state.store.list_channels(auth.tenant_id).await?;
    Ok(Json(Slice::whole(channels.into_iter().map(shown::channel).collect())))
}

#[utoipa::path(post, path = "/v1/channels", tag = "channels", request_body = crate::admin::channels::ChannelRequest,
    responses((status = 201, description = "The bot is bound; `setup` says what is left to do on the platform", body = ChannelBound), (status = 400, description = "Invalid request, or the platform refused the credentials", body = hermes_wire::ErrorBody), (status = 409, description = "The bot is bound already", body = hermes_wire::ErrorBody)))]
pub(crate) async fn create(
    State(state): State<AppState>,
    Caller(auth): Caller,
    body: std::result::Result<ApiJson<ChannelRequest>, ApiError>,
) -> Result<(StatusCode, Json<ChannelBound>)> {
    // The key's reach first: a restricted key is refused whatever the body.
    tenant_wide(&auth, "managing channels")?;
    let ApiJson(c) = body?;
    let agent = resolve_agent(&state, &auth, Some(&c.agent)).await?;
    let binder =
        Binder { store: &state.store, http: &state.http, secrets: state.secrets.as_ref(), config: &state.config };
    let bound = channels::bind(&binder, auth.tenant_id, agent.id, c).await.map_err(failure)?;
    Ok((StatusCode::CREATED, Json(bound)))
}

/// A binding's or an approval's failure, about a channel.
fn failure(f: ChannelFailure) -> Failure<resource::Channel> {
    match f {
        ChannelFailure::Refused(e) => e.into(),
        ChannelFailure::Store(e) => e.into(),
    }
}

#[utoipa::path(get, path = "/v1/channels/{id}", tag = "channels", params(("id" = String, Path, description = "Channel id")),
    responses((status = 200, description = "The channel", body = hermes_wire::v1::Channel), (status = 404, description = "No such channel", body = hermes_wire::ErrorBody)))]
pub(crate) async fn get(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
) -> Result<Json<Shown>> {
    Ok(Json(shown::channel(owned(&state, &auth, &id).await?)))
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
    responses((status = 200, description = "The changed channel", body = hermes_wire::v1::Channel), (status = 400, description = "Invalid request", body = hermes_wire::ErrorBody), (status = 404, description = "No such channel", body = hermes_wire::ErrorBody)))]
pub(crate) async fn update(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
    body: std::result::Result<ApiJson<UpdateChannel>, ApiError>,
) -> Result<Json<Shown>> {
    // Whose it is first: another tenant's channel is a 404 whatever the body.
    let channel = owned(&state, &auth, &id).await?;
    let ApiJson(u) = body?;
    let access = ChannelAccess::try_from(u)?;
    let changed = state.store.update_channel_access(auth.tenant_id, channel.id, &access).await?;
    Ok(Json(shown::channel(changed)))
}

#[utoipa::path(delete, path = "/v1/channels/{id}", tag = "channels", params(("id" = String, Path, description = "Channel id")),
    responses((status = 200, description = "Unbound", body = Deleted), (status = 404, description = "No such channel", body = hermes_wire::ErrorBody)))]
pub(crate) async fn delete(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
) -> Result<Json<Deleted>> {
    let channel = owned(&state, &auth, &id).await?;
    if !state.store.delete_channel(auth.tenant_id, channel.id).await? {
        return Err(not_found().into());
    }
    Ok(Json(Deleted::new(channel.id, "channel.deleted")))
}

#[utoipa::path(get, path = "/v1/channels/{id}/pairings", tag = "channels", params(("id" = String, Path, description = "Channel id")),
    responses((status = 200, description = "Codes waiting for an admin", body = Slice<hermes_wire::v1::PairingRequest>), (status = 404, description = "No such channel", body = hermes_wire::ErrorBody)))]
pub(crate) async fn pairings(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
) -> Result<Json<Slice<hermes_wire::v1::PairingRequest>>> {
    let channel = owned(&state, &auth, &id).await?;
    let waiting = state.store.pending_pairings(auth.tenant_id, channel.id).await?;
    Ok(Json(Slice::whole(waiting.into_iter().map(shown::pairing).collect())))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Approve {
    code: String,
}

#[utoipa::path(post, path = "/v1/channels/{id}/pairings/approve", tag = "channels", params(("id" = String, Path, description = "Channel id")),
    responses((status = 200, description = "The person may talk to the bot now (and is told so)", body = PairingApproved), (status = 400, description = "No such code is waiting", body = hermes_wire::ErrorBody), (status = 404, description = "No such channel", body = hermes_wire::ErrorBody), (status = 429, description = "Too many wrong codes: approvals are locked for a while", body = hermes_wire::ErrorBody)))]
pub(crate) async fn approve(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
    body: std::result::Result<ApiJson<Approve>, ApiError>,
) -> Result<Json<PairingApproved>> {
    let channel = owned(&state, &auth, &id).await?;
    let ApiJson(a) = body?;
    Ok(Json(channels::approve_pairing(&state.store, &channel, &a.code).await.map_err(failure)?))
}
