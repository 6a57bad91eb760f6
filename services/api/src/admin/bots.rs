//! A tenant's chat bots in the admin API: list them, bind one step by step (the answer says
//! what is left to do on the platform, such as the webhook URL to paste), change who may talk
//! to one and which toolsets each kind of chat may use, unbind, and approve pairing codes
//! people got from a bot.

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use serde::Deserialize;

use hermes_core::access::AdminOp;
use hermes_core::{ErrorCode, TenantId};
use hermes_http::ApiError;
use hermes_ops::OpsError;
use hermes_ops::channels::{self, Platforms};
use hermes_store::{Channel, StoreError};
use hermes_wire::List;
use hermes_wire::v1::{ChannelChanges, ChannelRequest};

use crate::admin::errors::{Result, path_id, store_error, store_error_for};
use crate::admin::state::AdminState;
use crate::admin::tenant_call::{Body, TenantCall};
use crate::documented::{
    BotBound, ChannelPath, NoSuchChannel, NoSuchCode, ObjectPath, PairingLocked, TenantNotFound, TenantPath,
};

/// A use case's failure about a channel: a bot bound already is `channel_exists`.
fn failure(f: OpsError) -> ApiError {
    crate::errors::refusal(f).unwrap_or_else(|e| match e {
        StoreError::Conflict(what) => ApiError::new(
            StatusCode::CONFLICT,
            "invalid_request_error",
            Some(ErrorCode::ChannelExists),
            format!("{what} already exists"),
        ),
        e => store_error_for(e, ErrorCode::ChannelNotFound, "channel"),
    })
}

async fn channel(state: &AdminState, tenant: TenantId, raw: &str) -> Result<Channel> {
    let id: hermes_core::ChannelId = path_id(raw, ErrorCode::ChannelNotFound, "channel")?;
    state.store.chat().channel(tenant, id).await.map_err(|e| store_error_for(e, ErrorCode::ChannelNotFound, "channel"))
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/channels", tag = "admin: channels", params(TenantPath),
    responses((status = 200, description = "The tenant's bots (credentials never shown)", body = List<hermes_wire::v1::Channel>),
        TenantNotFound))]
pub(crate) async fn list(call: TenantCall) -> Result<Json<List<hermes_wire::v1::Channel>>> {
    call.list_shown(AdminOp::ViewChannels, async |store, t| store.chat().list_channels(t).await, channels::shown).await
}

#[utoipa::path(post, path = "/admin/v1/tenants/{tenant}/channels", tag = "admin: channels", request_body = ChannelRequest,
    params(TenantPath),
    responses((status = 201, description = "Bound; `setup` says what is left to do on the platform (a webhook URL to paste, a socket to enable)", body = hermes_wire::v1::ChannelBound),
        (status = 400, description = "A bad value, or the platform refused the credentials", body = hermes_wire::ErrorBody),
        (status = 403, description = "The caller's role may not bind bots", body = hermes_wire::ErrorBody),
        BotBound))]
pub(crate) async fn create(
    call: TenantCall,
    body: Body<ChannelRequest>,
) -> Result<(StatusCode, Json<hermes_wire::v1::ChannelBound>)> {
    let (t, body) = call.allow_with_body(AdminOp::ManageChannels, body).await?;
    let state = &call.state;
    let agent = state.agent(t.id, &body.agent).await?;
    let platforms = Platforms {
        http: &state.http,
        secrets: state.secrets.as_ref(),
        bases: &state.config.platforms,
        api_base: None,
    };
    let bound = channels::bind(&platforms, &state.store, call.caller.audit(), (t.id, agent.id), body).await;
    let bound = bound.map_err(failure)?;
    Ok((StatusCode::CREATED, Json(bound)))
}

#[utoipa::path(patch, path = "/admin/v1/tenants/{tenant}/channels/{id}", tag = "admin: channels",
    request_body = ChannelChanges, params(TenantPath, ChannelPath),
    responses((status = 200, description = "The changed bot; its next message sees the change", body = hermes_wire::v1::Channel),
        (status = 400, description = "A bad value, such as a toolset that does not exist", body = hermes_wire::ErrorBody),
        (status = 403, description = "The caller's role may not change bots", body = hermes_wire::ErrorBody),
        NoSuchChannel))]
pub(crate) async fn update(
    call: TenantCall,
    Path(ObjectPath { id }): Path<ObjectPath>,
    body: Body<ChannelChanges>,
) -> Result<Json<hermes_wire::v1::Channel>> {
    let t = call.allow(AdminOp::ManageChannels).await?;
    // Another tenant's bot is not found before its body is read.
    let found = channel(&call.state, t.id, &id).await?;
    let hermes_http::ApiJson(changes) = body?;
    let changed = channels::change(&call.state.store, call.caller.audit(), &found, changes).await;
    Ok(Json(changed.map_err(failure)?))
}

#[utoipa::path(delete, path = "/admin/v1/tenants/{tenant}/channels/{id}", tag = "admin: channels",
    params(TenantPath, ChannelPath),
    responses((status = 204, description = "Unbound"), NoSuchChannel))]
pub(crate) async fn delete(call: TenantCall, Path(ObjectPath { id }): Path<ObjectPath>) -> Result<StatusCode> {
    let t = call.allow(AdminOp::ManageChannels).await?;
    let found = channel(&call.state, t.id, &id).await?;
    channels::unbind(&call.state.store, call.caller.audit(), &found).await.map_err(failure)?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/channels/{id}/pairings", tag = "admin: channels",
    params(TenantPath, ChannelPath),
    responses((status = 200, description = "Codes waiting for an admin", body = List<hermes_wire::v1::PairingRequest>),
        NoSuchChannel))]
pub(crate) async fn pairings(
    call: TenantCall,
    Path(ObjectPath { id }): Path<ObjectPath>,
) -> Result<Json<List<hermes_wire::v1::PairingRequest>>> {
    let t = call.allow(AdminOp::ViewChannels).await?;
    let found = channel(&call.state, t.id, &id).await?;
    let waiting = call.state.store.chat().pending_pairings(t.id, found.id).await.map_err(store_error)?;
    Ok(Json(List::of(waiting)))
}

/// The code the person got from the bot.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Approve {
    code: String,
}

#[utoipa::path(post, path = "/admin/v1/tenants/{tenant}/channels/{id}/pairings/approve", tag = "admin: channels", request_body = Approve,
    params(TenantPath, ChannelPath),
    responses((status = 200, description = "The person may talk to the bot now (and is told so)", body = hermes_wire::v1::PairingApproved),
        NoSuchCode,
        NoSuchChannel,
        PairingLocked))]
pub(crate) async fn approve(
    call: TenantCall,
    Path(ObjectPath { id }): Path<ObjectPath>,
    body: Body<Approve>,
) -> Result<Json<hermes_wire::v1::PairingApproved>> {
    let (t, body) = call.allow_with_body(AdminOp::ManageChannels, body).await?;
    let found = channel(&call.state, t.id, &id).await?;
    let approved = channels::approve_pairing(&call.state.store, call.caller.audit(), &found, &body.code).await;
    let approved = approved.map_err(failure)?;
    Ok(Json(approved))
}
