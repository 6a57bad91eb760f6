//! Outbound event webhooks (migration 0033): a tenant's endpoints and the events waiting for
//! them. Triggers write the events with the changes they report; the gateway claims due ones
//! ([`System::claim_events`](crate::views::System::claim_events)), posts them signed the Standard Webhooks way, and settles each
//! ([`System::settle_event`](crate::views::System::settle_event)): delivered, due again later, or given up. Those two span tenants
//! and live in [`crate::system::event_deliveries`].

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgConnection;

use hermes_core::{EventDeliveryId, EventHookId, TenantId};

use crate::admin::audited::tenant_writes;

use crate::{Result, SecretBox, StoreError, views::Automation};
/// A tenant's endpoint (its secret is never part of it): the row is the wire's view of it.
pub use hermes_wire::v1::EventEndpoint as EventHook;
pub use hermes_wire::v1::{DeliveryStatus, EventDelivery};

/// The events a hook can take.
pub const EVENTS: &[&str] = &[
    "turn.finished",
    "turn.failed",
    "tool.finished",
    "session.started",
    "session.ended",
    "child.finished",
    "cron.run.finished",
    "cron.run.failed",
    "approval.requested",
    "approval.answered",
];

/// Changes to a hook (`None`: unchanged).
#[derive(Debug, Clone, Default)]
pub struct EventHookChanges {
    pub url: Option<String>,
    pub events: Option<Vec<String>>,
    pub description: Option<String>,
    pub enabled: Option<bool>,
}

/// An event claimed for delivery.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DueEvent {
    #[sqlx(try_from = "crate::rows::Id")]
    pub id: EventDeliveryId,
    #[sqlx(try_from = "crate::rows::Id")]
    pub tenant_id: TenantId,
    #[sqlx(try_from = "crate::rows::Id")]
    pub hook_id: EventHookId,
    pub url: String,
    pub event: String,
    pub data: Value,
    pub attempts: i32,
    pub created_at: DateTime<Utc>,
    #[sqlx(rename = "secret")]
    sealed_secret: Vec<u8>,
}

impl DueEvent {
    /// The signing key (the bytes behind the `whsec_` secret shown to the tenant).
    pub fn key(&self, secrets: Option<&SecretBox>) -> Result<Vec<u8>> {
        SecretBox::required(secrets, "signing events")?.open(&context(self.hook_id), &self.sealed_secret)
    }
}

/// How a delivery attempt ended.
#[derive(Debug, Clone)]
pub enum Attempt {
    Delivered {
        status: i32,
    },
    /// Try again after `after` (a 5xx, 408, 429 or no answer).
    Retry {
        status: Option<i32>,
        error: String,
        after: Duration,
    },
    /// Given up (a 4xx, or out of attempts).
    Failed {
        status: Option<i32>,
        error: String,
    },
}

/// The sealing context of the hook's secret (the same text as when it was a bare uuid).
fn context(id: EventHookId) -> String {
    format!("event-hook:{id}")
}

impl Automation<'_> {
    /// Adds an endpoint; returns it with its secret (`whsec_…`, shown this once).
    pub async fn create_event_hook(
        self,
        tenant: TenantId,
        url: &str,
        events: &[String],
        description: &str,
        secrets: Option<&SecretBox>,
    ) -> Result<(EventHook, String)> {
        let id = EventHookId::new();
        let (key, shown) = crate::secrets::signing_secret()?;
        let sealed = SecretBox::required(secrets, "an event hook's secret")?.seal(&context(id), &key)?;
        let row = sqlx::query(
            "INSERT INTO event_hooks (id, tenant_id, url, events, secret, description)
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING *",
        )
        .bind(id.as_uuid())
        .bind(tenant.as_uuid())
        .bind(url)
        .bind(events)
        .bind(sealed)
        .bind(crate::messages::without_nul(description))
        .fetch_one(&mut *self.as_tenant(tenant).await?)
        .await?;
        Ok((crate::rows::read::<EventHook>(&row)?, shown))
    }

    pub async fn list_event_hooks(self, tenant: TenantId) -> Result<Vec<EventHook>> {
        self.rows_of(tenant, "SELECT * FROM event_hooks WHERE tenant_id = $1 ORDER BY created_at, id").await
    }

    pub async fn event_hook(self, tenant: TenantId, id: EventHookId) -> Result<EventHook> {
        self.row_of(tenant, "SELECT * FROM event_hooks WHERE tenant_id = $1 AND id = $2", id.as_uuid()).await
    }

    pub async fn update_event_hook(
        self,
        tenant: TenantId,
        id: EventHookId,
        changes: &EventHookChanges,
    ) -> Result<EventHook> {
        let row = sqlx::query(
            "UPDATE event_hooks SET url = COALESCE($3, url), events = COALESCE($4, events),
                    description = COALESCE($5, description), enabled = COALESCE($6, enabled), updated_at = now()
             WHERE tenant_id = $1 AND id = $2 RETURNING *",
        )
        .bind(tenant.as_uuid())
        .bind(id.as_uuid())
        .bind(changes.url.as_deref())
        .bind(changes.events.as_ref())
        .bind(changes.description.as_deref().map(crate::messages::without_nul))
        .bind(changes.enabled)
        .fetch_optional(&mut *self.as_tenant(tenant).await?)
        .await?
        .ok_or(StoreError::NotFound)?;
        crate::rows::read::<EventHook>(&row)
    }

    /// Deletes an endpoint and the events still waiting for it; `false` when there was none.
    pub async fn delete_event_hook(self, tenant: TenantId, id: EventHookId) -> Result<bool> {
        self.delete_row_of(tenant, "DELETE FROM event_hooks WHERE tenant_id = $1 AND id = $2", id.as_uuid()).await
    }

    /// An endpoint's latest deliveries, newest first.
    pub async fn event_deliveries(self, tenant: TenantId, hook: EventHookId, limit: i64) -> Result<Vec<EventDelivery>> {
        let deliveries: Vec<sqlx::types::Json<EventDelivery>> = sqlx::query_scalar(
            "SELECT jsonb_build_object('id', id, 'event', event, 'status', status, 'attempts', attempts,
                        'last_status', last_status, 'last_error', last_error, 'created_at', created_at,
                        'next_attempt_at', CASE WHEN status = 'pending' THEN next_attempt_at END,
                        'delivered_at', delivered_at, 'data', data) AS delivery
             FROM event_deliveries WHERE tenant_id = $1 AND hook_id = $2 ORDER BY created_at DESC LIMIT $3",
        )
        .bind(tenant.as_uuid())
        .bind(hook.as_uuid())
        .bind(limit)
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?;
        Ok(deliveries.into_iter().map(|delivery| delivery.0).collect())
    }
}

tenant_writes! {
    in Automation;
    /// Queues a `ping` for one endpoint (to check the receiver).
    pub async fn ping_event_hook(id: EventHookId) -> Result<EventDeliveryId> = ping_event_hook_on;

    /// Sends a delivered or failed event once more, from the first attempt: under the same id,
    /// so a receiver that drops repeats by `webhook-id` sees it is the same event. `Busy` while
    /// it is still on its way.
    pub async fn resend_event(hook: EventHookId, delivery: EventDeliveryId) -> Result<()> = resend_event_on;
}

/// [`Automation::ping_event_hook`](crate::views::Automation::ping_event_hook) on a connection already set to `tenant`.
async fn ping_event_hook_on(conn: &mut PgConnection, tenant: TenantId, id: EventHookId) -> Result<EventDeliveryId> {
    let event = EventDeliveryId::new();
    let done = sqlx::query(
        "INSERT INTO event_deliveries (id, tenant_id, hook_id, event, data)
         SELECT $3, tenant_id, id, 'ping', '{}'::jsonb FROM event_hooks WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_uuid())
    .bind(id.as_uuid())
    .bind(event.as_uuid())
    .execute(conn)
    .await?;
    crate::require_changed(&done)?;
    Ok(event)
}

/// [`Automation::resend_event`](crate::views::Automation::resend_event) on a connection already set to `tenant`.
async fn resend_event_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    hook: EventHookId,
    delivery: EventDeliveryId,
) -> Result<()> {
    let status: Option<String> = sqlx::query_scalar(
        "WITH target AS (
            SELECT id, status FROM event_deliveries WHERE tenant_id = $1 AND hook_id = $2 AND id = $3 FOR UPDATE
         ), resent AS (
            UPDATE event_deliveries d SET status = 'pending', attempts = 0, next_attempt_at = now(),
                   last_status = NULL, last_error = NULL, delivered_at = NULL
            FROM target WHERE d.id = target.id AND target.status <> 'pending'
         )
         SELECT status FROM target",
    )
    .bind(tenant.as_uuid())
    .bind(hook.as_uuid())
    .bind(delivery.as_uuid())
    .fetch_optional(&mut *conn)
    .await?;
    match status.as_deref() {
        None => Err(StoreError::NotFound),
        Some("pending") => Err(StoreError::Busy("the event is still on its way; wait for it to settle".into())),
        Some(_) => Ok(()),
    }
}
