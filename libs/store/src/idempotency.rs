//! Enqueueing a turn at most once per `Idempotency-Key` (migration 0010). The key is written in
//! the same transaction as the turn, so two pods racing with the same key serialise on its
//! primary key: the second finds the first's turn and joins it.

use hermes_core::{ApiKeyId, SessionId, TenantId, TurnId};

use crate::turns::{NewTurn, enqueue_in};
use crate::{Result, StoreError, views::Turns};

/// How long a key is remembered.
pub const IDEMPOTENCY_HOURS: i32 = 24;

/// A client's idempotency key for one request.
#[derive(Debug, Clone)]
pub struct Idempotency {
    pub api_key: ApiKeyId,
    pub key: String,
    /// A digest of the request, so a key reused for another request is refused.
    pub fingerprint: String,
}

/// What enqueueing with a key did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enqueued {
    /// A new turn.
    New { session: SessionId, turn: TurnId },
    /// The key was used before for the same request: its turn.
    Replay { session: SessionId, turn: TurnId },
}

impl Turns<'_> {
    /// [`Turns::enqueue_turn`](crate::views::Turns::enqueue_turn), once per key. A key seen within a day with a different
    /// fingerprint is `StoreError::Invalid`.
    pub async fn enqueue_turn_once(self, tenant: TenantId, new: NewTurn, idem: &Idempotency) -> Result<Enqueued> {
        let mut tx = self.tenant_tx(tenant).await?;
        sqlx::query(
            "DELETE FROM idempotency_keys WHERE tenant_id = $1 AND api_key_id = $2 AND key = $3
               AND created_at < now() - make_interval(hours => $4)",
        )
        .bind(tenant.as_uuid())
        .bind(idem.api_key.as_uuid())
        .bind(&idem.key)
        .bind(IDEMPOTENCY_HOURS)
        .execute(&mut *tx)
        .await?;
        let (session, turn) = enqueue_in(&mut tx, tenant, &new).await?;
        let inserted = sqlx::query(
            "INSERT INTO idempotency_keys (tenant_id, api_key_id, key, fingerprint, session_id, turn_id)
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
        )
        .bind(tenant.as_uuid())
        .bind(idem.api_key.as_uuid())
        .bind(crate::messages::without_nul(&idem.key))
        .bind(&idem.fingerprint)
        .bind(session.as_uuid())
        .bind(turn.as_uuid())
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if inserted == 1 {
            tx.commit().await?;
            return Ok(Enqueued::New { session, turn });
        }
        // Someone used the key first: drop this attempt and join theirs.
        tx.rollback().await?;
        let (fingerprint, session, turn): (String, uuid::Uuid, uuid::Uuid) = sqlx::query_as(
            "SELECT fingerprint, session_id, turn_id FROM idempotency_keys
             WHERE tenant_id = $1 AND api_key_id = $2 AND key = $3",
        )
        .bind(tenant.as_uuid())
        .bind(idem.api_key.as_uuid())
        .bind(&idem.key)
        .fetch_one(&mut *self.as_tenant(tenant).await?)
        .await?;
        if fingerprint != idem.fingerprint {
            return Err(StoreError::Invalid("this Idempotency-Key was used for a different request".into()));
        }
        Ok(Enqueued::Replay { session: SessionId::from_uuid(session), turn: TurnId::from_uuid(turn) })
    }
}
