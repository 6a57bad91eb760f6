//! Runs of a cron job asked for now, with extra context (a webhook's event, migration 0031).
//! They wait in `cron_fires` until a scheduler claims them together with the due jobs, so a
//! fired run goes through the same ledger (exactly once, lost runs `unknown`) as a scheduled one.

use hermes_core::{JobId, TenantId};

use crate::{Result, views::Automation};

impl Automation<'_> {
    /// Asks for a run of the tenant's job `job` now, with `context` shown to it above its prompt.
    pub async fn fire_job(self, tenant: TenantId, job: JobId, context: &str) -> Result<()> {
        let mut tx = self.tenant_tx(tenant).await?;
        fire_in(&mut tx, tenant, job, context).await?;
        tx.commit().await?;
        Ok(())
    }
}

/// `fire_job` inside the caller's transaction.
pub(crate) async fn fire_in(tx: &mut sqlx::PgConnection, tenant: TenantId, job: JobId, context: &str) -> Result<()> {
    let done = sqlx::query(
        "INSERT INTO cron_fires (id, tenant_id, job_id, context)
         SELECT $1, tenant_id, id, $3 FROM cron_jobs WHERE tenant_id = $2 AND id = $4",
    )
    .bind(uuid::Uuid::now_v7())
    .bind(tenant.as_uuid())
    .bind(crate::messages::without_nul(context))
    .bind(job.as_uuid())
    .execute(&mut *tx)
    .await?;
    crate::require_changed(&done)
}
