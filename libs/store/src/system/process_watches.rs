//! Workers poll every tenant's watched processes: a worker claims due watches whatever their
//! tenant (the watch names its sandbox); each is then settled for its own tenant
//! (`Automation::settle_watch`).

use std::time::Duration;

use crate::process_watches::Watch;
use crate::{Result, views::System};

impl System<'_> {
    /// Claims up to `limit` due watches for `owner` for `lease` (`SKIP LOCKED`: workers share
    /// them; a claim not settled in time, its worker gone, lapses and another worker polls).
    pub async fn claim_watches(self, owner: &str, limit: i64, lease: Duration) -> Result<Vec<Watch>> {
        Ok(sqlx::query_as(
            "WITH due AS (
                SELECT tenant_id, id FROM process_watches
                WHERE state = 'watching' AND next_check_at <= now()
                  AND (claimed_until IS NULL OR claimed_until < now())
                ORDER BY next_check_at LIMIT $2 FOR UPDATE SKIP LOCKED
             )
             UPDATE process_watches w SET claimed_by = $1, claimed_until = now() + make_interval(secs => $3)
             FROM due WHERE w.tenant_id = due.tenant_id AND w.id = due.id
             RETURNING w.tenant_id, w.id, w.agent_id, w.session_id, w.workspace, w.process_id, w.command, w.patterns,
                       w.notify_on_complete, w.output_offset, w.notices, w.last_notice_at, w.created_at",
        )
        .bind(owner)
        .bind(limit)
        .bind(lease.as_secs_f64())
        .fetch_all(self.system_pool())
        .await?)
    }
}
