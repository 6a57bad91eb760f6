//! Inbound webhooks: the hook a POST names, before any tenant is known (the request's
//! signature, checked with the hook's secret, then proves the sender), and taking a delivery
//! in by the hook's id.

use crate::webhooks::{Started, Webhook, WebhookStart};
use crate::{Result, views::System};

impl System<'_> {
    /// The hook a POST names, whoever's it is: the gateway knows no tenant until the request's
    /// signature, checked with this hook's secret, proves the sender holds it.
    pub async fn gateway_webhook(self, id: hermes_core::WebhookId) -> Result<Webhook> {
        self.unowned_row("SELECT * FROM webhooks WHERE id = $1", id.as_uuid()).await
    }

    /// Takes a delivery in: records what identifies it (`seen_as`: its delivery id, and for
    /// schemes that sign only the body, the body's digest too) and starts what it asks for, in
    /// one transaction (a pod dying in between leaves neither, and the sender's retry starts it
    /// once). `None` when the hook saw any of `seen_as` in the last day (a retry, or a replay
    /// under a new id): nothing starts twice. Records older than a day are dropped as it goes.
    pub async fn accept_webhook(
        self,
        hook: &Webhook,
        seen_as: &[String],
        event: &str,
        start: WebhookStart,
    ) -> Result<Option<Started>> {
        let mut tx = self.system_pool().begin().await?;
        sqlx::query("DELETE FROM webhook_deliveries WHERE webhook_id = $1 AND received_at < now() - interval '1 day'")
            .bind(hook.id.as_uuid())
            .execute(&mut *tx)
            .await?;
        let seen_as: Vec<String> = seen_as.iter().map(|key| crate::messages::without_nul(key)).collect();
        let recorded = sqlx::query(
            "INSERT INTO webhook_deliveries (webhook_id, delivery_id, event)
             SELECT $1, key, $3 FROM unnest($2::text[]) AS key ON CONFLICT DO NOTHING",
        )
        .bind(hook.id.as_uuid())
        .bind(&seen_as)
        .bind(crate::messages::without_nul(event))
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if seen_as.is_empty() || recorded < seen_as.len() as u64 {
            // Dropping the transaction forgets the keys that were new, too.
            return Ok(None);
        }
        sqlx::query("UPDATE webhooks SET last_received_at = now() WHERE id = $1")
            .bind(hook.id.as_uuid())
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
