//! Runs of a cron job asked for now, with extra context (a webhook's event, migration 0031).
//! They wait in `cron_fires` until a scheduler claims them together with the due jobs, so a
//! fired run goes through the same ledger (exactly once, lost runs `unknown`) as a scheduled one.

use chrono::{DateTime, Utc};
use sqlx::Row;

use hermes_core::TenantId;

use crate::cron::{ClaimedRun, Job};
use crate::{Result, Store, StoreError};

impl Store {
    /// Asks for a run of the tenant's job `job` now, with `context` shown to it above its prompt.
    pub async fn fire_job(&self, tenant: TenantId, job: uuid::Uuid, context: &str) -> Result<()> {
        let mut tx = self.pool().begin().await?;
        fire_in(&mut tx, tenant, job, context).await?;
        tx.commit().await?;
        Ok(())
    }
}

/// `fire_job` inside the caller's transaction.
pub(crate) async fn fire_in(
    tx: &mut sqlx::PgConnection,
    tenant: TenantId,
    job: uuid::Uuid,
    context: &str,
) -> Result<()> {
    let done = sqlx::query(
        "INSERT INTO cron_fires (id, tenant_id, job_id, context)
         SELECT $1, tenant_id, id, $3 FROM cron_jobs WHERE tenant_id = $2 AND id = $4",
    )
    .bind(uuid::Uuid::now_v7())
    .bind(tenant.as_uuid())
    .bind(crate::messages::without_nul(context))
    .bind(job)
    .execute(&mut *tx)
    .await?;
    if done.rows_affected() == 0 {
        return Err(StoreError::NotFound);
    }
    Ok(())
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
    let fires = sqlx::query(
        "DELETE FROM cron_fires WHERE id IN
            (SELECT f.id FROM cron_fires f
             WHERE (SELECT count(*) FROM cron_runs r
                    WHERE r.tenant_id = f.tenant_id AND r.status IN ('claimed', 'running')) < $2
             ORDER BY f.created_at LIMIT $1 FOR UPDATE SKIP LOCKED)
         RETURNING job_id, context, created_at",
    )
    .bind(limit)
    .bind(tenant_cap)
    .fetch_all(&mut *tx)
    .await?;
    let mut claimed = Vec::new();
    for fire in &fires {
        let job_id: uuid::Uuid = fire.try_get("job_id")?;
        let context: String = fire.try_get("context")?;
        let at: DateTime<Utc> = fire.try_get("created_at")?;
        let Some(row) =
            sqlx::query("SELECT * FROM cron_jobs WHERE id = $1").bind(job_id).fetch_optional(&mut *tx).await?
        else {
            continue;
        };
        let job = Job::from_row(&row)?;
        if job.state == "paused" {
            tracing::info!(job.id = %job.id, "a webhook fired a paused job; not run");
            continue;
        }
        let run_id: Option<uuid::Uuid> = sqlx::query_scalar(
            "INSERT INTO cron_runs (id, tenant_id, job_id, scheduled_for, claimed_by, context)
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (job_id, scheduled_for) DO NOTHING RETURNING id",
        )
        .bind(uuid::Uuid::now_v7())
        .bind(job.tenant_id.as_uuid())
        .bind(job.id)
        .bind(at)
        .bind(owner)
        .bind(&context)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(run_id) = run_id {
            claimed.push(ClaimedRun { run_id, job, scheduled_for: at, context: Some(context) });
        }
    }
    Ok(claimed)
}
