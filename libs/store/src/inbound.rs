//! Chat messages taken in: each exactly once (its `inbound` row is unique per channel and
//! platform message), with the turn it starts or joins, and what a new message would interrupt.

use std::time::Duration;

use serde_json::Value;

use hermes_core::{SessionId, TenantId, TurnId};

use crate::turns::{NewTurn, enqueue_in};
use crate::{Result, StoreError, views::Chat};

/// A turn a chat's new message may interrupt.
#[derive(Debug, Clone)]
pub struct BusyTurn {
    pub id: TurnId,
    /// Its input is in the conversation already (the worker stored it when it began).
    pub begun: bool,
    /// Its input's text.
    pub input: String,
}

/// What taking a chat message in did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepted {
    /// Seen before (a platform retry, a re-polled update): nothing was done again.
    Duplicate,
    /// Stored; no turn (a command, an ignored message).
    Stored,
    /// Stored with the turn it started.
    Turn { session: SessionId, turn: TurnId },
    /// Added to the conversation's turn that had not started yet (a message split in parts).
    Merged { session: SessionId, turn: TurnId },
}

/// A conversation's turn that has not started yet, with its input as stored.
#[derive(sqlx::FromRow)]
struct Queued {
    #[sqlx(try_from = "crate::rows::Id")]
    id: TurnId,
    #[sqlx(try_from = "crate::rows::Id")]
    session_id: SessionId,
    input: Value,
}

/// An open turn of a chat's current conversation.
#[derive(sqlx::FromRow)]
struct OpenTurn {
    #[sqlx(try_from = "crate::rows::Id")]
    id: TurnId,
    /// Read with `rows::vocab` (a bad name is `Corrupt`).
    status: String,
    input: Value,
    begun: bool,
}

/// A chat message's own columns of its `inbound` row, as the platform identified it.
struct InboundRow<'a> {
    source: &'a str,
    dedupe_key: &'a str,
    payload: &'a Value,
}

/// Records on the `inbound` row `id` the turn its message started or joined.
async fn mark_processed(tx: &mut sqlx::PgConnection, id: uuid::Uuid, turn: TurnId) -> Result<()> {
    sqlx::query("UPDATE inbound SET turn_id = $2, processed_at = now() WHERE id = $1")
        .bind(id)
        .bind(turn.as_uuid())
        .execute(tx)
        .await?;
    Ok(())
}

/// Appends a chat message to its conversation's turn that is still queued (a worker claims
/// turns with `FOR UPDATE`, so a turn is either merged into or started, never both).
async fn merge_into_queued(
    tx: &mut sqlx::PgConnection,
    tenant: TenantId,
    new: &NewTurn,
    batch: Option<Duration>,
) -> Result<Option<(SessionId, TurnId)>> {
    let crate::turns::TurnTarget::Route { route, .. } = &new.target else { return Ok(None) };
    let row = sqlx::query_as::<_, Queued>(
        "SELECT t.id, t.session_id, t.input FROM session_routes r
         JOIN turns t ON t.tenant_id = r.tenant_id AND t.session_id = r.session_id
         WHERE r.tenant_id = $1 AND r.agent_id = $2 AND r.route_key = $3 AND t.status = 'queued'
         ORDER BY t.created_at DESC LIMIT 1 FOR UPDATE OF t",
    )
    .bind(tenant.as_uuid())
    .bind(route.agent.as_uuid())
    .bind(&route.key)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(row) = row else { return Ok(None) };
    let mut input: hermes_core::ChatMessage =
        serde_json::from_value(row.input).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    // Every part of the new message joins: a photo or file sent right after words is kept.
    input.content = match (input.content.take(), new.input.content.clone()) {
        (Some(held), Some(added)) => Some(held.followed_by(added)),
        (held, added) => held.or(added),
    };
    sqlx::query(
        "UPDATE turns SET input = $3,
                not_before = CASE WHEN $4::float8 IS NULL THEN not_before ELSE now() + make_interval(secs => $4) END
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_uuid())
    .bind(row.id.as_uuid())
    .bind(crate::messages::storable_json(&input)?)
    .bind(batch.map(|b| b.as_secs_f64()))
    .execute(&mut *tx)
    .await?;
    Ok(Some((row.session_id, row.id)))
}

impl Chat<'_> {
    /// The running or waiting turns of a chat's current conversation (what a new message
    /// interrupts), and how many turns are open in it.
    pub async fn route_busy_turns(self, tenant: TenantId, route: &crate::Route) -> Result<(Vec<BusyTurn>, i64)> {
        let rows = sqlx::query_as::<_, OpenTurn>(
            "SELECT t.id, t.status::text AS status, t.input,
                    EXISTS (SELECT 1 FROM messages m WHERE m.tenant_id = t.tenant_id AND m.session_id = t.session_id
                              AND m.turn_id = t.id AND m.turn_step = 0) AS begun
             FROM session_routes r
             JOIN turns t ON t.tenant_id = r.tenant_id AND t.session_id = r.session_id
             WHERE r.tenant_id = $1 AND r.agent_id = $2 AND r.route_key = $3
               AND t.status IN ('queued', 'running', 'waiting')",
        )
        .bind(tenant.as_uuid())
        .bind(route.agent.as_uuid())
        .bind(&route.key)
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?;
        let open = i64::try_from(rows.len()).unwrap_or(i64::MAX);
        let mut busy = Vec::new();
        for row in rows {
            if crate::rows::vocab::<crate::TurnStatus>(&row.status)? == crate::TurnStatus::Queued {
                continue;
            }
            let input: hermes_core::ChatMessage =
                serde_json::from_value(row.input).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            busy.push(BusyTurn { id: row.id, begun: row.begun, input: input.text() });
        }
        Ok((busy, open))
    }

    /// Whether a chat message was taken in already (checked before acting on it).
    pub async fn inbound_seen(self, tenant: TenantId, source: &str, dedupe_key: &str) -> Result<bool> {
        let seen: Option<i32> =
            sqlx::query_scalar("SELECT 1 FROM inbound WHERE tenant_id = $1 AND source = $2 AND dedupe_key = $3")
                .bind(tenant.as_uuid())
                .bind(source)
                .bind(crate::messages::without_nul(dedupe_key))
                .fetch_optional(&mut *self.as_tenant(tenant).await?)
                .await?;
        Ok(seen.is_some())
    }

    /// The turn a chat message already taken in started (its session and turn), if it started
    /// one: where the work a redelivery of it did twice is counted.
    pub async fn inbound_turn(
        self,
        tenant: TenantId,
        source: &str,
        dedupe_key: &str,
    ) -> Result<Option<(SessionId, TurnId)>> {
        let row: Option<(uuid::Uuid, uuid::Uuid)> = sqlx::query_as(
            "SELECT t.session_id, t.id FROM inbound i JOIN turns t ON t.tenant_id = i.tenant_id AND t.id = i.turn_id
             WHERE i.tenant_id = $1 AND i.source = $2 AND i.dedupe_key = $3",
        )
        .bind(tenant.as_uuid())
        .bind(source)
        .bind(crate::messages::without_nul(dedupe_key))
        .fetch_optional(&mut *self.as_tenant(tenant).await?)
        .await?;
        Ok(row.map(|(session, turn)| (SessionId::from_uuid(session), TurnId::from_uuid(turn))))
    }

    /// Takes a chat message in once: its `inbound` row (unique per channel and platform message)
    /// and, when given, the turn it starts, in one transaction.
    /// With `batch`, the turn waits that long before it may start, and a message that joins it
    /// extends the wait (see [`merge_into_queued`]).
    pub async fn accept_inbound(
        self,
        tenant: TenantId,
        source: &str,
        dedupe_key: &str,
        payload: &Value,
        turn: Option<NewTurn>,
        batch: Option<Duration>,
    ) -> Result<Accepted> {
        self.accept_inbound_as(tenant, InboundRow { source, dedupe_key, payload }, turn, batch, true).await
    }

    /// [`Self::accept_inbound`] for a message that is its own turn whatever waits (`/queue`,
    /// `/steer`): never merged into a queued turn.
    pub async fn accept_inbound_alone(
        self,
        tenant: TenantId,
        source: &str,
        dedupe_key: &str,
        payload: &Value,
        turn: NewTurn,
    ) -> Result<Accepted> {
        self.accept_inbound_as(tenant, InboundRow { source, dedupe_key, payload }, Some(turn), None, false).await
    }

    /// The two public forms above in one transaction (they name the cases of `batch` and `merge`).
    async fn accept_inbound_as(
        self,
        tenant: TenantId,
        message: InboundRow<'_>,
        turn: Option<NewTurn>,
        batch: Option<Duration>,
        merge: bool,
    ) -> Result<Accepted> {
        let mut tx = self.tenant_tx(tenant).await?;
        let id = uuid::Uuid::now_v7();
        let inserted = sqlx::query(
            "INSERT INTO inbound (id, tenant_id, source, dedupe_key, payload) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (tenant_id, source, dedupe_key) DO NOTHING",
        )
        .bind(id)
        .bind(tenant.as_uuid())
        .bind(message.source)
        .bind(crate::messages::without_nul(message.dedupe_key))
        .bind(crate::messages::storable_json(message.payload)?)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if inserted == 0 {
            return Ok(Accepted::Duplicate);
        }
        let accepted = match turn {
            Some(new) => {
                let merged = if merge { merge_into_queued(&mut tx, tenant, &new, batch).await? } else { None };
                if let Some((session, turn)) = merged {
                    mark_processed(&mut tx, id, turn).await?;
                    tx.commit().await?;
                    return Ok(Accepted::Merged { session, turn });
                }
                let (session, turn) = enqueue_in(&mut tx, tenant, &new).await?;
                if let Some(wait) = batch {
                    sqlx::query(
                        "UPDATE turns SET not_before = now() + make_interval(secs => $3) WHERE tenant_id = $1 AND id = $2",
                    )
                    .bind(tenant.as_uuid())
                    .bind(turn.as_uuid())
                    .bind(wait.as_secs_f64())
                    .execute(&mut *tx)
                    .await?;
                }
                mark_processed(&mut tx, id, turn).await?;
                Accepted::Turn { session, turn }
            }
            None => {
                sqlx::query("UPDATE inbound SET processed_at = now() WHERE id = $1").bind(id).execute(&mut *tx).await?;
                Accepted::Stored
            }
        };
        tx.commit().await?;
        Ok(accepted)
    }
}
