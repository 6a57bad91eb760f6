//! Putting a tenant's gateway messages (a command's answer, a notice) in the outbox. Claiming
//! and settling deliveries spans tenants: see [`crate::system::outbox`].

use hermes_core::TenantId;
use hermes_core::outbox::{Destination, OutboxPayload};

use crate::Result;
use crate::admin::audited::tenant_writes;

tenant_writes! {
    in Chat;
    /// Puts a gateway message (a command's answer, a notice) in the outbox, once per key. The
    /// destination's channel must be the tenant's (`NotFound` otherwise): the gateway sends
    /// through the channel's bot without asking whose row it is. In an audited change, the
    /// message goes out only if the change commits.
    pub async fn enqueue_outbox(destination: &Destination, dedupe_key: &str, payload: &OutboxPayload) -> Result<()>
        = enqueue_outbox_in;
}

/// `Chat::enqueue_outbox` inside the caller's transaction.
pub(crate) async fn enqueue_outbox_in(
    db: &mut sqlx::PgConnection,
    tenant: TenantId,
    destination: &Destination,
    dedupe_key: &str,
    payload: &OutboxPayload,
) -> Result<()> {
    let owned: bool = sqlx::query_scalar(
        "WITH channel AS (SELECT id FROM channels WHERE tenant_id = $2 AND id = $3),
              queued AS (
                INSERT INTO outbox (id, tenant_id, channel_id, destination, dedupe_key, payload)
                SELECT $1, $2, channel.id, $4, $5, $6 FROM channel
                ON CONFLICT (tenant_id, dedupe_key) DO NOTHING)
         SELECT EXISTS (SELECT 1 FROM channel)",
    )
    .bind(uuid::Uuid::now_v7())
    .bind(tenant.as_uuid())
    .bind(destination.channel_id.as_uuid())
    .bind(sqlx::types::Json(destination))
    .bind(crate::messages::without_nul(dedupe_key))
    .bind(crate::messages::storable_json(payload)?)
    .fetch_one(db)
    .await?;
    if owned { Ok(()) } else { Err(crate::StoreError::NotFound) }
}
