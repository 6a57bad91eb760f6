//! Outbound event webhooks (migration 0033): a tenant's endpoints and the events waiting for
//! them. Triggers write the events with the changes they report; the gateway claims due ones
//! ([`Store::claim_events`]), posts them signed the Standard Webhooks way, and settles each
//! ([`Store::settle_event`]): delivered, due again later, or given up.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::Row;
use sqlx::postgres::PgRow;

use hermes_core::TenantId;

use crate::{Result, SecretBox, Store, StoreError};

/// The events a hook can take.
pub const EVENTS: &[&str] = &["turn.finished", "cron.run.finished", "cron.run.failed", "approval.requested"];

/// A tenant's endpoint (its secret is never part of it).
#[derive(Debug, Clone, serde::Serialize)]
pub struct EventHook {
    pub id: uuid::Uuid,
    pub url: String,
    pub events: Vec<String>,
    pub description: String,
    pub enabled: bool,
    pub last_delivery_at: Option<DateTime<Utc>>,
    pub last_status: Option<i32>,
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl EventHook {
    fn from_row(row: &PgRow) -> Result<Self> {
        Ok(Self {
            id: row.try_get("id")?,
            url: row.try_get("url")?,
            events: row.try_get("events")?,
            description: row.try_get("description")?,
            enabled: row.try_get("enabled")?,
            last_delivery_at: row.try_get("last_delivery_at")?,
            last_status: row.try_get("last_status")?,
            last_error: row.try_get("last_error")?,
            created_at: row.try_get("created_at")?,
        })
    }
}

/// Changes to a hook (`None`: unchanged).
#[derive(Debug, Clone, Default)]
pub struct EventHookChanges {
    pub url: Option<String>,
    pub events: Option<Vec<String>>,
    pub description: Option<String>,
    pub enabled: Option<bool>,
}

/// An event claimed for delivery.
#[derive(Debug, Clone)]
pub struct DueEvent {
    pub id: uuid::Uuid,
    pub tenant_id: TenantId,
    pub hook_id: uuid::Uuid,
    pub url: String,
    pub event: String,
    pub data: Value,
    pub attempts: i32,
    pub created_at: DateTime<Utc>,
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

fn context(id: uuid::Uuid) -> String {
    format!("event-hook:{id}")
}

impl Store {
    /// Adds an endpoint; returns it with its secret (`whsec_…`, shown this once).
    pub async fn create_event_hook(
        &self,
        tenant: TenantId,
        url: &str,
        events: &[String],
        description: &str,
        secrets: Option<&SecretBox>,
    ) -> Result<(EventHook, String)> {
        let id = uuid::Uuid::now_v7();
        let (key, shown) = crate::secrets::signing_secret()?;
        let sealed = SecretBox::required(secrets, "an event hook's secret")?.seal(&context(id), &key)?;
        let row = sqlx::query(
            "INSERT INTO event_hooks (id, tenant_id, url, events, secret, description)
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING *",
        )
        .bind(id)
        .bind(tenant.as_uuid())
        .bind(url)
        .bind(events)
        .bind(sealed)
        .bind(crate::messages::without_nul(description))
        .fetch_one(self.pool())
        .await?;
        Ok((EventHook::from_row(&row)?, shown))
    }

    pub async fn list_event_hooks(&self, tenant: TenantId) -> Result<Vec<EventHook>> {
        let rows = sqlx::query("SELECT * FROM event_hooks WHERE tenant_id = $1 ORDER BY created_at, id")
            .bind(tenant.as_uuid())
            .fetch_all(self.pool())
            .await?;
        rows.iter().map(EventHook::from_row).collect()
    }

    pub async fn event_hook(&self, tenant: TenantId, id: uuid::Uuid) -> Result<EventHook> {
        let row = sqlx::query("SELECT * FROM event_hooks WHERE tenant_id = $1 AND id = $2")
            .bind(tenant.as_uuid())
            .bind(id)
            .fetch_optional(self.pool())
            .await?
            .ok_or(StoreError::NotFound)?;
        EventHook::from_row(&row)
    }

    pub async fn update_event_hook(
        &self,
        tenant: TenantId,
        id: uuid::Uuid,
        changes: &EventHookChanges,
    ) -> Result<EventHook> {
        let row = sqlx::query(
            "UPDATE event_hooks SET url = COALESCE($3, url), events = COALESCE($4, events),
                    description = COALESCE($5, description), enabled = COALESCE($6, enabled), updated_at = now()
             WHERE tenant_id = $1 AND id = $2 RETURNING *",
        )
        .bind(tenant.as_uuid())
        .bind(id)
        .bind(changes.url.as_deref())
        .bind(changes.events.as_ref())
        .bind(changes.description.as_deref().map(crate::messages::without_nul))
        .bind(changes.enabled)
        .fetch_optional(self.pool())
        .await?
        .ok_or(StoreError::NotFound)?;
        EventHook::from_row(&row)
    }

    /// Deletes an endpoint and the events still waiting for it; `false` when there was none.
    pub async fn delete_event_hook(&self, tenant: TenantId, id: uuid::Uuid) -> Result<bool> {
        let done = sqlx::query("DELETE FROM event_hooks WHERE tenant_id = $1 AND id = $2")
            .bind(tenant.as_uuid())
            .bind(id)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Queues a `ping` for one endpoint (to check the receiver).
    pub async fn ping_event_hook(&self, tenant: TenantId, id: uuid::Uuid) -> Result<uuid::Uuid> {
        let event = uuid::Uuid::now_v7();
        let done = sqlx::query(
            "INSERT INTO event_deliveries (id, tenant_id, hook_id, event, data)
             SELECT $3, tenant_id, id, 'ping', '{}'::jsonb FROM event_hooks WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(id)
        .bind(event)
        .execute(self.pool())
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(event)
    }

    /// An endpoint's latest deliveries, newest first.
    pub async fn event_deliveries(&self, tenant: TenantId, hook: uuid::Uuid, limit: i64) -> Result<Vec<Value>> {
        let rows = sqlx::query(
            "SELECT jsonb_build_object('id', id, 'event', event, 'status', status, 'attempts', attempts,
                        'last_status', last_status, 'last_error', last_error, 'created_at', created_at,
                        'next_attempt_at', CASE WHEN status = 'pending' THEN next_attempt_at END,
                        'delivered_at', delivered_at, 'data', data) AS delivery
             FROM event_deliveries WHERE tenant_id = $1 AND hook_id = $2 ORDER BY created_at DESC LIMIT $3",
        )
        .bind(tenant.as_uuid())
        .bind(hook)
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(|r| Ok(r.try_get("delivery")?)).collect()
    }

    /// Claims up to `limit` due events of enabled endpoints for `lease` (oldest first,
    /// `SKIP LOCKED`: any number of gateway pods share them); an event not settled in time is
    /// due again. A disabled endpoint's events wait until it is enabled again.
    pub async fn claim_events(&self, limit: i64, lease: Duration) -> Result<Vec<DueEvent>> {
        let rows = sqlx::query(
            "WITH due AS (
                SELECT d.id FROM event_deliveries d JOIN event_hooks h ON h.id = d.hook_id AND h.enabled
                WHERE d.status = 'pending' AND d.next_attempt_at <= now()
                ORDER BY d.next_attempt_at LIMIT $1 FOR UPDATE OF d SKIP LOCKED
             ), claimed AS (
                UPDATE event_deliveries d SET next_attempt_at = now() + make_interval(secs => $2),
                       attempts = d.attempts + 1
                FROM due WHERE d.id = due.id
                RETURNING d.*
             )
             SELECT c.id, c.tenant_id, c.hook_id, c.event, c.data, c.attempts, c.created_at, h.url, h.secret
             FROM claimed c JOIN event_hooks h ON h.id = c.hook_id",
        )
        .bind(limit)
        .bind(lease.as_secs_f64())
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| {
                let tenant: uuid::Uuid = r.try_get("tenant_id")?;
                Ok(DueEvent {
                    id: r.try_get("id")?,
                    #[expect(clippy::disallowed_methods, reason = "the row's own tenant, read with the row")]
                    tenant_id: TenantId::from_authenticated(tenant),
                    hook_id: r.try_get("hook_id")?,
                    url: r.try_get("url")?,
                    event: r.try_get("event")?,
                    data: r.try_get("data")?,
                    attempts: r.try_get("attempts")?,
                    created_at: r.try_get("created_at")?,
                    sealed_secret: r.try_get("secret")?,
                })
            })
            .collect()
    }

    /// Records how an attempt ended, on the event and on its endpoint.
    pub async fn settle_event(&self, event: &DueEvent, attempt: &Attempt) -> Result<()> {
        let (status, code, error, after) = match attempt {
            Attempt::Delivered { status } => ("delivered", Some(*status), None, None),
            Attempt::Retry { status, error, after } => ("pending", *status, Some(error.as_str()), Some(*after)),
            Attempt::Failed { status, error } => ("failed", *status, Some(error.as_str()), None),
        };
        let mut tx = self.pool().begin().await?;
        sqlx::query(
            "UPDATE event_deliveries SET status = $2, last_status = $3, last_error = $4,
                    next_attempt_at = CASE WHEN $5::float8 IS NULL THEN next_attempt_at
                                           ELSE now() + make_interval(secs => $5) END,
                    delivered_at = CASE WHEN $2 = 'delivered' THEN now() END
             WHERE id = $1",
        )
        .bind(event.id)
        .bind(status)
        .bind(code)
        .bind(error.map(crate::messages::without_nul))
        .bind(after.map(|a| a.as_secs_f64()))
        .execute(&mut *tx)
        .await?;
        sqlx::query("UPDATE event_hooks SET last_delivery_at = now(), last_status = $2, last_error = $3 WHERE id = $1")
            .bind(event.hook_id)
            .bind(code)
            .bind(error.map(crate::messages::without_nul))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Forgets events settled more than a week ago.
    pub async fn prune_events(&self) -> Result<u64> {
        let done = sqlx::query(
            "DELETE FROM event_deliveries WHERE status <> 'pending' AND created_at < now() - interval '7 days'",
        )
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected())
    }
}
