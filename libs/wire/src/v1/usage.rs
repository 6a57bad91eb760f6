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

/// One group's usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct UsageLine {
    /// The day (`2026-11-30`), the agent's name, or the API key's prefix (`-` for none).
    #[cfg_attr(feature = "sqlx", sqlx(rename = "grp"))]
    pub group: String,
    #[serde(flatten)]
    #[cfg_attr(feature = "sqlx", sqlx(flatten))]
    pub usage: UsageTotals,
    /// Mean duration of a call (calls recorded before durations were kept are left out).
    #[cfg_attr(feature = "sqlx", sqlx(rename = "latency"))]
    pub avg_latency_ms: Option<f64>,
}

/// Calls, tokens, dollars, turns and tool time: a report's totals, and a rollup line's counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
pub struct UsageTotals {
    pub calls: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    /// Prompt tokens read from the provider's cache (billed at its cached price).
    pub cached_tokens: i64,
    /// Prompt tokens written to the provider's cache (billed at its cache-write price).
    #[serde(default)]
    pub cache_write_tokens: i64,
    /// Completion tokens spent reasoning or thinking, where the provider reports them (part of
    /// `completion_tokens`, billed as output).
    #[serde(default)]
    pub reasoning_tokens: i64,
    /// Of the priced calls.
    pub cost_usd: f64,
    /// Calls whose model had no price when they were made (not in `cost_usd`).
    pub unpriced_calls: i64,
    /// Turns started, and the time their tool calls took (of it, in sandboxes).
    pub turns: i64,
    pub tool_ms: i64,
    pub sandbox_ms: i64,
}

impl UsageTotals {
    /// Adds another group's counts to these.
    pub fn add(&mut self, other: &UsageTotals) {
        self.calls += other.calls;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cached_tokens += other.cached_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
        self.cost_usd += other.cost_usd;
        self.unpriced_calls += other.unpriced_calls;
        self.turns += other.turns;
        self.tool_ms += other.tool_ms;
        self.sandbox_ms += other.sandbox_ms;
    }
}
