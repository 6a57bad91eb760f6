//! Usage as the console shows it: sums of the daily rollups (migration 0046), grouped by day,
//! agent, model or source over a bounded range of days. A page costs the rows of its days,
//! never a scan of the calls.

use chrono::NaiveDate;

use hermes_core::TenantId;

use crate::{Result, StoreError, views::Admin};

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
                    sum(u.cache_write_tokens)::int8 AS cache_write_tokens, sum(u.reasoning_tokens)::int8 AS reasoning_tokens,
                    sum(u.cost_usd)::float8 AS cost_usd, sum(u.unpriced_calls)::int8 AS unpriced_calls,
                    sum(u.turns)::int8 AS turns, sum(u.tool_ms)::int8 AS tool_ms, sum(u.sandbox_ms)::int8 AS sandbox_ms
             FROM usage_daily u LEFT JOIN agents a ON a.tenant_id = u.tenant_id AND a.id = u.agent_id
             WHERE u.tenant_id = $1 AND u.day BETWEEN $2 AND $3
             GROUP BY 1 ORDER BY 1"
        )
    };
}

impl Admin<'_> {
    /// `tenant`'s usage from `from` to `to` (inclusive, UTC days, at most [`MAX_DAYS`]).
    pub async fn usage_rollup(
        self,
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
        let lines = sqlx::query_as::<_, RollupLine>(sql)
            .bind(tenant.as_uuid())
            .bind(from)
            .bind(to)
            .fetch_all(&mut *self.as_tenant(tenant).await?)
            .await?;
        // Calls with no model name none: they are not a line of the model grouping.
        Ok(lines.into_iter().filter(|line| group != RollupGroup::Model || !line.key.is_empty()).collect())
    }
}
