//! Forgetting what is kept only for a while, in every tenant at once: idempotency keys,
//! settled events and event deliveries nobody took in a week, platform updates and replies
//! after their week, and sessions past their tenant's retention period (with what they own).

use chrono::{DateTime, Utc};

use crate::idempotency::IDEMPOTENCY_HOURS;
use crate::{Result, views::System};

impl System<'_> {
    /// Forgets keys older than a day; returns how many.
    pub async fn prune_idempotency_keys(self) -> Result<u64> {
        let done = sqlx::query("DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(hours => $1)")
            .bind(IDEMPOTENCY_HOURS)
            .execute(self.system_pool())
            .await?;
        Ok(done.rows_affected())
    }

    /// Forgets event deliveries more than a week old, settled or not (a disabled endpoint's
    /// events wait for it a week, no longer).
    pub async fn prune_events(self) -> Result<u64> {
        let done = sqlx::query("DELETE FROM event_deliveries WHERE created_at < now() - interval '7 days'")
            .execute(self.system_pool())
            .await?;
        Ok(done.rows_affected())
    }

    /// Forgets process watches that ended more than a week ago.
    pub async fn prune_process_watches(self) -> Result<u64> {
        let done = sqlx::query(
            "DELETE FROM process_watches WHERE state = 'done' AND next_check_at < now() - interval '7 days'",
        )
        .execute(self.system_pool())
        .await?;
        Ok(done.rows_affected())
    }

    /// Forgets platform updates and replies more than a week old (their text is the users'):
    /// past a week no platform redelivers an update, and a reply not out by then never goes.
    pub async fn prune_chat_traffic(self) -> Result<u64> {
        let inbound = sqlx::query("DELETE FROM inbound WHERE received_at < now() - interval '7 days'")
            .execute(self.system_pool())
            .await?;
        let outbox = sqlx::query("DELETE FROM outbox WHERE created_at < now() - interval '7 days'")
            .execute(self.system_pool())
            .await?;
        Ok(inbound.rows_affected() + outbox.rows_affected())
    }

    /// Deletes audit entries older than `keep_days`, oldest first, at most `batch` (through the
    /// one function that may: neither role deletes from the audit log itself).
    pub async fn prune_audit(self, keep_days: u32, batch: i32) -> Result<u64> {
        let gone: i64 = sqlx::query_scalar("SELECT hermes_prune_audit(make_interval(days => $1), $2)")
            .bind(i32::try_from(keep_days).unwrap_or(i32::MAX))
            .bind(batch)
            .fetch_one(self.system_pool())
            .await?;
        Ok(u64::try_from(gone).unwrap_or(0))
    }

    /// Forgets spend reservations that lapsed an hour ago (their worker died before settling
    /// them; the caps stopped counting them when they lapsed).
    pub async fn prune_spend_reservations(self) -> Result<u64> {
        let done = sqlx::query("DELETE FROM spend_reservations WHERE expires_at < now() - interval '1 hour'")
            .execute(self.system_pool())
            .await?;
        Ok(done.rows_affected())
    }

    /// Deletes sessions whose last activity is older than their tenant's retention period
    /// (or else `default_days`, the installation's; 0 keeps), unless a turn of theirs is still
    /// open (the rest of their lineage and their messages go with them). At most `batch` per
    /// call; returns how many went.
    pub async fn prune_sessions(self, now: DateTime<Utc>, default_days: u32, batch: i64) -> Result<u64> {
        let mut tx = self.system_pool().begin().await?;
        let doomed: Vec<(uuid::Uuid, uuid::Uuid)> = sqlx::query_as(
            "SELECT s.tenant_id, s.id FROM sessions s JOIN tenants t ON t.id = s.tenant_id
             WHERE coalesce(t.session_retention_days, $3) > 0
               AND s.updated_at < $1 - make_interval(days => coalesce(t.session_retention_days, $3))
               AND NOT EXISTS (SELECT 1 FROM turns u WHERE u.tenant_id = s.tenant_id AND u.session_id = s.id
                               AND u.status IN ('queued', 'running', 'waiting'))
             LIMIT $2
             FOR UPDATE OF s SKIP LOCKED",
        )
        .bind(now)
        .bind(batch)
        .bind(i32::try_from(default_days).unwrap_or(i32::MAX))
        .fetch_all(&mut *tx)
        .await?;
        for (tenant, session) in &doomed {
            crate::session_admin::forget_traces(&mut tx, *tenant, *session).await?;
        }
        let ids: Vec<uuid::Uuid> = doomed.iter().map(|(_, id)| *id).collect();
        let done = sqlx::query("DELETE FROM sessions WHERE id = ANY($1)").bind(&ids).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(done.rows_affected())
    }
}
