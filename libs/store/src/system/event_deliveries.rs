//! Delivering tenants' events: gateway pods claim due events of every tenant's enabled
//! endpoints and settle each attempt by the event's and endpoint's ids.

use std::time::Duration;

use crate::event_hooks::{Attempt, DueEvent};
use crate::{Result, views::System};

impl System<'_> {
    /// Claims up to `limit` due events of enabled endpoints for `lease` (oldest first,
    /// `SKIP LOCKED`: any number of gateway pods share them); an event not settled in time is
    /// due again. A disabled endpoint's events wait until it is enabled again.
    pub async fn claim_events(self, limit: i64, lease: Duration) -> Result<Vec<DueEvent>> {
        Ok(sqlx::query_as(
            "WITH due AS (
                SELECT d.id FROM event_deliveries d JOIN event_hooks h ON h.id = d.hook_id AND h.enabled
                WHERE d.status = 'pending' AND d.next_attempt_at <= now()
                ORDER BY d.next_attempt_at LIMIT $1 FOR UPDATE OF d SKIP LOCKED
             ), claimed AS (
                UPDATE event_deliveries d SET next_attempt_at = now() + make_interval(secs => $2),
                       attempts = d.attempts + 1
                FROM due WHERE d.id = due.id
                RETURNING d.*
             )
             SELECT c.id, c.tenant_id, c.hook_id, c.event, c.data, c.attempts, c.created_at, h.url, h.secret
             FROM claimed c JOIN event_hooks h ON h.id = c.hook_id",
        )
        .bind(limit)
        .bind(lease.as_secs_f64())
        .fetch_all(self.system_pool())
        .await?)
    }

    /// Records how an attempt ended, on the event and on its endpoint.
    pub async fn settle_event(self, event: &DueEvent, attempt: &Attempt) -> Result<()> {
        let (status, code, error, after) = match attempt {
            Attempt::Delivered { status } => ("delivered", Some(*status), None, None),
            Attempt::Retry { status, error, after } => ("pending", *status, Some(error.as_str()), Some(*after)),
            Attempt::Failed { status, error } => ("failed", *status, Some(error.as_str()), None),
        };
        let mut tx = self.system_pool().begin().await?;
        sqlx::query(
            "UPDATE event_deliveries SET status = $2, last_status = $3, last_error = $4,
                    next_attempt_at = CASE WHEN $5::float8 IS NULL THEN next_attempt_at
                                           ELSE now() + make_interval(secs => $5) END,
                    delivered_at = CASE WHEN $2 = 'delivered' THEN now() END
             WHERE id = $1",
        )
        .bind(event.id.as_uuid())
        .bind(status)
        .bind(code)
        .bind(error.map(crate::messages::without_nul))
        .bind(after.map(|a| a.as_secs_f64()))
        .execute(&mut *tx)
        .await?;
        sqlx::query("UPDATE event_hooks SET last_delivery_at = now(), last_status = $2, last_error = $3 WHERE id = $1")
            .bind(event.hook_id.as_uuid())
            .bind(code)
            .bind(error.map(crate::messages::without_nul))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }
}
