//! A turn's rows in the outbox, written in the transaction that ends or parks it: its answer,
//! once for the chat it came from and once for each further chat (`Destination::also`), and
//! the question it parks on. A destination whose channel is not the tenant's (deleted while
//! the turn ran) gets no row: there is no bot to send it with. Each row is written once
//! (its dedupe key names the turn), however often the statement is retried.

use sqlx::PgConnection;

use hermes_core::outbox::{AnswerStatus, Destination, OutboxPayload};
use hermes_core::{PendingInteraction, TenantId, TurnId, TurnOutcome};

use crate::Result;
use crate::turns::TurnStatus;

/// How a turn that ends with `status` answers its chat: only a completed or failed turn does
/// (a cancelled one was stopped by its user; a steered one is absorbed but still answers,
/// with the `steered` outcome the gateway sends as nothing).
pub(crate) fn answer_status(status: TurnStatus) -> Option<AnswerStatus> {
    match status {
        TurnStatus::Completed => Some(AnswerStatus::Completed),
        TurnStatus::Failed => Some(AnswerStatus::Failed),
        _ => None,
    }
}

/// Queues turn `turn`'s answer for `reply_to` and each of its further chats.
pub(crate) async fn queue_answer(
    db: &mut PgConnection,
    tenant: TenantId,
    turn: TurnId,
    reply_to: &Destination,
    status: AnswerStatus,
    outcome: &TurnOutcome,
) -> Result<()> {
    let payload = OutboxPayload::Answer { status, outcome: Some(outcome.clone()) };
    let primary = Destination { also: Vec::new(), ..reply_to.clone() };
    let mut rows = vec![(primary, format!("turn:{}:answer", turn.as_uuid()))];
    for (n, further) in reply_to.also.iter().enumerate() {
        rows.push((further.clone(), format!("turn:{}:answer:{}", turn.as_uuid(), n + 1)));
    }
    insert(db, tenant, turn, &rows, &payload).await
}

/// Queues the question turn `turn` parks on, for the chat it came from.
pub(crate) async fn queue_question(
    db: &mut PgConnection,
    tenant: TenantId,
    turn: TurnId,
    reply_to: &Destination,
    interaction: &PendingInteraction,
) -> Result<()> {
    let payload = OutboxPayload::Interaction { interaction: interaction.clone() };
    let rows = [(reply_to.clone(), format!("interaction:{}", interaction.id))];
    insert(db, tenant, turn, &rows, &payload).await
}

/// One row per (destination, dedupe key), skipping destinations on channels the tenant does
/// not have, and keys already queued.
async fn insert(
    db: &mut PgConnection,
    tenant: TenantId,
    turn: TurnId,
    rows: &[(Destination, String)],
    payload: &OutboxPayload,
) -> Result<()> {
    let ids: Vec<uuid::Uuid> = rows.iter().map(|_| uuid::Uuid::now_v7()).collect();
    let channels: Vec<uuid::Uuid> = rows.iter().map(|(d, _)| d.channel_id.as_uuid()).collect();
    let destinations = rows.iter().map(|(d, _)| crate::messages::storable_json(d)).collect::<Result<Vec<_>>>()?;
    let keys: Vec<&str> = rows.iter().map(|(_, key)| key.as_str()).collect();
    sqlx::query(
        "INSERT INTO outbox (id, tenant_id, turn_id, channel_id, destination, dedupe_key, payload)
         SELECT r.id, $1, $2, r.channel_id, r.destination, r.dedupe_key, $3
         FROM UNNEST($4::uuid[], $5::uuid[], $6::jsonb[], $7::text[]) AS r(id, channel_id, destination, dedupe_key)
         WHERE EXISTS (SELECT 1 FROM channels c WHERE c.tenant_id = $1 AND c.id = r.channel_id)
         ON CONFLICT (tenant_id, dedupe_key) DO NOTHING",
    )
    .bind(tenant.as_uuid())
    .bind(turn.as_uuid())
    .bind(crate::messages::storable_json(payload)?)
    .bind(ids)
    .bind(channels)
    .bind(destinations)
    .bind(keys)
    .execute(db)
    .await?;
    Ok(())
}
