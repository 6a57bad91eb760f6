//! The scheduler's side of cron: claiming due jobs and fired runs of every tenant, starting
//! and failing claimed runs by id, and settling runs whose turns ended (or that were lost).

use chrono::{DateTime, Utc};

use hermes_core::{CronRunId, JobState, SessionId, TenantId};

use crate::cron::{ClaimedRun, Job, Plan, SettledRun};
use crate::{Result, views::System};

/// The runs each tenant has open (claimed or running), as the CTE `open (tenant_id, n)` (after `WITH`): what a
/// tenant's cap counts, for scheduled and fired runs alike.
macro_rules! open_runs {
    () => {
        "open AS (
            SELECT tenant_id, count(*) AS n FROM cron_runs WHERE status IN ('claimed', 'running') GROUP BY tenant_id
         )"
    };
}

impl System<'_> {
    /// Claims up to `limit` due jobs (`FOR UPDATE SKIP LOCKED`, so replicas never claim the same
    /// slot), moving each on as `plan` says in the same transaction, and records a run for each
    /// that runs now, then the runs fired by webhooks.
    ///
    /// Fair across tenants: a tenant gets at most `tenant_cap` runs open, counting the ones this
    /// claim takes, and the batch is filled round-robin (every tenant's most overdue job, then
    /// every tenant's second, ...), so one tenant with hundreds of due jobs cannot take a batch
    /// while others wait. Claims of all replicas take turns (a transaction-scoped advisory
    /// lock): each sees what the previous one took, so caps hold exactly and a replica never
    /// mistakes jobs another is claiming for no work.
    pub async fn claim_due_jobs(
        self,
        owner: &str,
        now: DateTime<Utc>,
        limit: i64,
        tenant_cap: i64,
        plan: impl Fn(&Job) -> Plan,
    ) -> Result<Vec<ClaimedRun>> {
        let mut tx = self.system_pool().begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext('hermes-cron-claim'))").execute(&mut *tx).await?;
        let rows = sqlx::query(concat!(
            "WITH RECURSIVE ",
            open_runs!(),
            // The tenants with a due job, one index probe each (a skip scan of
            // `cron_jobs_due_by_tenant`), then each one's first due jobs up to its cap.
            ", due_tenants AS (
                (SELECT tenant_id FROM cron_jobs WHERE state = 'scheduled' AND next_run_at <= $1
                 ORDER BY tenant_id LIMIT 1)
                UNION ALL
                SELECT (SELECT j.tenant_id FROM cron_jobs j
                        WHERE j.state = 'scheduled' AND j.next_run_at <= $1 AND j.tenant_id > d.tenant_id
                        ORDER BY j.tenant_id LIMIT 1)
                FROM due_tenants d WHERE d.tenant_id IS NOT NULL
             ), due AS (
                SELECT first.id, first.next_run_at, COALESCE(o.n, 0) + first.nth AS place
                FROM due_tenants d LEFT JOIN open o ON o.tenant_id = d.tenant_id
                CROSS JOIN LATERAL (
                    SELECT f.id, f.next_run_at, row_number() OVER (ORDER BY f.next_run_at, f.id) AS nth
                    FROM (SELECT j.id, j.next_run_at FROM cron_jobs j
                          WHERE j.tenant_id = d.tenant_id AND j.state = 'scheduled' AND j.next_run_at <= $1
                          ORDER BY j.next_run_at, j.id LIMIT greatest($3 - COALESCE(o.n, 0), 0)) f
                ) first
                WHERE d.tenant_id IS NOT NULL
             ), fair AS (
                SELECT id, place, next_run_at FROM due ORDER BY place, next_run_at LIMIT $2
             )
             SELECT j.* FROM cron_jobs j JOIN fair ON fair.id = j.id
             ORDER BY fair.place, fair.next_run_at
             FOR UPDATE OF j SKIP LOCKED"
        ))
        .bind(now)
        .bind(limit)
        .bind(tenant_cap)
        .fetch_all(&mut *tx)
        .await?;
        let jobs = rows.iter().map(crate::rows::read::<Job>).collect::<Result<Vec<_>>>()?;
        let plans: Vec<Plan> = jobs.iter().map(&plan).collect();
        move_on(&mut tx, &jobs, &plans).await?;
        let mut claimed = record_runs(&mut tx, owner, now, jobs, &plans).await?;
        let room = limit - i64::try_from(claimed.len()).unwrap_or(limit);
        claimed.extend(claim_fires(&mut tx, owner, room, tenant_cap).await?);
        tx.commit().await?;
        Ok(claimed)
    }

    /// Cron runs open across the installation (claimed or running).
    pub async fn open_cron_runs(self) -> Result<i64> {
        Ok(sqlx::query_scalar("SELECT count(*) FROM cron_runs WHERE status IN ('claimed', 'running')")
            .fetch_one(self.system_pool())
            .await?)
    }

    /// Starts a claimed run: queues its turn and marks it running, in one transaction (a
    /// scheduler dying in between leaves neither: the run is then declared `unknown`, and no
    /// turn runs behind the ledger's back). `None` when the run is no longer `claimed`.
    pub async fn start_run(self, run: CronRunId, tenant: TenantId, turn: &crate::NewTurn) -> Result<Option<SessionId>> {
        let mut tx = self.system_pool().begin().await?;
        let (session, turn_id) = crate::turns::enqueue_in(&mut tx, tenant, turn).await?;
        let started = sqlx::query(
            "UPDATE cron_runs SET status = 'running', turn_id = $2, session_id = $3 WHERE id = $1 AND status = 'claimed'",
        )
        .bind(run.as_uuid())
        .bind(turn_id.as_uuid())
        .bind(session.as_uuid())
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if started == 0 {
            return Ok(None);
        }
        tx.commit().await?;
        Ok(Some(session))
    }

    /// A run refused before it started (its prompt failed the run-time scan): failed, and its
    /// job says why.
    pub async fn fail_run(self, run: CronRunId, error: &str) -> Result<()> {
        let mut tx = self.system_pool().begin().await?;
        let job: Option<uuid::Uuid> = sqlx::query_scalar(
            "UPDATE cron_runs SET status = 'failed', error = $2, finished_at = now()
             WHERE id = $1 AND status = 'claimed' RETURNING job_id",
        )
        .bind(run.as_uuid())
        .bind(crate::messages::without_nul(error))
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(job) = job {
            sqlx::query(
                "UPDATE cron_jobs SET last_run_at = now(), last_status = 'error', last_error = $2, updated_at = now()
                 WHERE id = $1",
            )
            .bind(job)
            .bind(crate::messages::without_nul(error))
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Ends the runs whose turns ended (their outputs kept) and runs claimed more than `stale`
    /// ago that never got a turn (`unknown`: what claimed them vanished); updates their jobs.
    pub async fn settle_runs(self, stale: std::time::Duration) -> Result<Vec<SettledRun>> {
        Ok(sqlx::query_as(
            "WITH ended AS (
                UPDATE cron_runs r SET
                    status = CASE WHEN t.status = 'completed' THEN 'completed' ELSE 'failed' END,
                    output = t.outcome ->> 'content', error = t.outcome ->> 'error',
                    finished_at = COALESCE(t.finished_at, now())
                FROM turns t
                WHERE r.status = 'running' AND t.id = r.turn_id AND t.status IN ('completed', 'failed', 'cancelled')
                RETURNING r.id, r.tenant_id, r.job_id, r.status, r.error, r.context IS NOT NULL AS fired
             ), vanished AS (
                UPDATE cron_runs r SET status = 'unknown', finished_at = now(),
                    error = 'the scheduler that claimed this run vanished before starting it; not run again'
                WHERE r.status = 'claimed' AND r.created_at < now() - make_interval(secs => $1)
                RETURNING r.id, r.tenant_id, r.job_id, r.status, r.error, r.context IS NOT NULL AS fired
             ), settled AS (
                -- A run a webhook fired does not count toward the job's repeats.
                SELECT *, CASE WHEN fired THEN 0 ELSE 1 END AS counts FROM ended
                UNION ALL SELECT *, CASE WHEN fired THEN 0 ELSE 1 END FROM vanished
             ),
             jobs AS (
                UPDATE cron_jobs j SET last_run_at = now(),
                    last_status = CASE WHEN s.status = 'completed' THEN 'ok' ELSE 'error' END,
                    last_error = CASE WHEN s.status = 'completed' THEN NULL ELSE s.error END,
                    repeat_completed = j.repeat_completed + s.counts,
                    state = CASE WHEN j.repeat_times IS NOT NULL AND j.repeat_completed + s.counts >= j.repeat_times
                                 THEN 'completed' ELSE j.state END,
                    next_run_at = CASE WHEN j.repeat_times IS NOT NULL AND j.repeat_completed + s.counts >= j.repeat_times
                                       THEN NULL ELSE j.next_run_at END,
                    updated_at = now()
                FROM settled s WHERE j.id = s.job_id
             )
             SELECT id, tenant_id, job_id, status FROM settled",
        )
        .bind(stale.as_secs_f64())
        .fetch_all(self.system_pool())
        .await?)
    }
}

/// Moves each claimed job on as its plan says, in one statement.
async fn move_on(tx: &mut sqlx::PgConnection, jobs: &[Job], plans: &[Plan]) -> Result<()> {
    if jobs.is_empty() {
        return Ok(());
    }
    let ids: Vec<uuid::Uuid> = jobs.iter().map(|j| j.id.as_uuid()).collect();
    let next: Vec<Option<DateTime<Utc>>> = plans.iter().map(|p| p.next_run_at).collect();
    let states: Vec<&str> = plans.iter().map(|p| p.state.as_str()).collect();
    let errors: Vec<Option<&str>> = plans.iter().map(|p| p.error.as_deref()).collect();
    sqlx::query(
        "UPDATE cron_jobs j SET next_run_at = u.next_run_at, state = u.state,
                last_error = COALESCE(u.error, j.last_error), updated_at = now()
         FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::text[]) AS u (id, next_run_at, state, error)
         WHERE j.id = u.id",
    )
    .bind(&ids)
    .bind(&next)
    .bind(&states)
    .bind(&errors)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Records a run for each claimed job whose plan runs it now, in one statement; the runs, in
/// claim order (a slot already recorded is not run again).
async fn record_runs(
    tx: &mut sqlx::PgConnection,
    owner: &str,
    now: DateTime<Utc>,
    jobs: Vec<Job>,
    plans: &[Plan],
) -> Result<Vec<ClaimedRun>> {
    let running: Vec<(Job, DateTime<Utc>)> = jobs
        .into_iter()
        .zip(plans)
        .filter(|(_, plan)| plan.run)
        .map(|(job, _)| {
            let due = job.next_run_at.unwrap_or(now);
            (job, due)
        })
        .collect();
    if running.is_empty() {
        return Ok(Vec::new());
    }
    let run_ids: Vec<uuid::Uuid> = running.iter().map(|_| uuid::Uuid::now_v7()).collect();
    let tenants: Vec<uuid::Uuid> = running.iter().map(|(j, _)| j.tenant_id.as_uuid()).collect();
    let job_ids: Vec<uuid::Uuid> = running.iter().map(|(j, _)| j.id.as_uuid()).collect();
    let slots: Vec<DateTime<Utc>> = running.iter().map(|(_, due)| *due).collect();
    let recorded: Vec<uuid::Uuid> = sqlx::query_scalar(
        "INSERT INTO cron_runs (id, tenant_id, job_id, scheduled_for, claimed_by)
         SELECT r.id, r.tenant_id, r.job_id, r.slot, $5
         FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::timestamptz[]) AS r (id, tenant_id, job_id, slot)
         ON CONFLICT (job_id, scheduled_for) DO NOTHING RETURNING id",
    )
    .bind(&run_ids)
    .bind(&tenants)
    .bind(&job_ids)
    .bind(&slots)
    .bind(owner)
    .fetch_all(&mut *tx)
    .await?;
    Ok(running
        .into_iter()
        .zip(run_ids)
        .filter(|(_, id)| recorded.contains(id))
        .map(|((job, due), id)| ClaimedRun { run_id: id.into(), job, scheduled_for: due, context: None })
        .collect())
}

/// A fired run taken from `cron_fires`: its job, the webhook's context and when it fired.
#[derive(sqlx::FromRow)]
struct Fire {
    job_id: uuid::Uuid,
    context: String,
    created_at: DateTime<Utc>,
}

/// Claims up to `limit` fired runs inside the scheduler's claiming transaction.
pub(crate) async fn claim_fires(
    tx: &mut sqlx::PgConnection,
    owner: &str,
    limit: i64,
    tenant_cap: i64,
) -> Result<Vec<ClaimedRun>> {
    if limit <= 0 {
        return Ok(Vec::new());
    }
    // A tenant at its cap of open runs waits, as for scheduled runs; a paused job's fires are
    // dropped (pausing a job stops it, whatever calls it).
    // Round-robin across tenants too, counting the runs this claim already took.
    let fires = sqlx::query_as::<_, Fire>(concat!(
        "WITH ",
        open_runs!(),
        ", waiting AS (
            SELECT f.id, f.created_at,
                   COALESCE(o.n, 0) + row_number() OVER (PARTITION BY f.tenant_id ORDER BY f.created_at, f.id) AS place
            FROM cron_fires f LEFT JOIN open o ON o.tenant_id = f.tenant_id
         ), fair AS (
            SELECT id FROM waiting WHERE place <= $2 ORDER BY place, created_at LIMIT $1
         )
         DELETE FROM cron_fires WHERE id IN (SELECT f.id FROM cron_fires f JOIN fair ON fair.id = f.id FOR UPDATE OF f SKIP LOCKED)
         RETURNING job_id, context, created_at"
    ))
    .bind(limit)
    .bind(tenant_cap)
    .fetch_all(&mut *tx)
    .await?;
    let mut claimed = Vec::new();
    for Fire { job_id, context, created_at: at } in fires {
        let Some(row) =
            sqlx::query("SELECT * FROM cron_jobs WHERE id = $1").bind(job_id).fetch_optional(&mut *tx).await?
        else {
            continue;
        };
        let job = crate::rows::read::<Job>(&row)?;
        if job.state == JobState::Paused {
            tracing::info!(job.id = %job.id, "a webhook fired a paused job; not run");
            continue;
        }
        let run_id: Option<uuid::Uuid> = sqlx::query_scalar(
            "INSERT INTO cron_runs (id, tenant_id, job_id, scheduled_for, claimed_by, context)
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (job_id, scheduled_for) DO NOTHING RETURNING id",
        )
        .bind(uuid::Uuid::now_v7())
        .bind(job.tenant_id.as_uuid())
        .bind(job.id.as_uuid())
        .bind(at)
        .bind(owner)
        .bind(&context)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(run_id) = run_id {
            claimed.push(ClaimedRun { run_id: run_id.into(), job, scheduled_for: at, context: Some(context) });
        }
    }
    Ok(claimed)
}
