//! What the chat gateway needs across tenants: finding the channel a platform calls about
//! (authenticated then by the platform's own secret, not an API key), the channels to poll,
//! taking chat messages in exactly once, and delivering replies from the outbox. Nothing
//! reachable from a tenant's API request uses these.

use std::time::Duration;

use serde_json::Value;
use sqlx::Row;

use hermes_core::{SessionId, TenantId, TurnId};

use crate::channels::Channel;
use crate::turns::{NewTurn, enqueue_in};
use crate::{Result, Store, StoreError};

/// A reply to deliver, claimed by one gateway pod for a while.
#[derive(Debug, Clone)]
pub struct OutboxItem {
    pub id: uuid::Uuid,
    pub tenant_id: TenantId,
    pub channel_id: Option<uuid::Uuid>,
    pub turn_id: Option<TurnId>,
    pub destination: Value,
    pub payload: Value,
    pub attempts: i32,
    /// Parts of the reply already delivered, and their platform message ids.
    pub sent_parts: i32,
    pub message_ids: Vec<String>,
    /// A part whose send began but was never recorded (the sender died), and since when.
    pub doubt: Option<(i32, chrono::DateTime<chrono::Utc>)>,
}

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

/// Appends a chat message to its conversation's turn that is still queued (a worker claims
/// turns with `FOR UPDATE`, so a turn is either merged into or started, never both).
async fn merge_into_queued(
    tx: &mut sqlx::PgConnection,
    tenant: TenantId,
    new: &NewTurn,
    batch: Option<Duration>,
) -> Result<Option<(SessionId, TurnId)>> {
    let crate::turns::TurnTarget::Route { route, .. } = &new.target else { return Ok(None) };
    let row = sqlx::query(
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
        serde_json::from_value(row.try_get("input")?).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    let addition = new.input.text();
    input.content = Some(match input.content.take() {
        Some(hermes_core::Content::Parts(mut parts)) => {
            parts.push(hermes_core::ContentPart::Text { text: addition });
            hermes_core::Content::Parts(parts)
        }
        Some(hermes_core::Content::Text(text)) => hermes_core::Content::Text(format!("{text}\n{addition}")),
        None => hermes_core::Content::Text(addition),
    });
    let turn: uuid::Uuid = row.try_get("id")?;
    sqlx::query(
        "UPDATE turns SET input = $3,
                not_before = CASE WHEN $4::float8 IS NULL THEN not_before ELSE now() + make_interval(secs => $4) END
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_uuid())
    .bind(turn)
    .bind(crate::messages::storable_json(&input)?)
    .bind(batch.map(|b| b.as_secs_f64()))
    .execute(&mut *tx)
    .await?;
    Ok(Some((SessionId::from_uuid(row.try_get("session_id")?), TurnId::from_uuid(turn))))
}

impl Store {
    /// The running or waiting turns of a chat's current conversation (what a new message
    /// interrupts), and how many turns are open in it.
    pub async fn route_busy_turns(&self, tenant: TenantId, route: &crate::Route) -> Result<(Vec<BusyTurn>, i64)> {
        let rows = sqlx::query(
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
        .fetch_all(self.pool())
        .await?;
        let open = i64::try_from(rows.len()).unwrap_or(i64::MAX);
        let mut busy = Vec::new();
        for row in rows.iter().filter(|r| r.try_get::<String, _>("status").is_ok_and(|s| s != "queued")) {
            let input: hermes_core::ChatMessage =
                serde_json::from_value(row.try_get("input")?).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            busy.push(BusyTurn {
                id: TurnId::from_uuid(row.try_get("id")?),
                begun: row.try_get("begun")?,
                input: input.text(),
            });
        }
        Ok((busy, open))
    }

    /// Starts a preview of `turn`'s answer in `chat`; `false` if the answer was delivered already.
    pub async fn stream_begin(&self, tenant: TenantId, turn: TurnId, chat: &str) -> Result<bool> {
        let done = sqlx::query(
            "INSERT INTO chat_streams (tenant_id, turn_id, chat_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
        )
        .bind(tenant.as_uuid())
        .bind(turn.as_uuid())
        .bind(crate::messages::without_nul(chat))
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Records the preview's message; `false` once the outbox took over (the preview must go).
    pub async fn stream_message(&self, tenant: TenantId, turn: TurnId, message_id: &str) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE chat_streams SET message_id = $3 WHERE tenant_id = $1 AND turn_id = $2 AND NOT finalized",
        )
        .bind(tenant.as_uuid())
        .bind(turn.as_uuid())
        .bind(message_id)
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Whether the outbox took the answer over (the preview stops).
    pub async fn stream_finalized(&self, tenant: TenantId, turn: TurnId) -> Result<bool> {
        let finalized: Option<bool> =
            sqlx::query_scalar("SELECT finalized FROM chat_streams WHERE tenant_id = $1 AND turn_id = $2")
                .bind(tenant.as_uuid())
                .bind(turn.as_uuid())
                .fetch_optional(self.pool())
                .await?;
        Ok(finalized.unwrap_or(true))
    }

    /// Takes a turn's preview over for the final answer: its chat and message, if it has one.
    pub async fn stream_finalize(&self, tenant: TenantId, turn: TurnId) -> Result<Option<(String, String)>> {
        let row: Option<(String, Option<String>)> = sqlx::query_as(
            "UPDATE chat_streams SET finalized = true WHERE tenant_id = $1 AND turn_id = $2
             RETURNING chat_id, message_id",
        )
        .bind(tenant.as_uuid())
        .bind(turn.as_uuid())
        .fetch_optional(self.pool())
        .await?;
        Ok(row.and_then(|(chat, message)| message.map(|m| (chat, m))))
    }

    /// Whether a chat message was taken in already (checked before acting on it).
    pub async fn inbound_seen(&self, tenant: TenantId, source: &str, dedupe_key: &str) -> Result<bool> {
        let seen: Option<i32> =
            sqlx::query_scalar("SELECT 1 FROM inbound WHERE tenant_id = $1 AND source = $2 AND dedupe_key = $3")
                .bind(tenant.as_uuid())
                .bind(source)
                .bind(crate::messages::without_nul(dedupe_key))
                .fetch_optional(self.pool())
                .await?;
        Ok(seen.is_some())
    }

    /// The channel with this id, whoever owns it (the caller then checks the platform's secret).
    pub async fn gateway_channel(&self, id: uuid::Uuid) -> Result<Channel> {
        let row = sqlx::query("SELECT * FROM channels WHERE id = $1")
            .bind(id)
            .fetch_optional(self.pool())
            .await?
            .ok_or(StoreError::NotFound)?;
        Channel::from_row(&row)
    }

    /// Active channels of `platform` that receive in `mode` (the ones a gateway must poll).
    pub async fn gateway_channels(&self, platform: &str, mode: &str) -> Result<Vec<Channel>> {
        let rows = sqlx::query(
            "SELECT * FROM channels WHERE platform = $1 AND mode = $2 AND status = 'active' ORDER BY created_at",
        )
        .bind(platform)
        .bind(mode)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(Channel::from_row).collect()
    }

    /// Takes a chat message in once: its `inbound` row (unique per channel and platform message)
    /// and, when given, the turn it starts, in one transaction.
    /// With `batch`, the turn waits that long before it may start, and a message that joins it
    /// extends the wait (see [`merge_into_queued`]).
    pub async fn accept_inbound(
        &self,
        tenant: TenantId,
        source: &str,
        dedupe_key: &str,
        payload: &Value,
        turn: Option<NewTurn>,
        batch: Option<Duration>,
    ) -> Result<Accepted> {
        self.accept_inbound_as(tenant, source, dedupe_key, payload, turn, batch, true).await
    }

    /// [`Self::accept_inbound`] for a message that is its own turn whatever waits (`/queue`,
    /// `/steer`): never merged into a queued turn.
    pub async fn accept_inbound_alone(
        &self,
        tenant: TenantId,
        source: &str,
        dedupe_key: &str,
        payload: &Value,
        turn: NewTurn,
    ) -> Result<Accepted> {
        self.accept_inbound_as(tenant, source, dedupe_key, payload, Some(turn), None, false).await
    }

    #[expect(clippy::too_many_arguments, reason = "the two public forms above name the cases")]
    async fn accept_inbound_as(
        &self,
        tenant: TenantId,
        source: &str,
        dedupe_key: &str,
        payload: &Value,
        turn: Option<NewTurn>,
        batch: Option<Duration>,
        merge: bool,
    ) -> Result<Accepted> {
        let mut tx = self.pool().begin().await?;
        let id = uuid::Uuid::now_v7();
        let inserted = sqlx::query(
            "INSERT INTO inbound (id, tenant_id, source, dedupe_key, payload) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (tenant_id, source, dedupe_key) DO NOTHING",
        )
        .bind(id)
        .bind(tenant.as_uuid())
        .bind(source)
        .bind(crate::messages::without_nul(dedupe_key))
        .bind(crate::messages::storable_json(payload)?)
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
                    sqlx::query("UPDATE inbound SET turn_id = $2, processed_at = now() WHERE id = $1")
                        .bind(id)
                        .bind(turn.as_uuid())
                        .execute(&mut *tx)
                        .await?;
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
                sqlx::query("UPDATE inbound SET turn_id = $2, processed_at = now() WHERE id = $1")
                    .bind(id)
                    .bind(turn.as_uuid())
                    .execute(&mut *tx)
                    .await?;
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

    /// Puts a gateway message (a command's answer, a notice) in the outbox, once per key.
    pub async fn enqueue_outbox(
        &self,
        tenant: TenantId,
        channel: uuid::Uuid,
        destination: &Value,
        dedupe_key: &str,
        payload: &Value,
    ) -> Result<()> {
        let mut conn = self.pool().acquire().await?;
        enqueue_outbox_in(&mut conn, tenant, channel, destination, dedupe_key, payload).await
    }

    /// Claims up to `limit` due replies for `lease` (oldest first; `SKIP LOCKED`, so any number
    /// of gateway pods share the work). A claim that is not settled in time is due again.
    /// Replies to bots reached through a socket go only through the pod holding it: those are
    /// claimed with `only` set to their channel, and never without.
    pub async fn claim_outbox(&self, limit: i64, lease: Duration, only: Option<uuid::Uuid>) -> Result<Vec<OutboxItem>> {
        let rows = sqlx::query(
            "UPDATE outbox o SET lease_until = now() + make_interval(secs => $2), attempts = o.attempts + 1
             FROM (SELECT id FROM outbox
                   WHERE status = 'pending' AND next_attempt_at <= now()
                     AND (lease_until IS NULL OR lease_until < now())
                     AND CASE WHEN $3::uuid IS NULL
                              THEN NOT EXISTS (SELECT 1 FROM channels c
                                               WHERE c.id = outbox.channel_id AND c.mode = 'websocket')
                              ELSE channel_id = $3 END
                   ORDER BY created_at LIMIT $1 FOR UPDATE SKIP LOCKED) due
             WHERE o.id = due.id
             RETURNING o.id, o.tenant_id, o.channel_id, o.turn_id, o.destination, o.payload, o.attempts,
                       o.sent_parts, o.platform_message_id, o.doubt_part, o.doubt_since",
        )
        .bind(limit)
        .bind(lease.as_secs_f64())
        .bind(only)
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| {
                let tenant: uuid::Uuid = r.try_get("tenant_id")?;
                Ok(OutboxItem {
                    id: r.try_get("id")?,
                    #[expect(clippy::disallowed_methods, reason = "the row's own tenant, read with the row")]
                    tenant_id: TenantId::from_authenticated(tenant),
                    channel_id: r.try_get("channel_id")?,
                    turn_id: r.try_get::<Option<uuid::Uuid>, _>("turn_id")?.map(TurnId::from_uuid),
                    destination: r.try_get("destination")?,
                    payload: r.try_get("payload")?,
                    attempts: r.try_get("attempts")?,
                    sent_parts: r.try_get("sent_parts")?,
                    message_ids: r
                        .try_get::<Option<String>, _>("platform_message_id")?
                        .map(|ids| ids.split(',').filter(|s| !s.is_empty()).map(str::to_owned).collect())
                        .unwrap_or_default(),
                    doubt: match (r.try_get::<Option<i32>, _>("doubt_part")?, r.try_get("doubt_since")?) {
                        (Some(part), Some(since)) => Some((part, since)),
                        _ => None,
                    },
                })
            })
            .collect()
    }

    /// One more part of a reply went out (recorded before the next is sent, so a retry after
    /// a crash sends only what is missing).
    pub async fn outbox_part_sent(&self, id: uuid::Uuid, parts: i32, message_ids: &[String]) -> Result<()> {
        sqlx::query(
            "UPDATE outbox SET sent_parts = $2, platform_message_id = $3, doubt_part = NULL, doubt_since = NULL
             WHERE id = $1",
        )
        .bind(id)
        .bind(parts)
        .bind(message_ids.join(","))
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Part `part` is about to be sent (in doubt until [`Self::outbox_part_sent`]).
    pub async fn outbox_part_sending(&self, id: uuid::Uuid, part: i32) -> Result<()> {
        sqlx::query(
            "UPDATE outbox SET doubt_part = $2,
                    doubt_since = CASE WHEN doubt_part = $2 THEN doubt_since ELSE now() END
             WHERE id = $1",
        )
        .bind(id)
        .bind(part)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// The platform refused the part on its way: it is not in doubt.
    pub async fn outbox_part_refused(&self, id: uuid::Uuid) -> Result<()> {
        sqlx::query("UPDATE outbox SET doubt_part = NULL, doubt_since = NULL WHERE id = $1")
            .bind(id)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// The whole reply went out.
    pub async fn outbox_sent(&self, id: uuid::Uuid) -> Result<()> {
        sqlx::query("UPDATE outbox SET status = 'sent', sent_at = now(), lease_until = NULL WHERE id = $1")
            .bind(id)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// A delivery failed for now: try again after `delay`.
    pub async fn outbox_retry(&self, id: uuid::Uuid, delay: Duration, error: &str) -> Result<()> {
        sqlx::query(
            "UPDATE outbox SET next_attempt_at = now() + make_interval(secs => $2), lease_until = NULL,
                    last_error = $3
             WHERE id = $1",
        )
        .bind(id)
        .bind(delay.as_secs_f64())
        .bind(crate::messages::without_nul(error))
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// A delivery that will never succeed (the bot was blocked, the chat is gone).
    pub async fn outbox_failed(&self, id: uuid::Uuid, error: &str) -> Result<()> {
        sqlx::query("UPDATE outbox SET status = 'failed', lease_until = NULL, last_error = $2 WHERE id = $1")
            .bind(id)
            .bind(crate::messages::without_nul(error))
            .execute(self.pool())
            .await?;
        Ok(())
    }
}

/// `Store::enqueue_outbox` inside the caller's transaction.
pub(crate) async fn enqueue_outbox_in(
    db: &mut sqlx::PgConnection,
    tenant: TenantId,
    channel: uuid::Uuid,
    destination: &Value,
    dedupe_key: &str,
    payload: &Value,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO outbox (id, tenant_id, channel_id, destination, dedupe_key, payload)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id, dedupe_key) DO NOTHING",
    )
    .bind(uuid::Uuid::now_v7())
    .bind(tenant.as_uuid())
    .bind(channel)
    .bind(destination)
    .bind(crate::messages::without_nul(dedupe_key))
    .bind(crate::messages::storable_json(payload)?)
    .execute(db)
    .await?;
    Ok(())
}
