//! Busy mode `steer` (migration 0024): a chat message sent while the agent works is queued as
//! a turn marked `steer`; the running turn of that session absorbs it before its next model
//! call (the message becomes guidance for the rest of that turn, and the absorbed turn ends as
//! `steered`, with nothing to send). If the running turn ends first, the message simply runs
//! as a turn of its own, so it is never lost.

use chrono::{DateTime, Utc};
use sqlx::types::Json;

use hermes_core::outbox::{AnswerStatus, Destination};
use hermes_core::{ChatMessage, FinishReason, TenantId, TurnId, TurnOutcome, Usage};

use crate::turns::outbox_rows::queue_answer;
use crate::{Result, StoreError, views::Conversations};

/// A steering turn taken: where its (empty) answer goes, and its message.
#[derive(sqlx::FromRow)]
struct Taken {
    #[sqlx(try_from = "crate::rows::Id")]
    id: TurnId,
    reply_to: Option<Json<Destination>>,
    input: serde_json::Value,
    created_at: DateTime<Utc>,
}

impl Conversations<'_> {
    /// Marks a queued turn as steering the session's running turn.
    pub async fn mark_steer(self, tenant: TenantId, turn: TurnId) -> Result<()> {
        sqlx::query("UPDATE turns SET steer = true WHERE tenant_id = $1 AND id = $2 AND status = 'queued'")
            .bind(tenant.as_uuid())
            .bind(turn.as_uuid())
            .execute(&mut *self.as_tenant(tenant).await?)
            .await?;
        Ok(())
    }

    /// Takes the steering messages that arrived for `running` (queued after it in its session),
    /// oldest first, ending their turns as absorbed.
    pub async fn absorb_steers(self, tenant: TenantId, running: TurnId) -> Result<Vec<ChatMessage>> {
        let outcome = TurnOutcome {
            content: String::new(),
            finish_reason: FinishReason::Stop,
            usage: Usage::default(),
            error: None,
            error_code: Some(hermes_core::ErrorCode::Steered),
            session_id: None,
        };
        let stored = crate::messages::storable_json(&outcome)?;
        // Asked before every model call, and nearly always answered no: that answer costs one
        // statement, not a transaction. A steer queued just after is taken at the next call,
        // or runs as a turn of its own.
        let waiting: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM turns t, turns h
              WHERE h.tenant_id = $1 AND h.id = $2 AND t.tenant_id = $1 AND t.session_id = h.session_id
                AND t.status = 'queued' AND t.steer AND t.id <> $2 AND t.created_at >= h.created_at)",
        )
        .bind(tenant.as_uuid())
        .bind(running.as_uuid())
        .fetch_one(&mut *self.as_tenant(tenant).await?)
        .await?;
        if !waiting {
            return Ok(Vec::new());
        }
        // The absorbed turns' answers (sent as nothing) commit with their end, as any turn's.
        let mut tx = self.tenant_tx(tenant).await?;
        let rows = sqlx::query_as::<_, Taken>(
            "WITH host AS (SELECT session_id, created_at FROM turns WHERE tenant_id = $1 AND id = $2),
                  taken AS (
                    SELECT t.id FROM turns t, host h
                    WHERE t.tenant_id = $1 AND t.session_id = h.session_id AND t.status = 'queued' AND t.steer
                      AND t.id <> $2 AND t.created_at >= h.created_at
                    FOR UPDATE OF t SKIP LOCKED)
             UPDATE turns t SET status = 'completed', outcome = $3, finished_at = now()
             FROM taken WHERE t.id = taken.id
             RETURNING t.id, t.reply_to, t.input, t.created_at",
        )
        .bind(tenant.as_uuid())
        .bind(running.as_uuid())
        .bind(stored)
        .fetch_all(&mut *tx)
        .await?;
        let mut taken: Vec<(DateTime<Utc>, ChatMessage)> = Vec::with_capacity(rows.len());
        for row in rows {
            if let Some(reply_to) = &row.reply_to {
                queue_answer(&mut tx, tenant, row.id, reply_to, AnswerStatus::Completed, &outcome).await?;
            }
            let message = serde_json::from_value(row.input).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            taken.push((row.created_at, message));
        }
        tx.commit().await?;
        taken.sort_by_key(|(at, _)| *at);
        Ok(taken.into_iter().map(|(_, m)| m).collect())
    }
}
