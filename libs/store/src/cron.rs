//! Cron jobs and their runs (migration 0028). Jobs are the tenant's; the scheduler claims due
//! ones across tenants ([`System::claim_due_jobs`](crate::views::System::claim_due_jobs), in
//! [`crate::system::cron`]), deciding each job's next run with the schedule rules of
//! `hermes-schedule` inside the claiming transaction.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

pub use hermes_core::cron::JobTiming;
use hermes_core::outbox::Destination;
use hermes_core::{AgentId, CronRunStatus, JobId, JobState, TenantId, TurnId};

use crate::admin::audited::tenant_writes;

use crate::{Result, StoreError, views::Automation};
pub use hermes_wire::v1::{CronJob, CronRun};

/// A job to create.
#[derive(Debug, Clone)]
pub struct NewJob {
    pub agent_id: AgentId,
    pub name: String,
    pub prompt: String,
    pub skills: Vec<String>,
    pub model: Option<String>,
    /// The toolsets its runs may use (of the agent's); `None`: all the agent's.
    pub toolsets: Option<Vec<String>>,
    pub timing: JobTiming,
    pub deliver: String,
    pub origin: Option<Destination>,
    pub script: JobScript,
}

/// What a job runs before (or instead of) its agent: upstream's `script`, `no_agent`,
/// `context_from` and `workdir` (see [`CronJob`]). The default: none of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobScript {
    pub script: Option<String>,
    pub no_agent: bool,
    pub context_from: Vec<JobId>,
    pub workdir: Option<String>,
}

/// Changes to a job (`None`: unchanged); a new timing schedules it again.
#[derive(Debug, Clone, Default)]
pub struct JobChanges {
    pub name: Option<String>,
    pub prompt: Option<String>,
    pub skills: Option<Vec<String>>,
    pub deliver: Option<String>,
    pub timing: Option<JobTiming>,
}

/// A stored job: the job as the API shows it, with the tenant whose it is (the scheduler
/// claims every tenant's). It reads as its [`CronJob`].
#[derive(Debug, Clone, serde::Serialize, sqlx::FromRow)]
pub struct Job {
    #[serde(skip)]
    #[sqlx(try_from = "crate::rows::Id")]
    pub tenant_id: TenantId,
    #[serde(flatten)]
    #[sqlx(flatten)]
    pub job: CronJob,
}

impl std::ops::Deref for Job {
    type Target = CronJob;

    fn deref(&self) -> &CronJob {
        &self.job
    }
}

/// What the scheduler decided for a due job.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Run it now (false: the slot is skipped).
    pub run: bool,
    /// Its next run (none: no more runs for now).
    pub next_run_at: Option<DateTime<Utc>>,
    /// `Scheduled`, `Completed` (a missed one-shot) or `Error` (no next run can be computed).
    pub state: JobState,
    pub error: Option<String>,
}

/// A run the scheduler claimed: start it.
#[derive(Debug, Clone)]
pub struct ClaimedRun {
    pub run_id: hermes_core::CronRunId,
    pub job: Job,
    pub scheduled_for: DateTime<Utc>,
    /// Shown to the run above the job's prompt (what fired it, for a fired run).
    pub context: Option<String>,
}

/// What a job sets for its runs.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RunSettings {
    #[sqlx(try_from = "crate::rows::Id")]
    pub job_id: JobId,
    pub job_name: String,
    /// Another model than the agent's.
    pub model: Option<String>,
    /// Only these of the agent's toolsets.
    pub toolsets: Option<Vec<String>>,
    /// Fired by a webhook (its run reads a stranger's event).
    pub fired: bool,
    /// Runs in the sandbox first (see [`CronJob::script`]).
    pub script: Option<String>,
    /// The script is the run: no model.
    pub no_agent: bool,
    pub context_from: Vec<uuid::Uuid>,
    pub workdir: Option<String>,
}

/// The latest output of a job a run takes as context (`context_from`).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct JobOutput {
    pub name: String,
    pub output: String,
}

/// A run that ended (its turn finished, or it was declared unknown).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SettledRun {
    #[sqlx(rename = "id")]
    pub run_id: uuid::Uuid,
    #[sqlx(try_from = "crate::rows::Id")]
    pub tenant_id: TenantId,
    #[sqlx(try_from = "crate::rows::Id")]
    pub job_id: JobId,
    #[sqlx(try_from = "String")]
    pub status: CronRunStatus,
}

impl Automation<'_> {
    /// The tenant's jobs (of one agent, if given), by name.
    pub async fn list_jobs(self, tenant: TenantId, agent: Option<AgentId>) -> Result<Vec<Job>> {
        let rows = sqlx::query(
            "SELECT * FROM cron_jobs WHERE tenant_id = $1 AND ($2::uuid IS NULL OR agent_id = $2)
             ORDER BY lower(name)",
        )
        .bind(tenant.as_uuid())
        .bind(agent.map(|a| a.as_uuid()))
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?;
        rows.iter().map(crate::rows::read::<Job>).collect()
    }

    /// A job by id, or by name (case-insensitive) within the agent. An id wins over a name; a
    /// name several agents' jobs share is refused with their ids.
    pub async fn find_job(self, tenant: TenantId, agent: Option<AgentId>, reference: &str) -> Result<Job> {
        let id = uuid::Uuid::parse_str(reference.trim()).ok();
        let rows = sqlx::query(
            "SELECT * FROM cron_jobs WHERE tenant_id = $1 AND ($2::uuid IS NULL OR agent_id = $2)
               AND (id = $3 OR lower(name) = lower($4))
             ORDER BY (id = $3) DESC NULLS LAST, created_at LIMIT 5",
        )
        .bind(tenant.as_uuid())
        .bind(agent.map(|a| a.as_uuid()))
        .bind(id)
        .bind(reference.trim())
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?;
        let jobs: Vec<Job> = rows.iter().map(crate::rows::read::<Job>).collect::<Result<_>>()?;
        match jobs.as_slice() {
            [] => Err(StoreError::NotFound),
            [first, ..] if Some(first.id.as_uuid()) == id => Ok(first.clone()),
            [only] => Ok(only.clone()),
            several => {
                let ids: Vec<String> = several.iter().map(|j| j.id.to_string()).collect();
                Err(StoreError::Invalid(format!("several jobs are named {reference:?}; use an id: {}", ids.join(", "))))
            }
        }
    }

    /// The ids of `agent`'s jobs `references` name (ids or names), each once, in order;
    /// `Invalid` naming the first reference that names none.
    pub async fn job_ids(self, tenant: TenantId, agent: AgentId, references: &[String]) -> Result<Vec<JobId>> {
        let mut ids = Vec::new();
        for reference in references.iter().map(|r| r.trim()).filter(|r| !r.is_empty()) {
            let job = match self.find_job(tenant, Some(agent), reference).await {
                Err(StoreError::NotFound) => {
                    return Err(StoreError::Invalid(format!("the agent has no job {reference:?}")));
                }
                found => found?,
            };
            if !ids.contains(&job.id) {
                ids.push(job.id);
            }
        }
        Ok(ids)
    }

    /// Changes a job; a new timing restarts its schedule (and its repeat count).
    pub async fn update_job(self, tenant: TenantId, id: JobId, changes: &JobChanges) -> Result<Job> {
        let t = changes.timing.as_ref();
        let row = sqlx::query(
            "UPDATE cron_jobs SET name = COALESCE($3, name), prompt = COALESCE($4, prompt),
                    skills = COALESCE($5, skills), deliver = COALESCE($6, deliver),
                    schedule = COALESCE($7, schedule), schedule_kind = COALESCE($8, schedule_kind),
                    schedule_display = COALESCE($9, schedule_display), timezone = COALESCE($10, timezone),
                    repeat_times = CASE WHEN $7::text IS NULL THEN repeat_times ELSE $11 END,
                    repeat_completed = CASE WHEN $7::text IS NULL THEN repeat_completed ELSE 0 END,
                    next_run_at = COALESCE($12, next_run_at),
                    state = CASE WHEN $7::text IS NULL OR state = 'paused' THEN state ELSE 'scheduled' END,
                    updated_at = now()
             WHERE tenant_id = $1 AND id = $2 RETURNING *",
        )
        .bind(tenant.as_uuid())
        .bind(id.as_uuid())
        .bind(changes.name.as_deref())
        .bind(changes.prompt.as_deref())
        .bind(changes.skills.as_ref())
        .bind(changes.deliver.as_deref())
        .bind(t.map(|t| t.schedule.as_str()))
        .bind(t.map(|t| t.schedule_kind.as_str()))
        .bind(t.map(|t| t.schedule_display.as_str()))
        .bind(t.map(|t| t.timezone.as_str()))
        .bind(t.and_then(|t| t.repeat_times))
        .bind(t.map(|t| t.next_run_at))
        .fetch_optional(&mut *self.as_tenant(tenant).await?)
        .await
        .map_err(|e| StoreError::conflict_on_unique(e, "this agent already has a job with that name"))?
        .ok_or(StoreError::NotFound)?;
        crate::rows::read::<Job>(&row)
    }

    /// What the job whose run `turn` is sets for its runs, if `turn` is a cron run.
    pub async fn cron_run_settings(self, tenant: TenantId, turn: TurnId) -> Result<Option<RunSettings>> {
        let row = sqlx::query(
            "SELECT j.id AS job_id, j.name AS job_name, j.model, j.toolsets, r.context IS NOT NULL AS fired,
                    j.script, j.no_agent, j.context_from, j.workdir
             FROM cron_runs r JOIN cron_jobs j ON j.id = r.job_id
             WHERE r.tenant_id = $1 AND r.turn_id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(turn.as_uuid())
        .fetch_optional(&mut *self.as_tenant(tenant).await?)
        .await?;
        row.as_ref().map(crate::rows::read::<RunSettings>).transpose()
    }

    /// The latest output of each of `agent`'s `jobs` that has one (of a completed run that no
    /// webhook fired, neither empty nor silent), in the order given, each cut to `max_chars`;
    /// a job removed since, or another agent's or tenant's, is left out. A fired run's output
    /// is left out because a stranger's event steered it, and the run reading it may have
    /// every tool.
    pub async fn latest_outputs(
        self,
        tenant: TenantId,
        agent: AgentId,
        jobs: &[JobId],
        max_chars: i32,
    ) -> Result<Vec<JobOutput>> {
        let jobs: Vec<uuid::Uuid> = jobs.iter().map(|j| j.as_uuid()).collect();
        Ok(sqlx::query_as(
            "SELECT j.name, left(o.output, $3) AS output
             FROM unnest($2::uuid[]) WITH ORDINALITY AS wanted(id, n)
             JOIN cron_jobs j ON j.tenant_id = $1 AND j.id = wanted.id AND j.agent_id = $4
             CROSS JOIN LATERAL (
                SELECT r.output FROM cron_runs r
                WHERE r.tenant_id = $1 AND r.job_id = j.id AND r.status = 'completed' AND r.output <> ''
                  AND r.output NOT LIKE '[SILENT]%' AND r.context IS NULL
                ORDER BY r.finished_at DESC NULLS LAST LIMIT 1
             ) o
             ORDER BY wanted.n",
        )
        .bind(tenant.as_uuid())
        .bind(&jobs)
        .bind(max_chars)
        .bind(agent.as_uuid())
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?)
    }

    /// The chat a turn answers (its `reply_to`), where jobs made in it deliver.
    pub async fn turn_reply_to(self, tenant: TenantId, turn: TurnId) -> Result<Option<Destination>> {
        let found: Option<Option<sqlx::types::Json<Destination>>> =
            sqlx::query_scalar("SELECT reply_to FROM turns WHERE tenant_id = $1 AND id = $2")
                .bind(tenant.as_uuid())
                .bind(turn.as_uuid())
                .fetch_optional(&mut *self.as_tenant(tenant).await?)
                .await?;
        Ok(found.flatten().map(|d| d.0))
    }

    /// A job's latest runs, newest first.
    pub async fn job_runs(self, tenant: TenantId, job: JobId, limit: i64) -> Result<Vec<CronRun>> {
        Ok(sqlx::query_as(
            "SELECT id, scheduled_for, status, turn_id, session_id, output, error, created_at, finished_at
             FROM cron_runs WHERE tenant_id = $1 AND job_id = $2 ORDER BY created_at DESC LIMIT $3",
        )
        .bind(tenant.as_uuid())
        .bind(job.as_uuid())
        .bind(limit)
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?)
    }
}

tenant_writes! {
    in Automation;
    /// Creates a job; `Conflict` when the agent has a job of that name.
    pub async fn create_job(new: &NewJob) -> Result<Job> = create_job_on;

    /// Deletes a job and its runs; `false` when there was none.
    pub async fn delete_job(id: JobId) -> Result<bool> = delete_job_on;

    /// Pauses a job (with a reason) or schedules it again from `next_run_at`.
    pub async fn set_job_state(
        id: JobId,
        paused_reason: Option<&str>,
        next_run_at: Option<DateTime<Utc>>,
    ) -> Result<Job>
        = set_job_state_on;
}

/// [`Automation::create_job`](crate::views::Automation::create_job) on a connection already set to `tenant`.
async fn create_job_on(conn: &mut PgConnection, tenant: TenantId, new: &NewJob) -> Result<Job> {
    let row = sqlx::query(
        "INSERT INTO cron_jobs (id, tenant_id, agent_id, name, prompt, skills, model, schedule, schedule_kind,
                                schedule_display, timezone, repeat_times, next_run_at, deliver, origin, toolsets,
                                script, no_agent, context_from, workdir)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
         RETURNING *",
    )
    .bind(JobId::new().as_uuid())
    .bind(tenant.as_uuid())
    .bind(new.agent_id.as_uuid())
    .bind(crate::messages::without_nul(&new.name))
    .bind(crate::messages::without_nul(&new.prompt))
    .bind(&new.skills)
    .bind(&new.model)
    .bind(&new.timing.schedule)
    .bind(&new.timing.schedule_kind)
    .bind(&new.timing.schedule_display)
    .bind(&new.timing.timezone)
    .bind(new.timing.repeat_times)
    .bind(new.timing.next_run_at)
    .bind(&new.deliver)
    .bind(new.origin.as_ref().map(sqlx::types::Json))
    .bind(&new.toolsets)
    .bind(new.script.script.as_deref())
    .bind(new.script.no_agent)
    .bind(new.script.context_from.iter().map(|j| j.as_uuid()).collect::<Vec<_>>())
    .bind(new.script.workdir.as_deref())
    .fetch_one(conn)
    .await
    .map_err(|e| match &e {
        sqlx::Error::Database(db) if db.is_foreign_key_violation() => StoreError::NotFound,
        _ => StoreError::conflict_on_unique(e, "this agent already has a job with that name"),
    })?;
    crate::rows::read::<Job>(&row)
}

/// [`Automation::delete_job`](crate::views::Automation::delete_job) on a connection already set to `tenant`.
async fn delete_job_on(conn: &mut PgConnection, tenant: TenantId, id: JobId) -> Result<bool> {
    crate::rows::delete_row_on(conn, tenant, "DELETE FROM cron_jobs WHERE tenant_id = $1 AND id = $2", id.as_uuid())
        .await
}

/// [`Automation::set_job_state`](crate::views::Automation::set_job_state) on a connection already set to `tenant`.
async fn set_job_state_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    id: JobId,
    paused_reason: Option<&str>,
    next_run_at: Option<DateTime<Utc>>,
) -> Result<Job> {
    let row = sqlx::query(
        "UPDATE cron_jobs SET state = CASE WHEN $3::text IS NULL THEN 'scheduled' ELSE 'paused' END,
                paused_reason = $3, next_run_at = COALESCE($4, next_run_at), last_error = NULL,
                updated_at = now()
         WHERE tenant_id = $1 AND id = $2 RETURNING *",
    )
    .bind(tenant.as_uuid())
    .bind(id.as_uuid())
    .bind(paused_reason)
    .bind(next_run_at)
    .fetch_optional(conn)
    .await?
    .ok_or(StoreError::NotFound)?;
    crate::rows::read::<Job>(&row)
}
