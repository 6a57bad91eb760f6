//! `/v1/channels`: a tenant's chat bots, as `hermesctl channel` manages them, through the same
//! use cases (`hermes_ops::channels`), which record each change as the key's. Creating one
//! checks the bot with its platform before anything is stored;
//! credentials are sealed at rest and never shown again. Pairing codes people got from a bot
//! are listed and approved here too. Only a tenant-wide key manages channels; another
//! tenant's channel is a 404 like a missing one.

use axum::Json;
use axum::http::StatusCode;
use serde::Deserialize;

use hermes_http::{ApiError, ApiJson};
use hermes_ops::channels::{self, Platforms, shown};
use hermes_store::{Channel, KeyAuth};
use hermes_wire::Slice;
use hermes_wire::v1::{Channel as Shown, ChannelBound, ChannelChanges, ChannelRequest, Deleted, PairingApproved};

use crate::agents::resolve_agent;
use crate::auth::{TenantWide, TenantWideOnly, key_audit, tenant_wide};
use crate::documented::{
    BadRequest, BotBound, ChannelPath, KeyForOneAgent, NoApiKey, NoSuchChannel, NoSuchCode, PairingLocked,
};
use crate::errors::{Failure, Resource, resource};
use crate::state::AppState;
use crate::visible::{CallerObject, Visible};

/// This module's handlers' error: a store error is about a channel.
type Result<T> = std::result::Result<T, Failure<resource::Channel>>;

fn not_found() -> ApiError {
    resource::Channel::not_found()
}

/// The caller's channel `id`: only a tenant-wide key reaches one.
impl CallerObject for Channel {
    type Path = ChannelPath;
    type Missing = Failure<resource::Channel>;

    async fn find(state: &AppState, auth: &KeyAuth, id: &str) -> Result<Self> {
        tenant_wide(auth, resource::Channel::MANAGING)?;
        let id: hermes_core::ChannelId = id.parse().map_err(|_| not_found())?;
        Ok(state.store.chat().channel(auth.tenant_id, id).await?)
    }
}

impl TenantWideOnly for resource::Channel {
    const MANAGING: &'static str = "managing channels";
}

#[utoipa::path(get, path = "/v1/channels", tag = "channels",
    responses((status = 200, description = "The tenant's channels", body = Slice<hermes_wire::v1::Channel>), NoApiKey, KeyForOneAgent))]
pub(crate) async fn list(TenantWide { state, auth, .. }: TenantWide<resource::Channel>) -> Result<Json<Slice<Shown>>> {
    let channels = state.store.chat().list_channels(auth.tenant_id).await?;
    Ok(Json(Slice::whole(channels.into_iter().map(shown).collect())))
}

#[utoipa::path(post, path = "/v1/channels", tag = "channels", request_body = ChannelRequest,
    responses((status = 201, description = "The bot is bound; `setup` says what is left to do on the platform", body = ChannelBound), (status = 400, description = "Invalid request, or the platform refused the credentials", body = hermes_wire::ErrorBody), BotBound))]
pub(crate) async fn create(
    TenantWide { state, auth, .. }: TenantWide<resource::Channel>,
    ApiJson(c): ApiJson<ChannelRequest>,
) -> Result<(StatusCode, Json<ChannelBound>)> {
    let agent = resolve_agent(&state, &auth, Some(&c.agent)).await?;
    let platforms = Platforms {
        http: &state.http,
        secrets: state.secrets.as_ref(),
        bases: &state.config.platforms,
        api_base: None,
    };
    let bound = channels::bind(&platforms, &state.store, key_audit(&auth), (auth.tenant_id, agent.id), c).await?;
    Ok((StatusCode::CREATED, Json(bound)))
}

#[utoipa::path(get, path = "/v1/channels/{id}", tag = "channels", params(ChannelPath),
    responses((status = 200, description = "The channel", body = hermes_wire::v1::Channel), NoSuchChannel))]
pub(crate) async fn get(Visible { found: channel, .. }: Visible<Channel>) -> Result<Json<Shown>> {
    Ok(Json(shown(channel)))
}

#[utoipa::path(patch, path = "/v1/channels/{id}", tag = "channels", params(ChannelPath),
    responses((status = 200, description = "The changed channel", body = hermes_wire::v1::Channel), BadRequest, NoSuchChannel))]
pub(crate) async fn update(
    Visible { state, auth, found: channel, .. }: Visible<Channel>,
    ApiJson(changes): ApiJson<ChannelChanges>,
) -> Result<Json<Shown>> {
    Ok(Json(channels::change(&state.store, key_audit(&auth), &channel, changes).await?))
}

#[utoipa::path(delete, path = "/v1/channels/{id}", tag = "channels", params(ChannelPath),
    responses((status = 200, description = "Unbound", body = Deleted), NoSuchChannel))]
pub(crate) async fn delete(Visible { state, auth, found: channel, .. }: Visible<Channel>) -> Result<Json<Deleted>> {
    channels::unbind(&state.store, key_audit(&auth), &channel).await?;
    Ok(Json(Deleted::new(channel.id, "channel.deleted")))
}

#[utoipa::path(get, path = "/v1/channels/{id}/pairings", tag = "channels", params(ChannelPath),
    responses((status = 200, description = "Codes waiting for an admin", body = Slice<hermes_wire::v1::PairingRequest>), NoSuchChannel))]
pub(crate) async fn pairings(
    Visible { state, auth, found: channel, .. }: Visible<Channel>,
) -> Result<Json<Slice<hermes_wire::v1::PairingRequest>>> {
    let waiting = state.store.chat().pending_pairings(auth.tenant_id, channel.id).await?;
    Ok(Json(Slice::whole(waiting)))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Approve {
    code: String,
}

#[utoipa::path(post, path = "/v1/channels/{id}/pairings/approve", tag = "channels", params(ChannelPath),
    responses((status = 200, description = "The person may talk to the bot now (and is told so)", body = PairingApproved), NoSuchCode, NoSuchChannel, PairingLocked))]
pub(crate) async fn approve(
    Visible { state, auth, found: channel, .. }: Visible<Channel>,
    ApiJson(a): ApiJson<Approve>,
) -> Result<Json<PairingApproved>> {
    Ok(Json(channels::approve_pairing(&state.store, key_audit(&auth), &channel, &a.code).await?))
}
