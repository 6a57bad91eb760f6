//! `/v1/cron/jobs`: scheduled agent runs, as upstream's `/api/jobs`. A job has a prompt, a
//! schedule (`every 30m`, a cron expression, a time, or a delay; in the job's time zone, by
//! default the tenant's) and a delivery target; its runs are browsable. Prompts are scanned
//! for injection and exfiltration patterns on create. A key restricted to one agent sees only
//! that agent's jobs; another tenant's job is a 404 like a missing one.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;

use hermes_http::ApiJson;
use hermes_ops::cron::{self as ops, Move};
use hermes_store::KeyAuth;
use hermes_store::cron::Job;
use hermes_wire::Slice;
use hermes_wire::v1::{CreateJob, CronJob, CronRun, Deleted};

use crate::agents::resolve_agent;
use crate::auth::{Caller, key_audit};
use crate::documented::{JobPath, NoApiKey, NoSuchJob};
use crate::errors::{Failure, resource};
use crate::shown::cron_job;
use crate::state::AppState;
use crate::visible::{CallerObject, Visible};

/// This module's handlers' error: a store error is about a cron job.
type Result<T> = std::result::Result<T, Failure<resource::CronJob>>;

/// The caller's job `id` (or name).
impl CallerObject for Job {
    type Path = JobPath;
    type Missing = Failure<resource::CronJob>;

    async fn find(state: &AppState, auth: &KeyAuth, id: &str) -> Result<Self> {
        Ok(state.store.automation().find_job(auth.tenant_id, auth.agent_id, id).await?)
    }
}

#[utoipa::path(get, path = "/v1/cron/jobs", tag = "cron",
    responses((status = 200, description = "The tenant's cron jobs", body = Slice<CronJob>), NoApiKey))]
pub(crate) async fn list(State(state): State<AppState>, Caller(auth): Caller) -> Result<Json<Slice<CronJob>>> {
    let jobs = state.store.automation().list_jobs(auth.tenant_id, auth.agent_id).await?;
    Ok(Json(Slice::whole(jobs.into_iter().map(cron_job).collect())))
}

#[utoipa::path(post, path = "/v1/cron/jobs", tag = "cron", request_body = CreateJob,
    responses((status = 201, description = "The job, with its first run", body = CronJob), (status = 400, description = "Invalid request (a schedule that cannot be read says why)", body = hermes_wire::ErrorBody), (status = 409, description = "The agent has a job of that name", body = hermes_wire::ErrorBody)))]
pub(crate) async fn create(
    State(state): State<AppState>,
    Caller(auth): Caller,
    ApiJson(c): ApiJson<CreateJob>,
) -> Result<(StatusCode, Json<CronJob>)> {
    Ok((StatusCode::CREATED, Json(cron_job(create_job(&state, &auth, c).await?))))
}

/// Creates the job `c` asks for, for the agent its `model` names (the key's agent, or the
/// tenant's only agent, when absent). A key kept to some toolsets makes jobs kept to them
/// too: its runs never get tools the key's own turns do not.
pub(crate) async fn create_job(state: &AppState, auth: &KeyAuth, mut c: CreateJob) -> Result<Job> {
    let agent = resolve_agent(state, auth, c.model.as_deref()).await?;
    if let Some(allowed) = state.store.tenancy().api_key_toolsets(auth.tenant_id, auth.key_id).await? {
        c.enabled_toolsets = Some(hermes_core::toolsets::within(c.enabled_toolsets.take(), &allowed));
    }
    Ok(ops::create(&state.store, key_audit(auth), (auth.tenant_id, agent.id), c).await?)
}

#[utoipa::path(get, path = "/v1/cron/jobs/{id}", tag = "cron", params(JobPath),
    responses((status = 200, description = "The job", body = CronJob), NoSuchJob))]
pub(crate) async fn get(Visible { found: job, .. }: Visible<Job>) -> Result<Json<CronJob>> {
    Ok(Json(cron_job(job)))
}

#[utoipa::path(delete, path = "/v1/cron/jobs/{id}", tag = "cron", params(JobPath),
    responses((status = 200, description = "Removed", body = Deleted), NoSuchJob))]
pub(crate) async fn delete(Visible { state, auth, found: job, .. }: Visible<Job>) -> Result<Json<Deleted>> {
    ops::remove(&state.store, key_audit(&auth), &job).await?;
    Ok(Json(Deleted::new(job.id, "cron.job.deleted")))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Pause {
    reason: Option<String>,
}

#[utoipa::path(post, path = "/v1/cron/jobs/{id}/pause", tag = "cron", params(JobPath),
    responses((status = 200, description = "Paused", body = CronJob), NoSuchJob))]
pub(crate) async fn pause(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(JobPath { id }): Path<JobPath>,
    body: Option<ApiJson<Pause>>,
) -> Result<Json<CronJob>> {
    let job = Job::find(&state, &auth, &id).await?;
    let reason = body.and_then(|ApiJson(p)| p.reason).unwrap_or_else(|| "paused through the API".into());
    Ok(Json(cron_job(ops::set_state(&state.store, key_audit(&auth), &job, Move::Pause(&reason)).await?)))
}

#[utoipa::path(post, path = "/v1/cron/jobs/{id}/resume", tag = "cron", params(JobPath),
    responses((status = 200, description = "Scheduled again, from its next slot", body = CronJob), NoSuchJob))]
pub(crate) async fn resume(Visible { state, auth, found: job, .. }: Visible<Job>) -> Result<Json<CronJob>> {
    Ok(Json(cron_job(ops::set_state(&state.store, key_audit(&auth), &job, Move::Resume).await?)))
}

#[utoipa::path(post, path = "/v1/cron/jobs/{id}/run", tag = "cron", params(JobPath),
    responses((status = 202, description = "Due now: the scheduler starts it within a second", body = CronJob), NoSuchJob))]
pub(crate) async fn run(Visible { state, auth, found: job, .. }: Visible<Job>) -> Result<(StatusCode, Json<CronJob>)> {
    let due = ops::set_state(&state.store, key_audit(&auth), &job, Move::RunNow).await?;
    Ok((StatusCode::ACCEPTED, Json(cron_job(due))))
}

#[utoipa::path(get, path = "/v1/cron/jobs/{id}/runs", tag = "cron", params(JobPath),
    responses((status = 200, description = "The job's latest runs with their outputs, newest first", body = Slice<CronRun>), NoSuchJob))]
pub(crate) async fn runs(Visible { state, auth, found: job, .. }: Visible<Job>) -> Result<Json<Slice<CronRun>>> {
    let runs = state.store.automation().job_runs(auth.tenant_id, job.id, 50).await?;
    Ok(Json(Slice::whole(runs)))
}
