//! The lease reaper and interaction expiry: turns of every tenant whose worker vanished, whose
//! queue message was lost, or whose interaction nobody answered in time.

use std::time::Duration;

use hermes_core::{SessionId, TenantId, TurnId};

use crate::{Result, views::System};

/// A turn whose work message must be published again.
#[derive(Debug, Clone, Copy, sqlx::FromRow)]
pub struct StrandedTurn {
    #[sqlx(try_from = "crate::rows::Id")]
    pub tenant_id: TenantId,
    #[sqlx(try_from = "crate::rows::Id")]
    pub session_id: SessionId,
    #[sqlx(rename = "id", try_from = "crate::rows::Id")]
    pub turn_id: TurnId,
}

impl System<'_> {
    /// Finds turns whose worker vanished (running, lease expired) or whose queue message was
    /// lost (queued longer than `queued_grace`), marks them republished, and returns them.
    /// A turn is returned again at most once per `backoff`. Safe with many reapers
    /// (`FOR UPDATE SKIP LOCKED`).
    pub async fn reap_stranded_turns(
        self,
        queued_grace: Duration,
        backoff: Duration,
        limit: i64,
    ) -> Result<Vec<StrandedTurn>> {
        Ok(sqlx::query_as(
            "WITH stale AS (
                SELECT id FROM turns
                WHERE ((status = 'running' AND lease_expires_at < now())
                    OR (status = 'queued' AND created_at < now() - make_interval(secs => $1)))
                  AND (republished_at IS NULL OR republished_at < now() - make_interval(secs => $2))
                ORDER BY created_at
                LIMIT $3
                FOR UPDATE SKIP LOCKED
             )
             UPDATE turns t SET republished_at = now() FROM stale WHERE t.id = stale.id
             RETURNING t.tenant_id, t.session_id, t.id",
        )
        .bind(queued_grace.as_secs_f64())
        .bind(backoff.as_secs_f64())
        .bind(limit)
        .fetch_all(self.system_pool())
        .await?)
    }

    /// Expires interactions nobody answered in time (an approval counts as denied, a question
    /// as unanswered) and queues their turns again; returns the turns to publish. Safe with
    /// many schedulers (`FOR UPDATE SKIP LOCKED`).
    pub async fn expire_interactions(self, limit: i64) -> Result<Vec<StrandedTurn>> {
        Ok(sqlx::query_as(
            "WITH due AS (
                SELECT id FROM interactions WHERE status = 'pending' AND expires_at < now()
                ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED
             ), expired AS (
                UPDATE interactions i SET status = 'expired', answer = '{\"expired\": true}', answered_at = now()
                FROM due WHERE i.id = due.id
                RETURNING i.tenant_id, i.turn_id
             )
             UPDATE turns t SET status = 'queued'
             FROM expired e WHERE t.tenant_id = e.tenant_id AND t.id = e.turn_id AND t.status = 'waiting'
             RETURNING t.tenant_id, t.session_id, t.id",
        )
        .bind(limit)
        .fetch_all(self.system_pool())
        .await?)
    }
}
