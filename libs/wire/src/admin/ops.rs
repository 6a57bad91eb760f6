//! Running a tenant day to day: budgets, answering approvals, stopping turns, provider keys,
//! test events.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use hermes_core::{AgentId, BudgetPeriod, CredentialId, SessionId, TurnId};

/// A spending cap and what was spent in its current period.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BudgetView {
    /// `null`: the whole tenant.
    #[schema(value_type = Option<String>, format = "uuid")]
    pub agent_id: Option<AgentId>,
    /// `day` or `month`.
    #[schema(value_type = String)]
    pub period: BudgetPeriod,
    pub hard_usd: Option<f64>,
    pub soft_usd: Option<f64>,
    pub spent_usd: f64,
    pub hard_reached: bool,
    pub soft_reached: bool,
}

/// A question answered: its turn runs again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Answered {
    pub answered: bool,
    #[schema(value_type = String, format = "uuid")]
    pub turn_id: TurnId,
    #[schema(value_type = String, format = "uuid")]
    pub session_id: SessionId,
}

/// What stopping a turn did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TurnStopped {
    #[schema(value_type = String, format = "uuid")]
    pub id: TurnId,
    /// `cancelled` (it had not started) or `stopping` (its worker stops it now).
    pub status: String,
}

/// A provider key just added to its pool (its secret is not shown).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CredentialAdded {
    #[schema(value_type = String, format = "uuid")]
    pub id: CredentialId,
    pub provider: String,
    pub label: String,
    pub priority: i32,
    pub allowed_hosts: Vec<String>,
    pub created_at: DateTime<Utc>,
}

/// A test event on its way to an endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PingSent {
    #[schema(value_type = String, format = "uuid")]
    pub event_id: hermes_core::EventDeliveryId,
}

/// How much work waits across the installation, and for how long: counts only, no tenant,
/// session or user id (the scheduler's gauges and the operators' cluster page).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, ToSchema)]
pub struct Backlog {
    /// Turns queued and due (a deferred turn waits for its `not_before`).
    pub turns_queued: i64,
    /// Age of the oldest of them, in seconds (0 when none waits).
    pub oldest_queued_seconds: f64,
    /// Turns a worker holds now.
    pub turns_running: i64,
    /// Replies waiting in the outbox (pending, due or backing off).
    pub outbox_waiting: i64,
    /// Age of the oldest waiting reply, in seconds.
    pub oldest_outbox_seconds: f64,
    /// Scheduled cron jobs whose time passed more than a minute ago without being claimed.
    pub cron_jobs_late: i64,
}

/// The installation at work: the backlog, the workers holding turns, the live sandboxes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Cluster {
    #[serde(flatten)]
    pub backlog: Backlog,
    pub workers: Vec<WorkerAtWork>,
    pub sandboxes: Vec<SeenSandbox>,
}

/// A worker holding turns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct WorkerAtWork {
    pub worker: String,
    pub turns: i64,
    /// When its lease on them ends unless renewed.
    pub lease_expires_at: Option<DateTime<Utc>>,
}

/// A live sandbox as a worker last reported it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SeenSandbox {
    #[schema(value_type = String, format = "uuid")]
    pub tenant_id: uuid::Uuid,
    #[schema(value_type = String, format = "uuid")]
    pub agent_id: uuid::Uuid,
    /// `docker`, `local` or `kubernetes`.
    pub backend: String,
    /// The container, process or pod name.
    pub name: String,
    pub running_execs: u32,
    pub running_processes: u32,
    /// Seconds since its last request or running command.
    pub idle_secs: u64,
    /// The worker that reported it.
    pub worker: String,
    pub seen_at: DateTime<Utc>,
}

/// A tenant's usage per group over a range of days, and the total.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UsageRollup {
    pub from: chrono::NaiveDate,
    pub to: chrono::NaiveDate,
    /// `day`, `agent`, `model` or `source`.
    pub by: String,
    pub lines: Vec<RollupLine>,
    pub total: RollupLine,
}

/// One group's usage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct RollupLine {
    /// The day, the agent's name, the model or the source (`total` for the total).
    pub key: String,
    #[serde(flatten)]
    #[cfg_attr(feature = "sqlx", sqlx(flatten))]
    pub usage: crate::v1::UsageTotals,
}
