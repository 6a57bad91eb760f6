//! The installation's backlog, read from Postgres for the scheduler's gauges: every replica
//! reads the same rows, so each reports the same truth (dashboards and autoscalers take the
//! `max`, never the `sum`, across replicas). Counts only: no tenant, session or user id leaves.

use crate::{Result, views::System};

pub use hermes_wire::admin::{Backlog, WorkerAtWork};

impl System<'_> {
    /// The backlog now, in one statement. Each count rides a partial index (`turns_for_reaper`,
    /// `outbox_due`, `cron_jobs_due`), so it stays cheap however large the tables grow.
    pub async fn backlog(self) -> Result<Backlog> {
        let (turns_queued, oldest_queued_seconds, turns_running, outbox_waiting, oldest_outbox_seconds, cron_jobs_late) =
            sqlx::query_as::<_, (i64, f64, i64, i64, f64, i64)>(
                "SELECT
                    (SELECT count(*) FROM turns
                     WHERE status = 'queued' AND (not_before IS NULL OR not_before <= now())),
                    COALESCE((SELECT extract(epoch FROM now() - min(created_at))::float8 FROM turns
                              WHERE status = 'queued' AND (not_before IS NULL OR not_before <= now())), 0),
                    (SELECT count(*) FROM turns WHERE status = 'running'),
                    (SELECT count(*) FROM outbox WHERE status = 'pending'),
                    COALESCE((SELECT extract(epoch FROM now() - min(created_at))::float8 FROM outbox
                              WHERE status = 'pending'), 0),
                    (SELECT count(*) FROM cron_jobs
                     WHERE state = 'scheduled' AND next_run_at < now() - interval '1 minute')",
            )
            .fetch_one(self.system_pool())
            .await?;
        Ok(Backlog {
            turns_queued,
            oldest_queued_seconds,
            turns_running,
            outbox_waiting,
            oldest_outbox_seconds,
            cron_jobs_late,
        })
    }
}

impl System<'_> {
    /// Every worker holding turns now, across tenants (the operators' cluster page).
    pub async fn workers_at_work(self) -> Result<Vec<WorkerAtWork>> {
        Ok(sqlx::query_as(
            "SELECT lease_owner AS worker, count(*) AS turns, max(lease_expires_at) AS lease_expires_at FROM turns
             WHERE status = 'running' AND lease_owner IS NOT NULL GROUP BY lease_owner ORDER BY lease_owner",
        )
        .fetch_all(self.system_pool())
        .await?)
    }
}
