//! Upstream Hermes Agent's `/api/jobs` shapes, so clients written against its API server
//! manage cron here unchanged: `{"jobs": [...]}`, `{"job": {...}}`, `{"ok": true}`, errors
//! as `{"error": "..."}`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use hermes_core::outbox::Destination;
use hermes_core::{AgentId, JobState, RunOutcome};

/// A cron job in upstream's shape (the fields it has and we do not are `null`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UpstreamCronJob {
    #[schema(value_type = String, format = "uuid")]
    pub id: hermes_core::JobId,
    pub name: String,
    pub prompt: String,
    pub skills: Vec<String>,
    /// The first of `skills`.
    pub skill: Option<String>,
    pub model: Option<String>,
    pub provider: Option<String>,
    pub base_url: Option<String>,
    pub script: Option<String>,
    pub no_agent: bool,
    pub schedule: UpstreamSchedule,
    pub schedule_display: String,
    pub timezone: String,
    pub repeat: UpstreamRepeat,
    pub enabled: bool,
    /// `scheduled`, `paused`, `completed` or `error`.
    #[schema(value_type = String)]
    pub state: JobState,
    pub paused_at: Option<String>,
    pub paused_reason: Option<String>,
    pub created_at: DateTime<Utc>,
    pub next_run_at: Option<DateTime<Utc>>,
    pub last_run_at: Option<DateTime<Utc>>,
    /// `ok` or `error`.
    #[schema(value_type = Option<String>)]
    pub last_status: Option<RunOutcome>,
    pub last_error: Option<String>,
    pub last_delivery_error: Option<String>,
    pub deliver: String,
    /// The chat the job was made from.
    #[schema(value_type = Option<Object>)]
    pub origin: Option<Destination>,
    pub enabled_toolsets: Option<Vec<String>>,
    /// Ids of the jobs whose latest output goes above the prompt.
    #[schema(value_type = Vec<String>)]
    pub context_from: Vec<hermes_core::JobId>,
    pub workdir: Option<String>,
    #[schema(value_type = String, format = "uuid")]
    pub agent_id: AgentId,
}

/// A schedule in upstream's shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UpstreamSchedule {
    /// `interval`, `cron` or `once`.
    pub kind: String,
    pub expr: String,
    pub display: String,
}

/// How often a job runs, and how often it has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UpstreamRepeat {
    /// `null`: forever.
    pub times: Option<i32>,
    pub completed: i32,
}

/// `{"jobs": [...]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UpstreamJobs {
    pub jobs: Vec<UpstreamCronJob>,
}

/// `{"job": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UpstreamJobBody {
    pub job: UpstreamCronJob,
}

/// `{"ok": true}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UpstreamOk {
    pub ok: bool,
}

/// An error as upstream writes it: `{"error": "..."}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UpstreamError {
    pub error: String,
}
