//! Inbound webhooks: the hook a POST names, before any tenant is known (the request's
//! signature, checked with the hook's secret, then proves the sender), and taking a delivery
//! in by the hook's id.

use crate::webhooks::{Started, Webhook, WebhookStart};
use crate::{Result, Store, StoreError};

impl Store {
    /// The hook a POST names, whoever's it is: the gateway knows no tenant until the request's
    /// signature, checked with this hook's secret, proves the sender holds it.
    pub async fn gateway_webhook(&self, id: uuid::Uuid) -> Result<Webhook> {
        let row = sqlx::query("SELECT * FROM webhooks WHERE id = $1")
            .bind(id)
            .fetch_optional(self.pool())
            .await?
            .ok_or(StoreError::NotFound)?;
        crate::rows::read::<Webhook>(&row)
    }

    /// Takes a delivery in: records its id and starts what it asks for, in one transaction
    /// (a pod dying in between leaves neither, and the sender's retry starts it once). `None`
    /// when the hook saw this delivery id in the last day (a retry): nothing starts twice.
    /// Records older than a day are dropped as it goes.
    pub async fn accept_webhook(
        &self,
        hook: &Webhook,
        delivery_id: &str,
        event: &str,
        start: WebhookStart,
    ) -> Result<Option<Started>> {
        let mut tx = self.pool().begin().await?;
        sqlx::query("DELETE FROM webhook_deliveries WHERE webhook_id = $1 AND received_at < now() - interval '1 day'")
            .bind(hook.id)
            .execute(&mut *tx)
            .await?;
        let fresh = sqlx::query(
            "INSERT INTO webhook_deliveries (webhook_id, delivery_id, event) VALUES ($1, $2, $3)
             ON CONFLICT DO NOTHING",
        )
        .bind(hook.id)
        .bind(crate::messages::without_nul(delivery_id))
        .bind(crate::messages::without_nul(event))
        .execute(&mut *tx)
        .await?
        .rows_affected()
            > 0;
        if !fresh {
            return Ok(None);
        }
        sqlx::query("UPDATE webhooks SET last_received_at = now() WHERE id = $1")
            .bind(hook.id)
            .execute(&mut *tx)
            .await?;
        let started = match start {
            WebhookStart::Turn(turn) => {
                let (session, turn) = crate::turns::enqueue_in(&mut tx, hook.tenant_id, &turn).await?;
                Started::Turn { session, turn }
            }
            WebhookStart::FireJob { job, context } => {
                crate::cron_fires::fire_in(&mut tx, hook.tenant_id, job, &context).await?;
                Started::Job(job)
            }
        };
        tx.commit().await?;
        Ok(Some(started))
    }
}
