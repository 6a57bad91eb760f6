//! Usage as the console shows it: sums of the daily rollups (migration 0046), grouped by day,
//! agent, model or source over a bounded range of days. A page costs the rows of its days,
//! never a scan of the calls.

use chrono::NaiveDate;
use sqlx::Row;

use hermes_core::TenantId;

use crate::{Result, Store, StoreError};

/// How usage lines are grouped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RollupGroup {
    Day,
    Agent,
    Model,
    Source,
}

/// One line: a group's sums, as the admin API shows it.
pub use hermes_wire::admin::RollupLine;

/// The longest range one request may ask for.
pub const MAX_DAYS: i64 = 366;

macro_rules! rollup_query {
    ($key:literal) => {
        concat!(
            "SELECT ",
            $key,
            " AS key, sum(u.calls)::int8 AS calls, sum(u.prompt_tokens)::int8 AS prompt_tokens,
                    sum(u.completion_tokens)::int8 AS completion_tokens, sum(u.cached_tokens)::int8 AS cached_tokens,
                    sum(u.cost_usd)::float8 AS cost_usd, sum(u.unpriced_calls)::int8 AS unpriced_calls,
                    sum(u.turns)::int8 AS turns, sum(u.tool_ms)::int8 AS tool_ms, sum(u.sandbox_ms)::int8 AS sandbox_ms
             FROM usage_daily u LEFT JOIN agents a ON a.tenant_id = u.tenant_id AND a.id = u.agent_id
             WHERE u.tenant_id = $1 AND u.day BETWEEN $2 AND $3
             GROUP BY 1 ORDER BY 1"
        )
    };
}

impl Store {
    /// `tenant`'s usage from `from` to `to` (inclusive, UTC days, at most [`MAX_DAYS`]).
    pub async fn usage_rollup(
        &self,
        tenant: TenantId,
        from: NaiveDate,
        to: NaiveDate,
        group: RollupGroup,
    ) -> Result<Vec<RollupLine>> {
        if to < from || (to - from).num_days() >= MAX_DAYS {
            return Err(StoreError::Invalid(format!("a range of 1 to {MAX_DAYS} days, `from` not after `to`")));
        }
        let sql = match group {
            RollupGroup::Day => rollup_query!("to_char(u.day, 'YYYY-MM-DD')"),
            RollupGroup::Agent => rollup_query!("COALESCE(a.name, u.agent_id::text)"),
            RollupGroup::Model => rollup_query!("u.model"),
            RollupGroup::Source => rollup_query!("u.source"),
        };
        let rows = sqlx::query(sql)
            .bind(tenant.as_uuid())
            .bind(from)
            .bind(to)
            .fetch_all(&mut *self.as_tenant(tenant).await?)
            .await?;
        rows.iter()
            .filter(|r| group != RollupGroup::Model || r.try_get::<String, _>("key").is_ok_and(|k| !k.is_empty()))
            .map(|r| {
                Ok(RollupLine {
                    key: r.try_get("key")?,
                    calls: r.try_get::<Option<i64>, _>("calls")?.unwrap_or(0),
                    prompt_tokens: r.try_get::<Option<i64>, _>("prompt_tokens")?.unwrap_or(0),
                    completion_tokens: r.try_get::<Option<i64>, _>("completion_tokens")?.unwrap_or(0),
                    cached_tokens: r.try_get::<Option<i64>, _>("cached_tokens")?.unwrap_or(0),
                    cost_usd: r.try_get::<Option<f64>, _>("cost_usd")?.unwrap_or(0.0),
                    unpriced_calls: r.try_get::<Option<i64>, _>("unpriced_calls")?.unwrap_or(0),
                    turns: r.try_get::<Option<i64>, _>("turns")?.unwrap_or(0),
                    tool_ms: r.try_get::<Option<i64>, _>("tool_ms")?.unwrap_or(0),
                    sandbox_ms: r.try_get::<Option<i64>, _>("sandbox_ms")?.unwrap_or(0),
                })
            })
            .collect()
    }
}
