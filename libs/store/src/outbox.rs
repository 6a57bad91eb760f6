//! Putting a tenant's gateway messages (a command's answer, a notice) in the outbox. Claiming
//! and settling deliveries spans tenants: see [`crate::system::outbox`].

use serde_json::Value;

use hermes_core::TenantId;

use crate::{Result, Store};

impl Store {
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
