//! Upstream's `/api/jobs`: the cron jobs of `/v1/cron/jobs` in upstream's shapes, so clients
//! written against Hermes Agent's API server manage cron here unchanged: `{"jobs": [...]}`,
//! `{"job": {...}}`, `{"ok": true}`, errors as `{"error": "..."}`, and upstream's job fields
//! (`schedule` an object, `repeat`, `enabled`, `skill`). Same key, same tenant walls: another
//! tenant's job is a 404 like a missing one.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use hermes_core::JobState;
use hermes_http::{ApiError, ApiJson};
use hermes_ops::cron::{self as ops, Move};
use hermes_store::cron::{Job, JobChanges};
use hermes_wire::v1::{
    CreateJob, UpstreamCronJob, UpstreamError, UpstreamJobBody, UpstreamJobs, UpstreamOk, UpstreamRepeat,
    UpstreamSchedule,
};

use crate::auth::{Caller, key_audit};
use crate::cron::create_job;
use crate::documented::{JobIdPath, NoApiKey};
use crate::state::AppState;
use crate::visible::{Body, CallerObject};

/// Upstream's limits.
const MAX_NAME: usize = 200;
const MAX_PROMPT: usize = 5000;

/// An error as upstream writes it: `{"error": "..."}`.
#[derive(Debug)]
struct Refusal(StatusCode, String);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        (self.0, Json(UpstreamError { error: self.1 })).into_response()
    }
}

fn error(status: StatusCode, message: impl Into<String>) -> Refusal {
    Refusal(status, message.into())
}

fn from_api(e: ApiError) -> Refusal {
    error(e.status, e.message)
}

/// A job in upstream's shape.
fn upstream(job: &Job) -> UpstreamCronJob {
    UpstreamCronJob {
        id: job.id,
        name: job.name.clone(),
        prompt: job.prompt.clone(),
        skills: job.skills.clone(),
        skill: job.skills.first().cloned(),
        model: job.model.clone(),
        provider: None,
        base_url: None,
        script: job.script.clone(),
        no_agent: job.no_agent,
        schedule: UpstreamSchedule {
            kind: job.schedule_kind.clone(),
            expr: job.schedule.clone(),
            display: job.schedule_display.clone(),
        },
        schedule_display: job.schedule_display.clone(),
        timezone: job.timezone.clone(),
        repeat: UpstreamRepeat { times: job.repeat_times, completed: job.repeat_completed },
        enabled: job.state != JobState::Paused,
        state: job.state,
        paused_at: None,
        paused_reason: job.paused_reason.clone(),
        created_at: job.created_at,
        next_run_at: job.next_run_at,
        last_run_at: job.last_run_at,
        last_status: job.last_status,
        last_error: job.last_error.clone(),
        last_delivery_error: job.last_delivery_error.clone(),
        deliver: job.deliver.clone(),
        origin: job.origin.clone(),
        enabled_toolsets: job.toolsets.clone(),
        context_from: job.context_from.iter().copied().map(hermes_core::JobId::from).collect(),
        workdir: job.workdir.clone(),
        agent_id: job.agent_id,
    }
}

/// `{"job": {...}}`.
fn one(job: &Job) -> Response {
    Json(UpstreamJobBody { job: upstream(job) }).into_response()
}

/// `?include_disabled=true` lists paused jobs too.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub(crate) struct ListQuery {
    include_disabled: Option<String>,
}

#[utoipa::path(get, path = "/api/jobs", tag = "upstream cron", params(ListQuery),
    responses((status = 200, description = "`{\"jobs\": [...]}` (paused jobs only with include_disabled=true)", body = UpstreamJobs),
        NoApiKey))]
pub(crate) async fn list(State(state): State<AppState>, Caller(auth): Caller, Query(q): Query<ListQuery>) -> Response {
    let all = matches!(q.include_disabled.as_deref().map(str::to_ascii_lowercase).as_deref(), Some("true" | "1"));
    match state.store.automation().list_jobs(auth.tenant_id, auth.agent_id).await {
        Ok(jobs) => {
            let jobs = jobs.iter().filter(|j| all || j.state != JobState::Paused).map(upstream).collect();
            Json(UpstreamJobs { jobs }).into_response()
        }
        Err(e) => from_api(ApiError::internal(e)).into_response(),
    }
}

/// Upstream's create body: every field of upstream's job, with upstream's meaning (`model` is
/// the runs' model). A field it does not know is refused, never dropped.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UpstreamJob {
    name: Option<String>,
    schedule: Option<String>,
    prompt: Option<String>,
    deliver: Option<String>,
    skills: Option<Vec<String>>,
    skill: Option<String>,
    repeat: Option<i64>,
    /// The runs' model, on the agent's provider (upstream's per-job override).
    model: Option<String>,
    /// Upstream's per-job provider: only `null` (a job runs on its agent's provider).
    provider: Option<String>,
    /// Upstream's per-job endpoint: only `null`, as `provider`.
    base_url: Option<String>,
    /// A script in the agent's scripts folder (`/workspace/.hermes/scripts/`), run first.
    script: Option<String>,
    /// The script is the job: its output is delivered verbatim, no model call.
    no_agent: Option<bool>,
    /// A job id (or name), or a list of them: their latest output goes above the prompt.
    #[schema(value_type = Option<Vec<String>>)]
    context_from: Option<OneOrMany>,
    enabled_toolsets: Option<Vec<String>>,
    /// The run's working folder in the workspace (commands, relative paths, the script, context files).
    workdir: Option<String>,
    enabled: Option<bool>,
    /// Which agent runs it (by name): an addition of ours; default the key's agent or the
    /// tenant's only agent.
    agent: Option<String>,
}

/// Upstream's PATCH body: the fields upstream lets an update change. Any other is refused.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UpstreamJobPatch {
    name: Option<String>,
    schedule: Option<String>,
    prompt: Option<String>,
    deliver: Option<String>,
    skills: Option<Vec<String>>,
    skill: Option<String>,
    repeat: Option<i64>,
    enabled: Option<bool>,
}

/// A string or a list of strings (upstream's `context_from`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        match self {
            Self::One(one) => vec![one],
            Self::Many(many) => many,
        }
    }
}

/// `skills`, else `skill` as a list of one.
fn skill_list(skills: &Option<Vec<String>>, skill: &Option<String>) -> Option<Vec<String>> {
    match (skills, skill) {
        (Some(list), _) => Some(list.clone()),
        (None, Some(one)) => Some(vec![one.clone()]),
        (None, None) => None,
    }
}

/// Upstream's checks, with upstream's words.
fn check(
    name: Option<&str>,
    schedule: Option<&str>,
    prompt: &str,
    repeat: Option<i64>,
    creating: bool,
) -> Result<(), Refusal> {
    let bad = |m: String| Err(error(StatusCode::BAD_REQUEST, m));
    let name = name.map(str::trim).unwrap_or("");
    if creating && name.is_empty() {
        return bad("Name is required".into());
    }
    if name.chars().count() > MAX_NAME {
        return bad(format!("Name must be ≤ {MAX_NAME} characters"));
    }
    if creating && schedule.map(str::trim).unwrap_or("").is_empty() {
        return bad("Schedule is required".into());
    }
    if prompt.chars().count() > MAX_PROMPT {
        return bad(format!("Prompt must be ≤ {MAX_PROMPT} characters"));
    }
    if repeat.is_some_and(|r| r < 1) {
        return bad("Repeat must be a positive integer".into());
    }
    Ok(())
}

impl UpstreamJob {
    /// The job to create, as `/v1/cron/jobs` takes it.
    fn into_create(self) -> Result<CreateJob, Refusal> {
        let prompt = self.prompt.unwrap_or_default();
        check(self.name.as_deref(), self.schedule.as_deref(), &prompt, self.repeat, true)?;
        for (field, given) in [("provider", &self.provider), ("base_url", &self.base_url)] {
            if given.as_deref().is_some_and(|v| !v.trim().is_empty()) {
                let why = format!(
                    "{field} cannot be set per job here: a job runs on its agent's provider (set `model` to pick another of its models)"
                );
                return Err(error(StatusCode::BAD_REQUEST, why));
            }
        }
        let skills = skill_list(&self.skills, &self.skill).unwrap_or_default();
        let no_agent = self.no_agent.unwrap_or(false);
        if prompt.trim().is_empty() && skills.is_empty() && !no_agent {
            return Err(error(StatusCode::BAD_REQUEST, "A prompt or a skill is required"));
        }
        let prompt = if prompt.trim().is_empty() && !skills.is_empty() {
            format!("Run the skill {}.", skills.join(", "))
        } else {
            prompt
        };
        Ok(CreateJob {
            prompt,
            schedule: self.schedule.unwrap_or_default(),
            name: self.name.map(|n| n.trim().to_owned()),
            model: self.agent,
            timezone: None,
            repeat: self.repeat.and_then(|r| i32::try_from(r).ok()),
            deliver: Some(self.deliver.unwrap_or_else(|| "local".into())),
            skills,
            run_model: self.model,
            enabled_toolsets: self.enabled_toolsets,
            script: self.script,
            no_agent,
            context_from: self.context_from.map(OneOrMany::into_vec).unwrap_or_default(),
            workdir: self.workdir,
        })
    }
}

#[utoipa::path(post, path = "/api/jobs", tag = "upstream cron", request_body = UpstreamJob,
    responses((status = 200, description = "`{\"job\": {...}}`", body = UpstreamJobBody),
        (status = 400, description = "`{\"error\": \"...\"}`: a missing name or schedule, a schedule that cannot be read, a refused prompt", body = UpstreamError)))]
pub(crate) async fn create(State(state): State<AppState>, Caller(auth): Caller, body: Body<UpstreamJob>) -> Response {
    let ApiJson(b) = match body {
        Ok(b) => b,
        Err(e) => return from_api(e).into_response(),
    };
    let disabled = b.enabled == Some(false);
    let create = match b.into_create() {
        Ok(create) => create,
        Err(refused) => return refused.into_response(),
    };
    let job = match create_job(&state, &auth, create).await {
        Ok(job) => job,
        Err(e) => return from_api(e.error()).into_response(),
    };
    if !disabled {
        return one(&job);
    }
    match set_state(&state, &auth, &job, Move::Pause("disabled through /api/jobs")).await {
        Ok(job) => one(&job),
        Err(refused) => refused.into_response(),
    }
}

async fn found(state: &AppState, auth: &hermes_store::KeyAuth, id: &str) -> Result<Job, Refusal> {
    Job::find(state, auth, id).await.map_err(|_| error(StatusCode::NOT_FOUND, "Job not found"))
}

#[utoipa::path(get, path = "/api/jobs/{id}", tag = "upstream cron", params(JobIdPath),
    responses((status = 200, description = "`{\"job\": {...}}`", body = UpstreamJobBody), (status = 404, description = "`{\"error\": \"Job not found\"}`", body = UpstreamError)))]
pub(crate) async fn get(State(state): State<AppState>, Caller(auth): Caller, Path(id): Path<String>) -> Response {
    match found(&state, &auth, &id).await {
        Ok(job) => one(&job),
        Err(missing) => missing.into_response(),
    }
}

#[utoipa::path(patch, path = "/api/jobs/{id}", tag = "upstream cron", params(JobIdPath), request_body = UpstreamJobPatch,
    responses((status = 200, description = "`{\"job\": {...}}`", body = UpstreamJobBody), (status = 400, description = "No valid fields, or a bad value", body = UpstreamError),
        (status = 404, description = "`{\"error\": \"Job not found\"}`", body = UpstreamError)))]
pub(crate) async fn update(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
    body: Body<UpstreamJobPatch>,
) -> Response {
    let job = match found(&state, &auth, &id).await {
        Ok(job) => job,
        Err(missing) => return missing.into_response(),
    };
    let ApiJson(b) = match body {
        Ok(b) => b,
        Err(e) => return from_api(e).into_response(),
    };
    let prompt = b.prompt.as_deref().unwrap_or_default();
    if let Err(refused) = check(b.name.as_deref(), b.schedule.as_deref(), prompt, b.repeat, false) {
        return refused.into_response();
    }
    match change(&state, &auth, job, b).await {
        Ok(job) => one(&job),
        Err(refused) => refused.into_response(),
    }
}

/// Applies an upstream PATCH: the allowed fields only (name, schedule, prompt, deliver,
/// skills, skill, repeat, enabled).
async fn change(state: &AppState, auth: &hermes_store::KeyAuth, job: Job, b: UpstreamJobPatch) -> Result<Job, Refusal> {
    let bad = |m: String| error(StatusCode::BAD_REQUEST, m);
    let mut changes = JobChanges {
        name: b.name.as_deref().map(str::trim).filter(|n| !n.is_empty()).map(str::to_owned),
        prompt: b.prompt.as_deref().map(str::trim).filter(|p| !p.is_empty()).map(str::to_owned),
        skills: skill_list(&b.skills, &b.skill),
        deliver: b.deliver.clone(),
        timing: None,
    };
    if let Some(prompt) = &changes.prompt
        && let Some(finding) = hermes_threats::scan_strict(prompt).first()
    {
        return Err(bad(format!(
            "Prompt refused: it looks like an injection or exfiltration attempt ({})",
            finding.reason
        )));
    }
    if let Some(deliver) = &changes.deliver {
        hermes_core::outbox::DeliveryTarget::list(deliver).map_err(|e| bad(e.to_string()))?;
    }
    if b.schedule.is_some() || b.repeat.is_some() {
        let schedule = b.schedule.as_deref().unwrap_or(&job.schedule);
        let repeat = b.repeat.and_then(|r| i32::try_from(r).ok()).or(job.repeat_times);
        let timing = hermes_schedule::timing(schedule, &job.timezone, repeat, chrono::Utc::now())
            .map_err(|e| bad(e.to_string()))?;
        changes.timing = Some((&timing).into());
    }
    let touched = changes.name.is_some()
        || changes.prompt.is_some()
        || changes.skills.is_some()
        || changes.deliver.is_some()
        || changes.timing.is_some();
    if !touched && b.enabled.is_none() {
        return Err(bad("No valid fields to update".into()));
    }
    let internal = |e: hermes_store::StoreError| from_api(ApiError::internal(e));
    let mut job = if touched {
        state.store.automation().update_job(auth.tenant_id, job.id, &changes).await.map_err(internal)?
    } else {
        job
    };
    match b.enabled {
        Some(false) if job.state != JobState::Paused => {
            job = set_state(state, auth, &job, Move::Pause("disabled through /api/jobs")).await?;
        }
        Some(true) if job.state == JobState::Paused => {
            job = set_state(state, auth, &job, Move::Resume).await?;
        }
        _ => {}
    }
    Ok(job)
}

/// Moves `job` as `to` says, as the key's change.
async fn set_state(state: &AppState, auth: &hermes_store::KeyAuth, job: &Job, to: Move<'_>) -> Result<Job, Refusal> {
    ops::set_state(&state.store, key_audit(auth), job, to).await.map_err(ops_refusal)
}

/// A use case's refusal in upstream's shape.
fn ops_refusal(e: hermes_ops::OpsError) -> Refusal {
    from_api(crate::errors::refusal(e).unwrap_or_else(ApiError::internal))
}

#[utoipa::path(delete, path = "/api/jobs/{id}", tag = "upstream cron", params(JobIdPath),
    responses((status = 200, description = "`{\"ok\": true}`", body = UpstreamOk), (status = 404, description = "`{\"error\": \"Job not found\"}`", body = UpstreamError)))]
pub(crate) async fn delete(State(state): State<AppState>, Caller(auth): Caller, Path(id): Path<String>) -> Response {
    let job = match found(&state, &auth, &id).await {
        Ok(job) => job,
        Err(missing) => return missing.into_response(),
    };
    match ops::remove(&state.store, key_audit(&auth), &job).await {
        Ok(()) => Json(UpstreamOk { ok: true }).into_response(),
        Err(hermes_ops::OpsError::NotFound { .. }) => error(StatusCode::NOT_FOUND, "Job not found").into_response(),
        Err(e) => ops_refusal(e).into_response(),
    }
}

/// Which of the three actions.
#[derive(Debug, Clone, Copy)]
enum Action {
    Pause,
    Resume,
    Run,
}

async fn act(state: &AppState, auth: &hermes_store::KeyAuth, id: &str, action: Action) -> Response {
    let job = match found(state, auth, id).await {
        Ok(job) => job,
        Err(missing) => return missing.into_response(),
    };
    let to = match action {
        Action::Pause => Move::Pause("paused through /api/jobs"),
        Action::Resume => Move::Resume,
        Action::Run => Move::RunNow,
    };
    let done = set_state(state, auth, &job, to).await;
    match done {
        Ok(job) => one(&job),
        Err(refused) => refused.into_response(),
    }
}

#[utoipa::path(post, path = "/api/jobs/{id}/pause", tag = "upstream cron", params(JobIdPath),
    responses((status = 200, description = "`{\"job\": {...}}`", body = UpstreamJobBody), (status = 404, description = "`{\"error\": \"Job not found\"}`", body = UpstreamError)))]
pub(crate) async fn pause(State(state): State<AppState>, Caller(auth): Caller, Path(id): Path<String>) -> Response {
    act(&state, &auth, &id, Action::Pause).await
}

#[utoipa::path(post, path = "/api/jobs/{id}/resume", tag = "upstream cron", params(JobIdPath),
    responses((status = 200, description = "`{\"job\": {...}}`", body = UpstreamJobBody), (status = 404, description = "`{\"error\": \"Job not found\"}`", body = UpstreamError)))]
pub(crate) async fn resume_job(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
) -> Response {
    act(&state, &auth, &id, Action::Resume).await
}

#[utoipa::path(post, path = "/api/jobs/{id}/run", tag = "upstream cron", params(JobIdPath),
    responses((status = 200, description = "`{\"job\": {...}}`: due now, the scheduler starts it within a second", body = UpstreamJobBody),
        (status = 404, description = "`{\"error\": \"Job not found\"}`", body = UpstreamError)))]
pub(crate) async fn run(State(state): State<AppState>, Caller(auth): Caller, Path(id): Path<String>) -> Response {
    act(&state, &auth, &id, Action::Run).await
}
