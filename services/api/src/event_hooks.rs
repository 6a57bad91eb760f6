//! `/v1/event-hooks`: the tenant's outbound event webhooks. An endpoint is told of the events
//! it takes (`turn.finished`, `cron.run.finished`, `cron.run.failed`, `approval.requested`;
//! none listed: all), signed the Standard Webhooks way with its `whsec_` secret (shown on
//! creation only); deliveries are retried and browsable. They span all the tenant's agents,
//! so a key restricted to one agent may not manage them (403).

use axum::Json;
use axum::http::StatusCode;
use serde::Deserialize;

use hermes_http::{ApiError, ApiJson, ErrorCode};
use hermes_net_policy::outbound;
use hermes_store::KeyAuth;
use hermes_store::event_hooks::{EVENTS, EventHook, EventHookChanges};
use hermes_wire::Slice;
use hermes_wire::v1::{Deleted, EventDelivery, EventHook as Shown, EventPing};

use crate::auth::{TenantWide, TenantWideOnly, tenant_wide};
use crate::documented::{BadRequest, HookPath, KeyForOneAgent, NoSuchHook};
use crate::errors::{Failure, deleted, path_id, resource};
use crate::state::AppState;
use crate::visible::{CallerObject, Visible};

/// This module's handlers' error: a store error is about an event hook.
type Result<T> = std::result::Result<T, Failure<resource::EventHook>>;

/// The tenant's event hook `id` (for a tenant-wide key only).
impl CallerObject for EventHook {
    type Path = HookPath;
    type Missing = Failure<resource::EventHook>;

    async fn find(state: &AppState, auth: &KeyAuth, id: &str) -> Result<Self> {
        tenant_wide(auth, resource::EventHook::MANAGING)?;
        let id: hermes_core::EventHookId = path_id::<resource::EventHook, _>(id)?;
        Ok(state.store.automation().event_hook(auth.tenant_id, id).await?)
    }
}

impl TenantWideOnly for resource::EventHook {
    const MANAGING: &'static str = "managing event hooks";
}

fn shown(hook: &EventHook, secret: Option<String>) -> Shown {
    Shown { object: "event_hook".into(), endpoint: hook.clone(), secret }
}

fn check(state: &AppState, url: Option<&str>, events: Option<&[String]>) -> std::result::Result<(), ApiError> {
    if let Some(url) = url
        && let Some(why) = outbound::refuse_url(url, state.config.gateway.events_allow_private_targets)
    {
        return Err(ApiError::invalid_request(ErrorCode::InvalidUrl, why));
    }
    if let Some(unknown) = events.unwrap_or_default().iter().find(|e| !EVENTS.contains(&e.as_str())) {
        let why = format!("no event `{unknown}`: the events are {}", EVENTS.join(", "));
        return Err(ApiError::invalid_request(ErrorCode::InvalidValue, why));
    }
    Ok(())
}

#[utoipa::path(get, path = "/v1/event-hooks", tag = "event-hooks",
    responses((status = 200, description = "The tenant's event hooks (without secrets)", body = Slice<hermes_wire::v1::EventHook>), KeyForOneAgent))]
pub(crate) async fn list(
    TenantWide { state, auth, .. }: TenantWide<resource::EventHook>,
) -> Result<Json<Slice<Shown>>> {
    let hooks = state.store.automation().list_event_hooks(auth.tenant_id).await?;
    Ok(Json(Slice::whole(hooks.iter().map(|h| shown(h, None)).collect())))
}

/// An endpoint to add.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateEventHook {
    /// Where events are posted (a public http(s) address).
    url: String,
    /// The events sent (`turn.finished`, `cron.run.finished`, `cron.run.failed`,
    /// `approval.requested`); empty: all.
    #[serde(default)]
    events: Vec<String>,
    #[serde(default)]
    description: String,
}

#[utoipa::path(post, path = "/v1/event-hooks", tag = "event-hooks", request_body = CreateEventHook,
    responses((status = 201, description = "The endpoint with its signing secret (shown this once)", body = hermes_wire::v1::EventHook), (status = 400, description = "Invalid request (a private address or an unknown event says so)", body = hermes_wire::ErrorBody), KeyForOneAgent))]
pub(crate) async fn create(
    TenantWide { state, auth, .. }: TenantWide<resource::EventHook>,
    ApiJson(c): ApiJson<CreateEventHook>,
) -> Result<(StatusCode, Json<Shown>)> {
    check(&state, Some(&c.url), Some(&c.events))?;
    let (hook, secret) = state
        .store
        .automation()
        .create_event_hook(auth.tenant_id, &c.url, &c.events, &c.description, state.secrets.as_ref())
        .await?;
    Ok((StatusCode::CREATED, Json(shown(&hook, Some(secret)))))
}

#[utoipa::path(get, path = "/v1/event-hooks/{id}", tag = "event-hooks", params(HookPath),
    responses((status = 200, description = "The endpoint, with how its last delivery went", body = hermes_wire::v1::EventHook), NoSuchHook))]
pub(crate) async fn get(Visible { found: hook, .. }: Visible<EventHook>) -> Result<Json<Shown>> {
    Ok(Json(shown(&hook, None)))
}

/// Changes to an endpoint (absent fields stay as they are).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UpdateEventHook {
    url: Option<String>,
    events: Option<Vec<String>>,
    description: Option<String>,
    enabled: Option<bool>,
}

#[utoipa::path(patch, path = "/v1/event-hooks/{id}", tag = "event-hooks", params(HookPath), request_body = UpdateEventHook,
    responses((status = 200, description = "The changed endpoint", body = hermes_wire::v1::EventHook), BadRequest, NoSuchHook))]
pub(crate) async fn update(
    Visible { state, auth, found: hook, .. }: Visible<EventHook>,
    ApiJson(u): ApiJson<UpdateEventHook>,
) -> Result<Json<Shown>> {
    check(&state, u.url.as_deref(), u.events.as_deref())?;
    let changes = EventHookChanges { url: u.url, events: u.events, description: u.description, enabled: u.enabled };
    let hook = state.store.automation().update_event_hook(auth.tenant_id, hook.id, &changes).await?;
    Ok(Json(shown(&hook, None)))
}

#[utoipa::path(delete, path = "/v1/event-hooks/{id}", tag = "event-hooks", params(HookPath),
    responses((status = 200, description = "Removed, with the events still waiting for it", body = Deleted), NoSuchHook))]
pub(crate) async fn delete(Visible { state, auth, found: hook, .. }: Visible<EventHook>) -> Result<Json<Deleted>> {
    deleted::<resource::EventHook>(state.store.automation().delete_event_hook(auth.tenant_id, hook.id).await?)?;
    Ok(Json(Deleted::new(hook.id, "event_hook.deleted")))
}

#[utoipa::path(post, path = "/v1/event-hooks/{id}/ping", tag = "event-hooks", params(HookPath),
    responses((status = 202, description = "A `ping` event is on its way; see the deliveries", body = EventPing), NoSuchHook))]
pub(crate) async fn ping(
    Visible { state, auth, found: hook, .. }: Visible<EventHook>,
) -> Result<(StatusCode, Json<EventPing>)> {
    let event = state.store.automation().ping_event_hook(auth.tenant_id, hook.id).await?;
    let ping = EventPing { id: event.to_string(), object: "event_hook.ping".into(), event: "ping".into() };
    Ok((StatusCode::ACCEPTED, Json(ping)))
}

#[utoipa::path(get, path = "/v1/event-hooks/{id}/deliveries", tag = "event-hooks", params(HookPath),
    responses((status = 200, description = "The endpoint's latest 100 events: pending, delivered or failed, with attempts and errors", body = Slice<EventDelivery>), NoSuchHook))]
pub(crate) async fn deliveries(
    Visible { state, auth, found: hook, .. }: Visible<EventHook>,
) -> Result<Json<Slice<EventDelivery>>> {
    let data = state.store.automation().event_deliveries(auth.tenant_id, hook.id, 100).await?;
    Ok(Json(Slice::whole(data)))
}
