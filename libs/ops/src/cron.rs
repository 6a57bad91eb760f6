//! Cron jobs: created (the prompt scanned, the time zone, schedule, toolsets and delivery
//! checked), paused, resumed, run now and removed. `/v1/cron/jobs`, upstream's `/api/jobs`,
//! the admin API and `hermesctl cron` all come here, so a job is held to the same rules and
//! each change is recorded whichever door it came in by.

use chrono::Utc;

use hermes_core::outbox::DeliveryTarget;
use hermes_core::{AgentId, ErrorCode, JobState, TenantId, WorkspaceScope};
use hermes_store::Store;
use hermes_store::admin::{Audit, Change};
use hermes_store::cron::{Job, JobScript, NewJob};
use hermes_wire::v1::CreateJob;

use crate::{OpsError, Result};

/// Where a job's answer goes when the request does not say.
const DEFAULT_DELIVERY: &str = "local";

fn refused(code: ErrorCode, message: impl Into<String>) -> OpsError {
    OpsError::Refused { code, message: message.into() }
}

/// The job `c` asks for `agent`, checked: a prompt that is not an injection attempt (none
/// needed when the script is the job), a time zone and a schedule that can be read, known
/// toolsets, delivery targets that exist, a script in the scripts folder, jobs to take context
/// from that are the agent's.
async fn checked(store: &Store, (tenant, agent): (TenantId, AgentId), c: CreateJob) -> Result<NewJob> {
    let prompt = c.prompt.trim().to_owned();
    let script = c.script.as_deref().map(hermes_core::cron::script_path).transpose();
    let script = script.map_err(|e| OpsError::invalid("script", e))?;
    if c.no_agent && script.is_none() {
        let why = "no_agent needs a script: with no agent and no script there is nothing for the job to run";
        return Err(OpsError::invalid("no_agent", why));
    }
    if script.is_some() && store.agents().agent(tenant, agent).await?.workspace != WorkspaceScope::Agent {
        return Err(OpsError::invalid("script", hermes_core::cron::SCRIPTS_NEED_ONE_WORKSPACE));
    }
    if prompt.is_empty() && !c.no_agent {
        return Err(refused(ErrorCode::InvalidValue, "give the job a prompt"));
    }
    let workdir = c.workdir.as_deref().map(hermes_core::cron::workdir).transpose();
    let workdir = workdir.map_err(|e| OpsError::invalid("workdir", e))?;
    if c.context_from.len() > hermes_core::cron::MAX_CONTEXT_FROM {
        return Err(OpsError::invalid(
            "context_from",
            format!("name at most {} jobs", hermes_core::cron::MAX_CONTEXT_FROM),
        ));
    }
    let context_from = match store.automation().job_ids(tenant, agent, &c.context_from).await {
        Err(hermes_store::StoreError::Invalid(why)) => return Err(OpsError::invalid("context_from", why)),
        found => found?,
    };
    if let Some(finding) = hermes_threats::scan_strict(&prompt).first() {
        let why = format!("the prompt looks like an injection or exfiltration attempt ({})", finding.reason);
        return Err(refused(ErrorCode::PromptRefused, why));
    }
    let tz_name = match c.timezone {
        Some(tz) => tz,
        None => store.conversations().session_policy(tenant).await?.timezone.name().to_owned(),
    };
    hermes_schedule::time_zone(&tz_name).map_err(|e| refused(ErrorCode::InvalidTimezone, e.to_string()))?;
    let timing = hermes_schedule::timing(&c.schedule, &tz_name, c.repeat, Utc::now())
        .map_err(|e| refused(ErrorCode::InvalidSchedule, e.to_string()))?;
    if let Some(unknown) = c.enabled_toolsets.iter().flatten().find(|t| t.parse::<hermes_core::ToolsetName>().is_err())
    {
        return Err(refused(ErrorCode::InvalidValue, format!("no toolset `{unknown}` (GET /v1/toolsets lists them)")));
    }
    let deliver = c.deliver.unwrap_or_else(|| DEFAULT_DELIVERY.into());
    DeliveryTarget::list(&deliver).map_err(|e| refused(ErrorCode::InvalidValue, e.to_string()))?;
    let label = if prompt.is_empty() { script.clone().unwrap_or_default() } else { prompt.clone() };
    let name = c.name.unwrap_or_else(|| label.chars().take(50).collect());
    Ok(NewJob {
        agent_id: agent,
        name: name.trim().to_owned(),
        prompt,
        skills: c.skills,
        model: c.run_model.filter(|m| !m.trim().is_empty()),
        toolsets: c.enabled_toolsets,
        timing: (&timing).into(),
        deliver,
        origin: None,
        script: JobScript { script, no_agent: c.no_agent, context_from, workdir },
    })
}

/// Creates the job `c` asks for `agent`; `Conflict` when the agent has a job of that name.
pub async fn create(store: &Store, by: Audit, (tenant, agent): (TenantId, AgentId), c: CreateJob) -> Result<Job> {
    let new = checked(store, (tenant, agent), c).await?;
    let mut tx = store.audited(tenant, by).await?;
    let job = tx.create_job(&new).await?;
    tx.commit(Change::new("cron.created", "cron_job", job.id).after(JobAudit::of(&job))).await?;
    Ok(job)
}

/// A change of a job's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move<'a> {
    /// Stops its runs, with a reason people see.
    Pause(&'a str),
    /// Schedules it again from its next slot (what was missed is skipped).
    Resume,
    /// Due now: the scheduler starts it within a second.
    RunNow,
}

/// Moves `job` as `to` says; the job as it now is.
pub async fn set_state(store: &Store, by: Audit, job: &Job, to: Move<'_>) -> Result<Job> {
    let now = Utc::now();
    let (paused, next, action) = match to {
        Move::Pause(reason) => (Some(reason), None, "cron.paused"),
        Move::Resume => {
            let next = hermes_schedule::resume_at(&job.schedule, &job.timezone, now)
                .map_err(|e| refused(ErrorCode::InvalidSchedule, e.to_string()))?;
            (None, Some(next), "cron.resumed")
        }
        Move::RunNow => (None, Some(now), "cron.run_now"),
    };
    let mut tx = store.audited(job.tenant_id, by).await?;
    let changed = tx.set_job_state(job.id, paused, next).await?;
    let change = Change::new(action, "cron_job", job.id)
        .before(StateAudit { state: job.state })
        .after(StateAudit { state: changed.state });
    tx.commit(change).await?;
    Ok(changed)
}

/// Removes `job` and its runs.
pub async fn remove(store: &Store, by: Audit, job: &Job) -> Result<()> {
    let mut tx = store.audited(job.tenant_id, by).await?;
    if !tx.delete_job(job.id).await? {
        return Err(OpsError::NotFound { code: ErrorCode::JobNotFound, what: "cron job" });
    }
    tx.commit(Change::new("cron.removed", "cron_job", job.id).before(JobAudit::of(job))).await?;
    Ok(())
}

/// What the audit trail records of a job's change of state.
#[derive(serde::Serialize)]
struct StateAudit {
    state: JobState,
}

/// What the audit trail records of a job made or removed (its prompt is the tenant's data,
/// not the log's).
#[derive(serde::Serialize)]
struct JobAudit<'a> {
    name: &'a str,
    schedule: &'a str,
    state: JobState,
}

impl<'a> JobAudit<'a> {
    fn of(job: &'a Job) -> Self {
        Self { name: &job.name, schedule: &job.schedule_display, state: job.state }
    }
}
