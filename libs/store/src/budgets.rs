//! Spending caps (migration 0013): per tenant or agent, per day or month in the tenant's time
//! zone, over the priced model calls (`pricing.rs`). The worker asks before every model call;
//! a reached hard cap stops the turn before the call, so spend never passes a cap by more than
//! the calls already in flight.

use chrono::{DateTime, Datelike, NaiveDate, TimeZone, Utc};
use serde::Serialize;
use sqlx::PgConnection;

use hermes_core::{AgentId, BudgetPeriod, TenantId};

use crate::admin::audited::tenant_writes;
use crate::{Result, StoreError, views::Tenancy};

/// A cap as set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Budget {
    /// `None`: the whole tenant.
    pub agent_id: Option<AgentId>,
    pub period: BudgetPeriod,
    pub hard_usd: Option<f64>,
    pub soft_usd: Option<f64>,
}

/// Where a scope stands against its caps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BudgetState {
    pub budget: Budget,
    pub spent_usd: f64,
}

impl BudgetState {
    pub fn hard_reached(&self) -> bool {
        self.budget.hard_usd.is_some_and(|cap| self.spent_usd >= cap)
    }

    pub fn soft_reached(&self) -> bool {
        self.budget.soft_usd.is_some_and(|cap| self.spent_usd >= cap)
    }
}

/// A cap as the caps queries select it (`agent_id, period, hard, soft, timezone`), with its
/// tenant's time zone; here and in `spend.rs`.
#[derive(sqlx::FromRow)]
pub(crate) struct CapRow {
    #[sqlx(try_from = "crate::rows::MaybeId")]
    agent_id: Option<AgentId>,
    #[sqlx(try_from = "String")]
    period: BudgetPeriod,
    hard: Option<f64>,
    soft: Option<f64>,
    timezone: String,
}

impl CapRow {
    /// The tenant's time zone; one that does not parse is `Corrupt`.
    pub(crate) fn zone(&self) -> Result<chrono_tz::Tz> {
        let zone = &self.timezone;
        zone.parse::<chrono_tz::Tz>().map_err(|_| StoreError::Corrupt(format!("time zone {zone:?}")))
    }
}

impl From<CapRow> for Budget {
    fn from(row: CapRow) -> Self {
        Budget { agent_id: row.agent_id, period: row.period, hard_usd: row.hard, soft_usd: row.soft }
    }
}

/// The start of the day and of the month containing `now`, in `zone`, as UTC instants.
pub(crate) fn period_starts(zone: chrono_tz::Tz, now: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
    let local = now.with_timezone(&zone).date_naive();
    let midnight = |d: NaiveDate| {
        d.and_hms_opt(0, 0, 0)
            .and_then(|t| zone.from_local_datetime(&t).earliest())
            .map_or(now, |t| t.with_timezone(&Utc))
    };
    let first = NaiveDate::from_ymd_opt(local.year(), local.month(), 1).unwrap_or(local);
    (midnight(local), midnight(first))
}

impl Tenancy<'_> {
    /// The caps that apply to `agent` (its own and its tenant's) with what was spent in their
    /// current periods at `now`. Asked before every model call: a tenant without caps costs one
    /// indexed read.
    pub async fn budget_states(self, tenant: TenantId, agent: AgentId, now: DateTime<Utc>) -> Result<Vec<BudgetState>> {
        self.caps_with_spend(tenant, Some(agent), now).await
    }

    /// Every cap of the tenant (its own and each agent's) with what was spent in its current
    /// period at `now`: the admin plane's view.
    pub async fn tenant_budgets(self, tenant: TenantId, now: DateTime<Utc>) -> Result<Vec<BudgetState>> {
        self.caps_with_spend(tenant, None, now).await
    }

    /// Caps of the tenant (those that apply to `agent` only, when given), tenant-wide first.
    async fn caps_with_spend(
        self,
        tenant: TenantId,
        agent: Option<AgentId>,
        now: DateTime<Utc>,
    ) -> Result<Vec<BudgetState>> {
        let mut conn = self.as_tenant(tenant).await?;
        let rows = sqlx::query(
            "SELECT b.agent_id, b.period, b.hard_usd::float8 AS hard, b.soft_usd::float8 AS soft, t.timezone
             FROM budgets b JOIN tenants t ON t.id = b.tenant_id
             WHERE b.tenant_id = $1 AND ($2::uuid IS NULL OR b.agent_id IS NULL OR b.agent_id = $2)
             ORDER BY b.agent_id NULLS FIRST, b.period",
        )
        .bind(tenant.as_uuid())
        .bind(agent.map(|a| a.as_uuid()))
        .fetch_all(&mut *conn)
        .await?;
        // A period outside its vocabulary is `Corrupt`.
        let caps: Vec<CapRow> = rows.iter().map(crate::rows::read).collect::<Result<_>>()?;
        let Some(first) = caps.first() else { return Ok(Vec::new()) };
        let (day, month) = period_starts(first.zone()?, now);
        let mut states = Vec::with_capacity(caps.len());
        for cap in caps {
            let budget = Budget::from(cap);
            let since = match budget.period {
                BudgetPeriod::Day => day,
                BudgetPeriod::Month => month,
            };
            let spent_usd: f64 = sqlx::query_scalar(
                "SELECT COALESCE(sum(cost_usd), 0)::float8 FROM model_calls
                 WHERE tenant_id = $1 AND ($2::uuid IS NULL OR agent_id = $2) AND created_at >= $3",
            )
            .bind(tenant.as_uuid())
            .bind(budget.agent_id.map(|a| a.as_uuid()))
            .bind(since)
            .fetch_one(&mut *conn)
            .await?;
            states.push(BudgetState { budget, spent_usd });
        }
        Ok(states)
    }
}

tenant_writes! {
    in Tenancy;
    /// Sets a cap (replacing the one of the same scope and period).
    pub async fn set_budget(budget: &Budget) -> Result<()> = set_budget_on in transaction;

    /// Removes the cap of one scope and period; false when there was none.
    pub async fn delete_budget(agent: Option<AgentId>, period: BudgetPeriod) -> Result<bool> = delete_budget_on;
}

/// [`Tenancy::set_budget`](crate::views::Tenancy::set_budget) on a connection already set to `tenant`.
async fn set_budget_on(conn: &mut PgConnection, tenant: TenantId, budget: &Budget) -> Result<()> {
    let valid = |v: Option<f64>| v.is_none_or(|x| x.is_finite() && x >= 0.0);
    if !valid(budget.hard_usd) || !valid(budget.soft_usd) {
        return Err(StoreError::Invalid("caps are non-negative amounts in US dollars".into()));
    }
    sqlx::query("DELETE FROM budgets WHERE tenant_id = $1 AND agent_id IS NOT DISTINCT FROM $2 AND period = $3")
        .bind(tenant.as_uuid())
        .bind(budget.agent_id.map(|a| a.as_uuid()))
        .bind(budget.period.as_str())
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        "INSERT INTO budgets (tenant_id, agent_id, period, hard_usd, soft_usd)
         VALUES ($1, $2, $3, $4::float8::numeric, $5::float8::numeric)",
    )
    .bind(tenant.as_uuid())
    .bind(budget.agent_id.map(|a| a.as_uuid()))
    .bind(budget.period.as_str())
    .bind(budget.hard_usd)
    .bind(budget.soft_usd)
    .execute(&mut *conn)
    .await
    .map_err(StoreError::not_found_on_foreign_key)?;
    Ok(())
}

/// [`Tenancy::delete_budget`](crate::views::Tenancy::delete_budget) on a connection already set to `tenant`.
async fn delete_budget_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    agent: Option<AgentId>,
    period: BudgetPeriod,
) -> Result<bool> {
    let done =
        sqlx::query("DELETE FROM budgets WHERE tenant_id = $1 AND agent_id IS NOT DISTINCT FROM $2 AND period = $3")
            .bind(tenant.as_uuid())
            .bind(agent.map(|a| a.as_uuid()))
            .bind(period.as_str())
            .execute(conn)
            .await?;
    Ok(done.rows_affected() > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_start_at_local_midnight_and_the_first_of_the_month() {
        let now = DateTime::parse_from_rfc3339("2026-11-30T20:30:00Z").unwrap().with_timezone(&Utc);
        let (day, month) = period_starts(chrono_tz::Tz::Asia__Shanghai, now);
        // 04:30 on 1 December in Shanghai: the day began at 16:00 UTC on 30 November.
        assert_eq!(day.to_rfc3339(), "2026-11-30T16:00:00+00:00");
        assert_eq!(month.to_rfc3339(), "2026-11-30T16:00:00+00:00");
        let (day, month) = period_starts(chrono_tz::Tz::UTC, now);
        assert_eq!(
            (day.to_rfc3339().as_str(), month.to_rfc3339().as_str()),
            ("2026-11-30T00:00:00+00:00", "2026-11-01T00:00:00+00:00")
        );
    }
}
