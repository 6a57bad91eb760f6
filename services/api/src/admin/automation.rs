//! What runs without anyone typing: cron jobs (next run, history, run now, pause, resume),
//! webhook triggers, and the endpoints told what happened (their deliveries; a test event).
//! Creating and editing them stays in the tenant API (`/v1/cron/jobs`, `/v1/webhooks`,
//! `/v1/event-hooks`), which already checks prompts and schedules.

use axum::Json;
use axum::extract::Path;
use serde_json::Value;

use hermes_core::access::AdminOp;
use hermes_core::{ErrorCode, TenantId};
use hermes_http::ApiError;
use hermes_ops::cron::Move;
use hermes_store::admin::Change;
use hermes_wire::List;
use hermes_wire::admin::{Hooks, PingSent};
use hermes_wire::v1::{CronJob, CronRun, EventDelivery};

use crate::admin::errors::{Result, ops_error, path_id, store_error, store_error_for};
use crate::admin::tenant_call::TenantCall;
use crate::documented::{EndpointPath, JobIdPath, NoSuchEndpoint, NoSuchJob, ObjectPath, TenantNotFound, TenantPath};

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/cron", tag = "admin: automation", params(TenantPath),
    responses((status = 200, description = "The tenant's cron jobs with their next and last runs", body = List<CronJob>),
        TenantNotFound))]
pub(crate) async fn jobs(call: TenantCall) -> Result<Json<List<CronJob>>> {
    call.list_shown(
        AdminOp::ViewCron,
        async |store, t| store.automation().list_jobs(t, None).await,
        crate::shown::cron_job,
    )
    .await
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/cron/{id}/runs", tag = "admin: automation",
    params(TenantPath, JobIdPath),
    responses((status = 200, description = "The job's latest runs with their outputs, newest first", body = List<CronRun>),
        NoSuchJob))]
pub(crate) async fn runs(call: TenantCall, Path(ObjectPath { id }): Path<ObjectPath>) -> Result<Json<List<CronRun>>> {
    let t = call.allow(AdminOp::ViewCron).await?;
    let job = job(&call, t.id, &id).await?;
    let runs = call.state.store.automation().job_runs(t.id, job.id, 50).await.map_err(store_error)?;
    Ok(Json(List::of(runs)))
}

/// The tenant's job (any agent's) `raw` names.
async fn job(call: &TenantCall, tenant: TenantId, raw: &str) -> Result<hermes_store::cron::Job> {
    let id: uuid::Uuid = path_id(raw, ErrorCode::NotFound, "job")?;
    let job = call.state.store.automation().find_job(tenant, None, &id.to_string()).await;
    job.map_err(|e| store_error_for(e, ErrorCode::JobNotFound, "job"))
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
    params(TenantPath, JobIdPath,
        ("action" = String, Path, description = "`run`, `pause` or `resume`")),
    responses((status = 200, description = "The job as it now is", body = CronJob),
        (status = 403, description = "The caller's role may not manage cron", body = hermes_wire::ErrorBody),
        (status = 404, description = "No such job (or action)", body = hermes_wire::ErrorBody)))]
pub(crate) async fn act(
    call: TenantCall,
    Path((_, id, action)): Path<(String, String, String)>,
) -> Result<Json<CronJob>> {
    let t = call.allow(AdminOp::ManageCron).await?;
    let job = job(&call, t.id, &id).await?;
    let action: JobAction = serde_json::from_value(Value::String(action))
        .map_err(|_| ApiError::not_found(ErrorCode::NotFound, "no such action: run, pause or resume"))?;
    let to = match action {
        JobAction::Run => Move::RunNow,
        JobAction::Pause => Move::Pause("paused in the console"),
        JobAction::Resume => Move::Resume,
    };
    let changed = hermes_ops::cron::set_state(&call.state.store, call.caller.audit(), &job, to).await;
    Ok(Json(crate::shown::cron_job(changed.map_err(ops_error)?)))
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/hooks", tag = "admin: automation", params(TenantPath),
    responses((status = 200, description = "Webhook triggers and event endpoints (secrets never shown)", body = Hooks),
        TenantNotFound))]
pub(crate) async fn hooks(call: TenantCall) -> Result<Json<Hooks>> {
    let t = call.allow(AdminOp::ViewHooks).await?;
    let webhooks = call.state.store.automation().list_webhooks(t.id).await.map_err(store_error)?;
    let endpoints = call.state.store.automation().list_event_hooks(t.id).await.map_err(store_error)?;
    Ok(Json(Hooks { webhooks: webhooks.into_iter().map(|hook| hook.shown).collect(), event_hooks: endpoints }))
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/hooks/{id}/deliveries", tag = "admin: automation",
    params(TenantPath, EndpointPath),
    responses((status = 200, description = "The endpoint's latest deliveries and their attempts", body = List<EventDelivery>),
        NoSuchEndpoint))]
pub(crate) async fn deliveries(
    call: TenantCall,
    Path(ObjectPath { id }): Path<ObjectPath>,
) -> Result<Json<List<EventDelivery>>> {
    let t = call.allow(AdminOp::ViewHooks).await?;
    let hook = call.state.store.automation().event_hook(t.id, path_id(&id, ErrorCode::NotFound, "endpoint")?).await;
    let hook = hook.map_err(|e| store_error_for(e, ErrorCode::EventHookNotFound, "endpoint"))?;
    let list = call.state.store.automation().event_deliveries(t.id, hook.id, 50).await.map_err(store_error)?;
    Ok(Json(List::of(list)))
}

#[utoipa::path(post, path = "/admin/v1/tenants/{tenant}/hooks/{id}/ping", tag = "admin: automation",
    params(TenantPath, EndpointPath),
    responses((status = 200, description = "A test event is on its way (it shows in the deliveries)", body = PingSent),
        NoSuchEndpoint))]
pub(crate) async fn ping(call: TenantCall, Path(ObjectPath { id }): Path<ObjectPath>) -> Result<Json<PingSent>> {
    let t = call.allow(AdminOp::ManageHooks).await?;
    let hook: hermes_core::EventHookId = path_id(&id, ErrorCode::NotFound, "endpoint")?;
    let mut tx = call.begin(t.id).await?;
    let event = tx.ping_event_hook(hook).await;
    let event = event.map_err(|e| store_error_for(e, ErrorCode::EventHookNotFound, "endpoint"))?;
    tx.commit(Change::new("event_hook.pinged", "event_hook", hook)).await.map_err(store_error)?;
    Ok(Json(PingSent { event_id: event }))
}

#[utoipa::path(post, path = "/admin/v1/tenants/{tenant}/hooks/{id}/deliveries/{delivery}/resend", tag = "admin: automation",
    params(TenantPath, EndpointPath,
        ("delivery" = String, Path, description = "Delivery id (the `webhook-id` the receiver saw)")),
    responses((status = 202, description = "Due again now, under the same id, from the first attempt"),
        (status = 403, description = "The caller's role may not manage hooks", body = hermes_wire::ErrorBody),
        (status = 404, description = "No such endpoint or delivery", body = hermes_wire::ErrorBody),
        (status = 409, description = "It is still on its way", body = hermes_wire::ErrorBody)))]
pub(crate) async fn resend(
    call: TenantCall,
    Path((_, id, delivery)): Path<(String, String, String)>,
) -> Result<axum::http::StatusCode> {
    let t = call.allow(AdminOp::ManageHooks).await?;
    let hook: hermes_core::EventHookId = path_id(&id, ErrorCode::NotFound, "endpoint")?;
    let delivery: hermes_core::EventDeliveryId = path_id(&delivery, ErrorCode::NotFound, "delivery")?;
    let mut tx = call.begin(t.id).await?;
    tx.resend_event(hook, delivery).await.map_err(|e| store_error_for(e, ErrorCode::NotFound, "delivery"))?;
    let change = Change::new("event_delivery.resent", "event_delivery", delivery).after(ResendAudit { hook_id: hook });
    tx.commit(change).await.map_err(store_error)?;
    Ok(axum::http::StatusCode::ACCEPTED)
}

/// What the audit trail records of a resent delivery.
#[derive(serde::Serialize)]
struct ResendAudit {
    hook_id: hermes_core::EventHookId,
}
