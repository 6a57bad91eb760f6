//! Webhook triggers (senders POST to the gateway, a turn runs) and event hooks (endpoints told
//! what happened), as `/v1/webhooks` and `/v1/event-hooks` show them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use hermes_core::AgentId;

/// A webhook trigger: senders POST to the gateway, a turn runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct HookTrigger {
    #[schema(value_type = String, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::Id"))]
    pub id: hermes_core::WebhookId,
    #[schema(value_type = String, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::Id"))]
    pub agent_id: AgentId,
    pub name: String,
    pub events: Vec<String>,
    pub prompt: String,
    pub skills: Vec<String>,
    pub deliver: String,
    #[schema(value_type = Option<String>, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::MaybeId"))]
    pub cron_job_id: Option<hermes_core::JobId>,
    pub enabled: bool,
    pub rate_limit_per_minute: i32,
    /// The only toolsets of the agent's its turns may use; `null`: all a webhook's turn may.
    #[serde(default)]
    pub toolsets: Option<Vec<String>>,
    pub last_received_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

/// An endpoint told what happened (the store's row of it, never with its secret).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct EventEndpoint {
    #[schema(value_type = String, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::Id"))]
    pub id: hermes_core::EventHookId,
    pub url: String,
    pub events: Vec<String>,
    pub description: String,
    pub enabled: bool,
    pub last_delivery_at: Option<DateTime<Utc>>,
    /// The receiver's last HTTP status.
    pub last_status: Option<i32>,
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// A webhook trigger as `/v1/webhooks` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Webhook {
    /// Always `webhook`.
    pub object: String,
    #[serde(flatten)]
    pub hook: HookTrigger,
    /// Where senders POST, on the gateway.
    pub path: String,
    /// `path` under `gateway.public_url`, when that is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The signing secret: on creation and rotation only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// An outbound event endpoint as `/v1/event-hooks` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct EventHook {
    /// Always `event_hook`.
    pub object: String,
    #[serde(flatten)]
    pub endpoint: EventEndpoint,
    /// `whsec_…`, to verify `webhook-signature`: on creation only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hook_shows_its_secret_and_url_only_when_it_has_them() {
        let at = DateTime::<Utc>::from_timestamp(0, 0).unwrap();
        let endpoint = EventEndpoint {
            id: uuid::Uuid::nil().into(),
            url: "https://example.com/in".into(),
            events: vec![],
            description: String::new(),
            enabled: true,
            last_delivery_at: None,
            last_status: None,
            last_error: None,
            created_at: at,
        };
        let hook = EventHook { object: "event_hook".into(), endpoint, secret: None };
        let shown = serde_json::to_value(&hook).unwrap();
        assert!(shown.get("secret").is_none(), "absent, not null, when not shown");
        assert_eq!(shown["url"], "https://example.com/in", "the endpoint's fields sit beside `object`");
        assert_eq!(shown["last_status"], serde_json::Value::Null, "unknown fields stay null");
        let made = serde_json::to_value(EventHook { secret: Some("whsec_x".into()), ..hook }).unwrap();
        assert_eq!(made["secret"], "whsec_x");
    }
}

/// Whether an event reached its endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryStatus {
    /// Not yet: it is tried again at `next_attempt_at`.
    Pending,
    Delivered,
    /// Every attempt failed.
    Failed,
}

/// One event sent (or being sent) to an event hook's endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct EventDelivery {
    #[schema(value_type = String, format = "uuid")]
    pub id: hermes_core::EventDeliveryId,
    /// `turn.completed`, `ping`, ...
    pub event: String,
    pub status: DeliveryStatus,
    pub attempts: i32,
    /// The endpoint's last HTTP status.
    pub last_status: Option<i32>,
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    /// Set while the delivery is pending.
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub delivered_at: Option<DateTime<Utc>>,
    /// The event's payload, as sent.
    #[schema(value_type = Object)]
    pub data: serde_json::Value,
}
