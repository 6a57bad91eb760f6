//! What runs without anyone typing: cron jobs (next run, history, run now, pause, resume),
//! webhook triggers, and the endpoints told what happened (their deliveries; a test event).
//! Creating and editing them stays in the tenant API (`/v1/cron/jobs`, `/v1/webhooks`,
//! `/v1/event-hooks`), which already checks prompts and schedules.

use axum::Json;
use axum::extract::{Path, State};
use serde_json::Value;

use hermes_core::ErrorCode;
use hermes_core::access::AdminOp;
use hermes_http::ApiError;
use hermes_ops::cron::Move;
use hermes_store::admin::Change;
use hermes_wire::List;
use hermes_wire::admin::{Hooks, PingSent};
use hermes_wire::v1::{CronJob, CronRun, EventDelivery};

use crate::admin::caller::Caller;
use crate::admin::errors::{ops_error, store_error, store_error_for};
use crate::admin::state::AdminState;

type Result<T, E = ApiError> = std::result::Result<T, E>;

fn id_of(raw: &str, what: &str) -> Result<uuid::Uuid> {
    uuid::Uuid::parse_str(raw).map_err(|_| ApiError::not_found(ErrorCode::NotFound, format!("no such {what}")))
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/cron", tag = "admin: automation",
    params(("tenant" = String, Path, description = "Tenant id")),
    responses((status = 200, description = "The tenant's cron jobs with their next and last runs", body = List<CronJob>),
        (status = 404, description = "No such tenant (or not yours)", body = hermes_wire::ErrorBody)))]
pub(crate) async fn jobs(
    State(state): State<AdminState>,
    caller: Caller,
    Path(tenant): Path<String>,
) -> Result<Json<List<CronJob>>> {
    let t = caller.tenant(&state, &tenant, AdminOp::ViewCron).await?;
    let jobs = state.store.list_jobs(t.id, None).await.map_err(store_error)?;
    Ok(Json(List::of(jobs.into_iter().map(crate::shown::cron_job).collect())))
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/cron/{id}/runs", tag = "admin: automation",
    params(("tenant" = String, Path, description = "Tenant id"), ("id" = String, Path, description = "Job id")),
    responses((status = 200, description = "The job's latest runs with their outputs, newest first", body = List<CronRun>),
        (status = 404, description = "No such job", body = hermes_wire::ErrorBody)))]
pub(crate) async fn runs(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, id)): Path<(String, String)>,
) -> Result<Json<List<CronRun>>> {
    let t = caller.tenant(&state, &tenant, AdminOp::ViewCron).await?;
    let job = state.store.find_job(t.id, None, &id_of(&id, "job")?.to_string()).await;
    let job = job.map_err(|e| store_error_for(e, ErrorCode::JobNotFound, "job"))?;
    let runs = state.store.job_runs(t.id, job.id, 50).await.map_err(store_error)?;
    Ok(Json(List::of(runs)))
}

/// What to do to a job.
#[derive(Debug, Clone, Copy, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum JobAction {
    /// Due now: the scheduler starts it within a second.
    Run,
    Pause,
    /// Scheduled again from its next slot.
    Resume,
}

#[utoipa::path(post, path = "/admin/v1/tenants/{tenant}/cron/{id}/{action}", tag = "admin: automation",
    params(("tenant" = String, Path, description = "Tenant id"), ("id" = String, Path, description = "Job id"),
        ("action" = String, Path, description = "`run`, `pause` or `resume`")),
    responses((status = 200, description = "The job as it now is", body = CronJob),
        (status = 403, description = "The caller's role may not manage cron", body = hermes_wire::ErrorBody),
        (status = 404, description = "No such job (or action)", body = hermes_wire::ErrorBody)))]
pub(crate) async fn act(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, id, action)): Path<(String, String, String)>,
) -> Result<Json<CronJob>> {
    let t = caller.tenant(&state, &tenant, AdminOp::ManageCron).await?;
    let job = state.store.find_job(t.id, None, &id_of(&id, "job")?.to_string()).await;
    let job = job.map_err(|e| store_error_for(e, ErrorCode::JobNotFound, "job"))?;
    let action: JobAction = serde_json::from_value(Value::String(action))
        .map_err(|_| ApiError::not_found(ErrorCode::NotFound, "no such action: run, pause or resume"))?;
    let to = match action {
        JobAction::Run => Move::RunNow,
        JobAction::Pause => Move::Pause("paused in the console"),
        JobAction::Resume => Move::Resume,
    };
    let changed = hermes_ops::cron::set_state(&state.store, caller.audit(), &job, to).await.map_err(ops_error)?;
    Ok(Json(crate::shown::cron_job(changed)))
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/hooks", tag = "admin: automation",
    params(("tenant" = String, Path, description = "Tenant id")),
    responses((status = 200, description = "Webhook triggers and event endpoints (secrets never shown)", body = Hooks),
        (status = 404, description = "No such tenant (or not yours)", body = hermes_wire::ErrorBody)))]
pub(crate) async fn hooks(
    State(state): State<AdminState>,
    caller: Caller,
    Path(tenant): Path<String>,
) -> Result<Json<Hooks>> {
    let t = caller.tenant(&state, &tenant, AdminOp::ViewHooks).await?;
    let webhooks = state.store.list_webhooks(t.id).await.map_err(store_error)?;
    let endpoints = state.store.list_event_hooks(t.id).await.map_err(store_error)?;
    let webhooks = webhooks.iter().map(crate::shown::hook_trigger).collect();
    Ok(Json(Hooks { webhooks, event_hooks: endpoints.iter().map(crate::shown::event_endpoint).collect() }))
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/hooks/{id}/deliveries", tag = "admin: automation",
    params(("tenant" = String, Path, description = "Tenant id"), ("id" = String, Path, description = "Event endpoint id")),
    responses((status = 200, description = "The endpoint's latest deliveries and their attempts", body = List<EventDelivery>),
        (status = 404, description = "No such endpoint", body = hermes_wire::ErrorBody)))]
pub(crate) async fn deliveries(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, id)): Path<(String, String)>,
) -> Result<Json<List<EventDelivery>>> {
    let t = caller.tenant(&state, &tenant, AdminOp::ViewHooks).await?;
    let hook = state.store.event_hook(t.id, id_of(&id, "endpoint")?).await;
    let hook = hook.map_err(|e| store_error_for(e, ErrorCode::EventHookNotFound, "endpoint"))?;
    let list = state.store.event_deliveries(t.id, hook.id, 50).await.map_err(store_error)?;
    Ok(Json(List::of(list)))
}

#[utoipa::path(post, path = "/admin/v1/tenants/{tenant}/hooks/{id}/ping", tag = "admin: automation",
    params(("tenant" = String, Path, description = "Tenant id"), ("id" = String, Path, description = "Event endpoint id")),
    responses((status = 200, description = "A test event is on its way (it shows in the deliveries)", body = PingSent),
        (status = 404, description = "No such endpoint", body = hermes_wire::ErrorBody)))]
pub(crate) async fn ping(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, id)): Path<(String, String)>,
) -> Result<Json<PingSent>> {
    let t = caller.tenant(&state, &tenant, AdminOp::ManageHooks).await?;
    let hook = id_of(&id, "endpoint")?;
    let mut tx = caller.begin(&state, t.id).await?;
    let event = tx.ping_event_hook(hook).await;
    let event = event.map_err(|e| store_error_for(e, ErrorCode::EventHookNotFound, "endpoint"))?;
    tx.commit(Change::new("event_hook.pinged", "event_hook", hook)).await.map_err(store_error)?;
    Ok(Json(PingSent { event_id: event }))
}

#[utoipa::path(post, path = "/admin/v1/tenants/{tenant}/hooks/{id}/deliveries/{delivery}/resend", tag = "admin: automation",
    params(("tenant" = String, Path, description = "Tenant id"), ("id" = String, Path, description = "Event endpoint id"),
        ("delivery" = String, Path, description = "Delivery id (the `webhook-id` the receiver saw)")),
    responses((status = 202, description = "Due again now, under the same id, from the first attempt"),
        (status = 403, description = "The caller's role may not manage hooks", body = hermes_wire::ErrorBody),
        (status = 404, description = "No such endpoint or delivery", body = hermes_wire::ErrorBody),
        (status = 409, description = "It is still on its way", body = hermes_wire::ErrorBody)))]
pub(crate) async fn resend(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, id, delivery)): Path<(String, String, String)>,
) -> Result<axum::http::StatusCode> {
    let t = caller.tenant(&state, &tenant, AdminOp::ManageHooks).await?;
    let (hook, delivery) = (id_of(&id, "endpoint")?, id_of(&delivery, "delivery")?);
    let mut tx = caller.begin(&state, t.id).await?;
    tx.resend_event(hook, delivery).await.map_err(|e| store_error_for(e, ErrorCode::NotFound, "delivery"))?;
    let change = Change::new("event_delivery.resent", "event_delivery", delivery).after(ResendAudit { hook_id: hook });
    tx.commit(change).await.map_err(store_error)?;
    Ok(axum::http::StatusCode::ACCEPTED)
}

/// What the audit trail records of a resent delivery.
#[derive(serde::Serialize)]
struct ResendAudit {
    hook_id: uuid::Uuid,
}
