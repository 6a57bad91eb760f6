//! Spending caps kept while calls are in flight (migration 0041). Before a model call under a
//! hard cap, [`Tenancy::reserve_spend`](crate::views::Tenancy::reserve_spend) reserves the call's estimated cost against every cap it
//! falls under, with those caps' rows locked, so that concurrent turns see each other's calls
//! before they are answered; [`Tenancy::settle_spend`](crate::views::Tenancy::settle_spend) then records the call's real usage and
//! drops the reservation in one statement. A cap counts as reached when what was spent and
//! what calls in flight reserved reach it, so with fifty turns racing for the last dollar the
//! spend passes a cap by at most the last call admitted below it.
//!
//! Under a hard dollar cap, a model without a price cannot be kept within it: such a call is
//! refused ([`SpendDecision::Unpriced`]) rather than counted as free.

use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use hermes_core::{AgentId, BudgetPeriod, SessionId, SpendReservationId, TenantId, TurnId};

use crate::budgets::{Budget, BudgetState, CapRow, period_starts};
use crate::media_calls::MediaUnits;
use crate::usage::{CallColumns, ModelCall, insert_model_calls};
use crate::{Result, views::Tenancy};

/// A model call about to start.
#[derive(Debug, Clone)]
pub struct SpendRequest<'a> {
    pub agent: AgentId,
    /// Every model the call may end up using (the agent's fallback chain): under a hard cap
    /// each needs a price, and the estimate is the dearest.
    pub models: &'a [String],
    /// Tokens the request sends (an estimate).
    pub input_tokens: u64,
    /// Tokens the answer may take at most (an estimate where the request sets no limit).
    pub output_tokens: u64,
    /// What a media call bills (none for a model call).
    pub media: MediaUnits,
    /// The models of `models` the call would ask for their priority tier (`/fast`): each is
    /// estimated at its `priority_multiplier` over its rates (none: the standard rates).
    pub priority_models: &'a [String],
    /// How long the reservation holds if it is never settled (its worker died).
    pub lease: Duration,
}

/// What may happen to a call.
#[derive(Debug, Clone, PartialEq)]
pub enum SpendDecision {
    /// No cap applies; nothing was reserved.
    Uncapped,
    /// Caps apply and the call fits: settle `reservation` once its usage is known. `states`
    /// say where each cap stands (spent and reserved by other calls).
    Reserved { reservation: SpendReservationId, estimate_usd: f64, states: Vec<BudgetState> },
    /// This hard cap is reached (`state`: spent, and reserved by calls in flight).
    Refused { state: BudgetState, estimate_usd: f64 },
    /// A hard cap applies and this model has no price.
    Unpriced { model: String },
}

/// The price of one model of a call's chain (`None`s: no price, or none for that unit).
#[derive(sqlx::FromRow)]
struct ChainPrice {
    model: String,
    input: Option<f64>,
    output: Option<f64>,
    per_image: Option<f64>,
    per_mchar: Option<f64>,
    per_minute: Option<f64>,
    /// The priority tier's multiplier where the call asks for it (1 where it does not).
    tier: f64,
}

/// A cap as read for a reservation.
struct Cap {
    budget: Budget,
    since: DateTime<Utc>,
}

impl Tenancy<'_> {
    /// Decides whether a model call may start, reserving its estimated cost when caps apply.
    /// A tenant without caps costs one indexed read.
    pub async fn reserve_spend(
        self,
        tenant: TenantId,
        request: &SpendRequest<'_>,
        now: DateTime<Utc>,
    ) -> Result<SpendDecision> {
        let any: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM budgets WHERE tenant_id = $1 AND (agent_id IS NULL OR agent_id = $2))",
        )
        .bind(tenant.as_uuid())
        .bind(request.agent.as_uuid())
        .fetch_one(&mut *self.as_tenant(tenant).await?)
        .await?;
        if !any {
            return Ok(SpendDecision::Uncapped);
        }
        let mut tx = self.tenant_tx(tenant).await?;
        let decision = match decide(&mut tx, tenant, request, now).await {
            Ok(decision) => decision,
            Err(e) => {
                let _ = tx.rollback().await;
                return Err(e);
            }
        };
        // End the transaction (and the caps' locks) now, whatever was decided: a dropped one
        // would hold them until its connection goes back to the pool.
        match decision {
            SpendDecision::Reserved { .. } => tx.commit().await?,
            _ => tx.rollback().await?,
        }
        Ok(decision)
    }

    /// Records a reserved call's answered model calls (none if it failed before any answer)
    /// and drops its reservation, in one statement.
    pub async fn settle_spend(
        self,
        tenant: TenantId,
        reservation: SpendReservationId,
        session: SessionId,
        turn: TurnId,
        calls: &[ModelCall],
    ) -> Result<()> {
        let sql = concat!(
            "WITH settled AS (DELETE FROM spend_reservations WHERE tenant_id = $1 AND id = $15) ",
            insert_model_calls!("$4", "$5", "$6", "$7", "$8", "$9", "$10", "$11", "$12", "$13", "$14")
        );
        let query = sqlx::query(sql).bind(tenant.as_uuid()).bind(session.as_uuid()).bind(turn.as_uuid());
        CallColumns::of(calls)
            .bind_to(query)
            .bind(reservation.as_uuid())
            .execute(&mut *self.as_tenant(tenant).await?)
            .await?;
        Ok(())
    }
}

/// The decision for `request` within the transaction that holds the caps' locks.
async fn decide(
    tx: &mut sqlx::PgConnection,
    tenant: TenantId,
    request: &SpendRequest<'_>,
    now: DateTime<Utc>,
) -> Result<SpendDecision> {
    let caps = locked_caps(&mut *tx, tenant, request.agent, now).await?;
    if caps.is_empty() {
        return Ok(SpendDecision::Uncapped);
    }
    let hard = caps.iter().any(|c| c.budget.hard_usd.is_some());
    let prices: Vec<ChainPrice> = sqlx::query_as(
        "SELECT m AS model, (p).input_usd_per_mtok::float8 AS input, (p).output_usd_per_mtok::float8 AS output,
                (p).usd_per_image::float8 AS per_image, (p).usd_per_mchar::float8 AS per_mchar,
                (p).usd_per_audio_minute::float8 AS per_minute,
                CASE WHEN m = ANY($2) THEN COALESCE((p).priority_multiplier::float8, 1) ELSE 1 END AS tier
         FROM unnest($1::text[]) AS m, LATERAL (SELECT hermes_model_price(m) AS p) AS price",
    )
    .bind(request.models)
    .bind(request.priority_models)
    .fetch_all(&mut *tx)
    .await?;
    let mut estimate_usd: f64 = 0.0;
    for price in prices {
        let units = request.media.cost_usd(price.per_image, price.per_mchar, price.per_minute);
        match (price.input, price.output, units) {
            (Some(input), Some(output), Some(units)) => {
                let tokens = (request.input_tokens as f64 * input + request.output_tokens as f64 * output) / 1e6;
                estimate_usd = estimate_usd.max(tokens * price.tier + units);
            }
            _ if hard => return Ok(SpendDecision::Unpriced { model: price.model }),
            _ => {}
        }
    }
    let spent = spent_and_reserved(&mut *tx, tenant, &caps).await?;
    let states: Vec<BudgetState> =
        caps.into_iter().zip(spent).map(|(cap, spent_usd)| BudgetState { budget: cap.budget, spent_usd }).collect();
    // Reached counts the calls in flight: once their estimates fill the cap, no further call
    // starts until they settle. A call that starts below the cap may pass it by what it
    // costs: the spend passes a cap by at most the calls in flight when it was reached.
    let reached = |s: &&BudgetState| s.budget.hard_usd.is_some_and(|hard| s.spent_usd >= hard);
    if let Some(state) = states.iter().find(reached) {
        return Ok(SpendDecision::Refused { state: state.clone(), estimate_usd });
    }
    let reservation = SpendReservationId::new();
    let lease = chrono::Duration::from_std(request.lease).unwrap_or(chrono::Duration::hours(1));
    sqlx::query(
        "INSERT INTO spend_reservations (id, tenant_id, agent_id, amount_usd, expires_at)
         VALUES ($1, $2, $3, $4::float8::numeric, $5)",
    )
    .bind(reservation.as_uuid())
    .bind(tenant.as_uuid())
    .bind(request.agent.as_uuid())
    .bind(estimate_usd)
    .bind(now + lease)
    .execute(&mut *tx)
    .await?;
    Ok(SpendDecision::Reserved { reservation, estimate_usd, states })
}

/// The caps over `agent` (its own and its tenant's), locked until the transaction ends, with
/// the start of each one's current period.
async fn locked_caps(
    tx: &mut sqlx::PgConnection,
    tenant: TenantId,
    agent: AgentId,
    now: DateTime<Utc>,
) -> Result<Vec<Cap>> {
    let rows = sqlx::query(
        "SELECT b.agent_id, b.period, b.hard_usd::float8 AS hard, b.soft_usd::float8 AS soft, t.timezone
         FROM budgets b JOIN tenants t ON t.id = b.tenant_id
         WHERE b.tenant_id = $1 AND (b.agent_id IS NULL OR b.agent_id = $2)
         ORDER BY b.agent_id NULLS FIRST, b.period
         FOR UPDATE OF b",
    )
    .bind(tenant.as_uuid())
    .bind(agent.as_uuid())
    .fetch_all(&mut *tx)
    .await?;
    let mut caps = Vec::with_capacity(rows.len());
    for row in &rows {
        // A period outside its vocabulary is `Corrupt`.
        let cap: CapRow = crate::rows::read(row)?;
        let (day, month) = period_starts(cap.zone()?, now);
        let budget = Budget::from(cap);
        let since = match budget.period {
            BudgetPeriod::Day => day,
            BudgetPeriod::Month => month,
        };
        caps.push(Cap { budget, since });
    }
    Ok(caps)
}

/// What each cap's scope spent in its period plus what calls in flight reserved, in one
/// snapshot (a settling call's usage and its reservation swap atomically).
async fn spent_and_reserved(tx: &mut sqlx::PgConnection, tenant: TenantId, caps: &[Cap]) -> Result<Vec<f64>> {
    let agents: Vec<Option<Uuid>> = caps.iter().map(|c| c.budget.agent_id.map(|a| a.as_uuid())).collect();
    let since: Vec<DateTime<Utc>> = caps.iter().map(|c| c.since).collect();
    let rows: Vec<(i64, f64)> = sqlx::query_as(
        "SELECT c.i,
                (SELECT COALESCE(sum(m.cost_usd), 0) FROM model_calls m
                  WHERE m.tenant_id = $1 AND (c.agent IS NULL OR m.agent_id = c.agent) AND m.created_at >= c.since)::float8
              + (SELECT COALESCE(sum(r.amount_usd), 0) FROM spend_reservations r
                  WHERE r.tenant_id = $1 AND (c.agent IS NULL OR r.agent_id = c.agent) AND r.expires_at > now())::float8
         FROM unnest($2::uuid[], $3::timestamptz[]) WITH ORDINALITY AS c(agent, since, i)
         ORDER BY c.i",
    )
    .bind(tenant.as_uuid())
    .bind(&agents)
    .bind(&since)
    .fetch_all(&mut *tx)
    .await?;
    Ok(rows.into_iter().map(|(_, spent)| spent).collect())
}
