//! Scheduled agent runs as `/v1/cron/jobs` (and the admin console) show them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use hermes_core::outbox::Destination;
use hermes_core::{AgentId, JobId, JobState, RunOutcome};

/// A scheduled agent run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct CronJob {
    #[schema(value_type = String, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::Id"))]
    pub id: JobId,
    #[schema(value_type = String, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::Id"))]
    pub agent_id: AgentId,
    pub name: String,
    pub prompt: String,
    pub skills: Vec<String>,
    /// The runs' model, when not the agent's.
    pub model: Option<String>,
    /// As stored: `every 30m`, a cron expression, or an RFC 3339 instant.
    pub schedule: String,
    /// `interval`, `cron` or `once`.
    pub schedule_kind: String,
    pub schedule_display: String,
    pub timezone: String,
    pub repeat_times: Option<i32>,
    pub repeat_completed: i32,
    /// `scheduled`, `paused`, `completed` or `error`.
    #[schema(value_type = String)]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "String"))]
    pub state: JobState,
    pub paused_reason: Option<String>,
    pub next_run_at: Option<DateTime<Utc>>,
    pub last_run_at: Option<DateTime<Utc>>,
    /// `ok` or `error`.
    #[schema(value_type = Option<String>)]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::MaybeText"))]
    pub last_status: Option<RunOutcome>,
    pub last_error: Option<String>,
    pub last_delivery_error: Option<String>,
    pub deliver: String,
    /// The chat the job was made from.
    #[schema(value_type = Option<Object>)]
    #[cfg_attr(feature = "sqlx", sqlx(json(nullable)))]
    pub origin: Option<Destination>,
    /// Only these of the agent's toolsets in the runs; `null`: all of the agent's.
    pub toolsets: Option<Vec<String>>,
    /// A script in the agent's scripts folder (`/workspace/.hermes/scripts/`), run in its
    /// sandbox before each run: its output goes above the prompt.
    pub script: Option<String>,
    /// The script is the job: its output is delivered as it is, with no model call.
    pub no_agent: bool,
    /// Jobs of the same agent whose latest output goes above the prompt.
    #[schema(value_type = Vec<String>)]
    pub context_from: Vec<uuid::Uuid>,
    /// The run's working folder in the workspace: its script, commands and relative paths start
    /// there, and its context file (AGENTS.md, ...) is found from there (default: the workspace;
    /// a script starts in its own folder).
    pub workdir: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// One run of a scheduled job, newest first in its list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct CronRun {
    #[schema(value_type = String, format = "uuid")]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "crate::rows::Id"))]
    pub id: hermes_core::CronRunId,
    pub scheduled_for: DateTime<Utc>,
    /// `claimed`, `running`, `completed`, `failed` or `unknown` (its worker died).
    #[schema(value_type = String)]
    #[cfg_attr(feature = "sqlx", sqlx(try_from = "String"))]
    pub status: hermes_core::CronRunStatus,
    #[schema(value_type = Option<String>, format = "uuid")]
    pub turn_id: Option<uuid::Uuid>,
    #[schema(value_type = Option<String>, format = "uuid")]
    pub session_id: Option<uuid::Uuid>,
    pub output: Option<String>,
    pub error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// A job to create.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateJob {
    pub prompt: String,
    /// `every 30m|2h|1d`, a 5- or 6-field cron expression, an ISO time, or a delay like `30m`.
    pub schedule: String,
    /// Default: the first 50 characters of the prompt.
    pub name: Option<String>,
    /// The agent (by name); the key's agent or the tenant's only agent when absent.
    pub model: Option<String>,
    /// An IANA time zone; the tenant's by default.
    pub timezone: Option<String>,
    /// Runs to make (default: 1 for a one-shot, forever otherwise).
    pub repeat: Option<i32>,
    /// `local` (the default from the API), `origin`, or `platform:chat[:thread]`.
    pub deliver: Option<String>,
    #[serde(default)]
    pub skills: Vec<String>,
    /// Another model for the runs, on the agent's provider (upstream's job `model`).
    pub run_model: Option<String>,
    /// Only these of the agent's toolsets in the runs (upstream's `enabled_toolsets`).
    pub enabled_toolsets: Option<Vec<String>>,
    /// A script in the agent's scripts folder (a path relative to `/workspace/.hermes/scripts/`;
    /// `.sh` and `.bash` run with bash, anything else with python3), run before each run.
    pub script: Option<String>,
    /// The script is the job: its output is delivered verbatim (empty: nothing is sent; a
    /// failure: an alert), with no model call. Needs `script`.
    #[serde(default)]
    pub no_agent: bool,
    /// Jobs of the same agent (ids or names) whose latest output goes above the prompt.
    #[serde(default)]
    pub context_from: Vec<String>,
    /// The run's working folder: a folder of the workspace (`/workspace/...` or relative to it)
    /// where its script, commands and relative paths start and its context file is found from.
    pub workdir: Option<String>,
}
