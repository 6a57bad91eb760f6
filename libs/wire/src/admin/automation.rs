//! A tenant's webhook triggers and event endpoints as the console lists them (secrets never;
//! creating and editing them is `/v1/webhooks` and `/v1/event-hooks`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use hermes_core::AgentId;

/// A tenant's webhook triggers and event endpoints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Hooks {
    pub webhooks: Vec<HookTrigger>,
    pub event_hooks: Vec<EventEndpoint>,
}

/// A webhook trigger: senders POST to the gateway, a turn runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct HookTrigger {
    #[schema(value_type = String, format = "uuid")]
    pub id: uuid::Uuid,
    #[schema(value_type = String, format = "uuid")]
    pub agent_id: AgentId,
    pub name: String,
    pub events: Vec<String>,
    pub prompt: String,
    pub skills: Vec<String>,
    pub deliver: String,
    #[schema(value_type = Option<String>, format = "uuid")]
    pub cron_job_id: Option<uuid::Uuid>,
    pub enabled: bool,
    pub rate_limit_per_minute: i32,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_received_at: Option<DateTime<Utc>>,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: DateTime<Utc>,
}

/// An endpoint told what happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct EventEndpoint {
    #[schema(value_type = String, format = "uuid")]
    pub id: uuid::Uuid,
    pub url: String,
    pub events: Vec<String>,
    pub description: String,
    pub enabled: bool,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_delivery_at: Option<DateTime<Utc>>,
    /// The receiver's last HTTP status.
    pub last_status: Option<i32>,
    pub last_error: Option<String>,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: DateTime<Utc>,
}
