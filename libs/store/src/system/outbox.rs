//! Delivering the outbox: gateway pods claim due replies of every tenant and settle them by id.

use std::time::Duration;

use chrono::{DateTime, Utc};

use hermes_core::outbox::{Destination, OutboxPayload};
use hermes_core::{ChannelId, TenantId, TurnId};

use crate::{Result, views::System};

/// A reply to deliver, claimed by one gateway pod for a while.
#[derive(Debug, Clone)]
pub struct OutboxItem {
    pub id: uuid::Uuid,
    pub tenant_id: TenantId,
    pub channel_id: Option<ChannelId>,
    pub turn_id: Option<TurnId>,
    pub destination: Destination,
    pub payload: OutboxPayload,
    pub attempts: i32,
    /// Parts of the reply already delivered, and their platform message ids.
    pub sent_parts: i32,
    pub message_ids: Vec<String>,
    /// A part whose send began but was never recorded (the sender died), and since when.
    pub doubt: Option<(i32, DateTime<Utc>)>,
    /// This claim's token: every record of the claim carries it.
    pub lease: uuid::Uuid,
    /// The trace of the turn this answers (its delivery is the trace's last span).
    pub trace: Option<hermes_core::trace::TraceParent>,
}

impl System<'_> {
    /// Claims up to `limit` due replies for `lease` (oldest first; `SKIP LOCKED`, so any number
    /// of gateway pods share the work), each under its own token ([`OutboxItem::lease`]) that
    /// every later record of the claim must carry. A claim that is not settled (or renewed) in
    /// time is due again. Replies to bots reached through a socket go only through the pod
    /// holding it: those are claimed with `only` set to their channel, and never without.
    pub async fn claim_outbox(self, limit: i64, lease: Duration, only: Option<ChannelId>) -> Result<Vec<OutboxItem>> {
        let rows = sqlx::query_as::<_, ClaimedRow>(
            "UPDATE outbox o SET lease_until = now() + make_interval(secs => $2), attempts = o.attempts + 1,
                    lease_owner = gen_random_uuid()
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
                       o.sent_parts, o.platform_message_id, o.doubt_part, o.doubt_since, o.lease_owner,
                       (SELECT t.trace_parent FROM turns t WHERE t.tenant_id = o.tenant_id AND t.id = o.turn_id)
                         AS trace_parent",
        )
        .bind(limit)
        .bind(lease.as_secs_f64())
        .bind(only.map(|c| c.as_uuid()))
        .fetch_all(self.system_pool())
        .await?;
        let mut items = Vec::with_capacity(rows.len());
        for row in rows {
            match row.into_item() {
                Ok(item) => items.push(item),
                // A row no sender can read would be claimed again forever: it fails once, named.
                Err((id, error)) => {
                    tracing::error!(outbox.id = %id, %error, "an outbox row cannot be read; it is marked failed");
                    sqlx::query(
                        "UPDATE outbox SET status = 'failed', lease_until = NULL, last_error = $2 WHERE id = $1",
                    )
                    .bind(id)
                    .bind(crate::messages::without_nul(&format!("unreadable: {error}")))
                    .execute(self.system_pool())
                    .await?;
                }
            }
        }
        Ok(items)
    }

    /// Extends the claim of `item` by `lease` (before each part, so a long reply keeps it);
    /// `false`: the claim lapsed and another sender has the row now.
    pub async fn outbox_renew(self, item: &OutboxItem, lease: Duration) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE outbox SET lease_until = now() + make_interval(secs => $3)
             WHERE id = $1 AND lease_owner = $2 AND status = 'pending'",
        )
        .bind(item.id)
        .bind(item.lease)
        .bind(lease.as_secs_f64())
        .execute(self.system_pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// One more part of a reply went out (recorded before the next is sent, so a retry after
    /// a crash sends only what is missing); never fewer parts than recorded. `false`: the claim
    /// is another sender's now.
    pub async fn outbox_part_sent(self, item: &OutboxItem, parts: i32, message_ids: &[String]) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE outbox SET sent_parts = $3, platform_message_id = $4, doubt_part = NULL, doubt_since = NULL
             WHERE id = $1 AND lease_owner = $2 AND sent_parts <= $3",
        )
        .bind(item.id)
        .bind(item.lease)
        .bind(parts)
        .bind(message_ids.join(","))
        .execute(self.system_pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Part `part` is about to be sent (in doubt until [`Self::outbox_part_sent`]), and the
    /// claim is extended by `lease`. `false`: the claim is another sender's now: do not send.
    pub async fn outbox_part_sending(self, item: &OutboxItem, part: i32, lease: Duration) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE outbox SET doubt_part = $3,
                    doubt_since = CASE WHEN doubt_part = $3 THEN doubt_since ELSE now() END,
                    lease_until = now() + make_interval(secs => $4)
             WHERE id = $1 AND lease_owner = $2 AND status = 'pending'",
        )
        .bind(item.id)
        .bind(item.lease)
        .bind(part)
        .bind(lease.as_secs_f64())
        .execute(self.system_pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// The platform refused the part on its way: it is not in doubt.
    pub async fn outbox_part_refused(self, item: &OutboxItem) -> Result<bool> {
        let done =
            sqlx::query("UPDATE outbox SET doubt_part = NULL, doubt_since = NULL WHERE id = $1 AND lease_owner = $2")
                .bind(item.id)
                .bind(item.lease)
                .execute(self.system_pool())
                .await?;
        Ok(done.rows_affected() == 1)
    }

    /// The whole reply went out.
    pub async fn outbox_sent(self, item: &OutboxItem) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE outbox SET status = 'sent', sent_at = now(), lease_until = NULL
             WHERE id = $1 AND lease_owner = $2 AND status = 'pending'",
        )
        .bind(item.id)
        .bind(item.lease)
        .execute(self.system_pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// A delivery failed for now: try again after `delay`.
    pub async fn outbox_retry(self, item: &OutboxItem, delay: Duration, error: &str) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE outbox SET next_attempt_at = now() + make_interval(secs => $3), lease_until = NULL,
                    last_error = $4
             WHERE id = $1 AND lease_owner = $2 AND status = 'pending'",
        )
        .bind(item.id)
        .bind(item.lease)
        .bind(delay.as_secs_f64())
        .bind(crate::messages::without_nul(error))
        .execute(self.system_pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// A delivery that will never succeed (the bot was blocked, the chat is gone).
    pub async fn outbox_failed(self, item: &OutboxItem, error: &str) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE outbox SET status = 'failed', lease_until = NULL, last_error = $3
             WHERE id = $1 AND lease_owner = $2 AND status = 'pending'",
        )
        .bind(item.id)
        .bind(item.lease)
        .bind(crate::messages::without_nul(error))
        .execute(self.system_pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }
}

/// A claimed row as `claim_outbox` returns it; its destination and payload are parsed after.
#[derive(sqlx::FromRow)]
struct ClaimedRow {
    id: uuid::Uuid,
    #[sqlx(try_from = "crate::rows::Id")]
    tenant_id: TenantId,
    #[sqlx(try_from = "crate::rows::MaybeId")]
    channel_id: Option<ChannelId>,
    #[sqlx(try_from = "crate::rows::MaybeId")]
    turn_id: Option<TurnId>,
    destination: serde_json::Value,
    payload: serde_json::Value,
    attempts: i32,
    sent_parts: i32,
    platform_message_id: Option<String>,
    doubt_part: Option<i32>,
    doubt_since: Option<DateTime<Utc>>,
    lease_owner: uuid::Uuid,
    #[sqlx(try_from = "crate::rows::MaybeText")]
    trace_parent: Option<hermes_core::trace::TraceParent>,
}

impl ClaimedRow {
    /// The item, or (its id, why its destination or payload does not parse).
    fn into_item(self) -> std::result::Result<OutboxItem, (uuid::Uuid, serde_json::Error)> {
        let parsed =
            serde_json::from_value(self.destination).and_then(|d| Ok((d, serde_json::from_value(self.payload)?)));
        let (destination, payload) = parsed.map_err(|e| (self.id, e))?;
        Ok(OutboxItem {
            id: self.id,
            tenant_id: self.tenant_id,
            channel_id: self.channel_id,
            turn_id: self.turn_id,
            destination,
            payload,
            attempts: self.attempts,
            sent_parts: self.sent_parts,
            message_ids: self
                .platform_message_id
                .map(|ids| ids.split(',').filter(|s| !s.is_empty()).map(str::to_owned).collect())
                .unwrap_or_default(),
            doubt: self.doubt_part.zip(self.doubt_since),
            lease: self.lease_owner,
            trace: self.trace_parent,
        })
    }
}
