//! `/v1/usage`: tokens and dollars per day, agent or key, with totals.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::ListKind;

/// The report: a list of lines, one per group, and their totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UsageReport {
    pub object: ListKind,
    /// `day`, `agent` or `key`.
    pub group_by: String,
    /// The first day (`YYYY-MM-DD`).
    pub start: String,
    /// The last day.
    pub end: String,
    pub data: Vec<UsageLine>,
    pub total: UsageTotals,
}

/// One group's usage (the store's report query names its columns shorter).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct UsageLine {
    /// The day (`2026-11-30`), the agent's name, or the API key's prefix (`-` for none).
    #[cfg_attr(feature = "sqlx", sqlx(rename = "grp"))]
    pub group: String,
    pub calls: i64,
    #[cfg_attr(feature = "sqlx", sqlx(rename = "prompt"))]
    pub prompt_tokens: i64,
    #[cfg_attr(feature = "sqlx", sqlx(rename = "completion"))]
    pub completion_tokens: i64,
    #[cfg_attr(feature = "sqlx", sqlx(rename = "cached"))]
    pub cached_tokens: i64,
    /// Of the priced calls.
    #[cfg_attr(feature = "sqlx", sqlx(rename = "cost"))]
    pub cost_usd: f64,
    /// Calls whose model had no price when they were made.
    #[cfg_attr(feature = "sqlx", sqlx(rename = "unpriced"))]
    pub unpriced_calls: i64,
    /// Mean duration of a call (calls recorded before durations were kept are left out).
    #[cfg_attr(feature = "sqlx", sqlx(rename = "latency"))]
    pub avg_latency_ms: Option<f64>,
    /// Turns started in the group, and the time their tool calls took (of it, in sandboxes).
    pub turns: i64,
    pub tool_ms: i64,
    pub sandbox_ms: i64,
}

/// The sums of a report's lines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UsageTotals {
    pub calls: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub cached_tokens: i64,
    pub cost_usd: f64,
    pub unpriced_calls: i64,
    pub turns: i64,
    pub tool_ms: i64,
    pub sandbox_ms: i64,
}
