//! Spending caps, per tenant or per agent, per day or month in the tenant's time zone: where
//! each stands now, setting one, removing one. The worker checks them before every model call
//! (`hermes_store::budgets`); a hard cap reached stops turns before the call.

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use serde::Deserialize;

use hermes_core::access::AdminOp;
use hermes_core::{AgentId, BudgetPeriod, ErrorCode};
use hermes_http::ApiError;
use hermes_store::admin::Change;
use hermes_store::{Budget, StoreError};
use hermes_wire::List;
use hermes_wire::admin::BudgetView;

use crate::admin::errors::{Result, store_error};
use crate::admin::state::AdminState;
use crate::admin::tenant_call::{Body, TenantCall};
use crate::documented::{MayNotSetBudgets, TenantNotFound, TenantPath};

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/budgets", tag = "admin: usage", params(TenantPath),
    responses((status = 200, description = "Each cap (the tenant's first, then each agent's) with what was spent in its current period", body = List<BudgetView>),
        TenantNotFound))]
pub(crate) async fn list(call: TenantCall) -> Result<Json<List<BudgetView>>> {
    let t = call.allow(AdminOp::ViewUsage).await?;
    let states = call.state.store.tenancy().tenant_budgets(t.id, chrono::Utc::now()).await.map_err(store_error)?;
    let data = states
        .iter()
        .map(|s| BudgetView {
            agent_id: s.budget.agent_id,
            period: s.budget.period,
            hard_usd: s.budget.hard_usd,
            soft_usd: s.budget.soft_usd,
            spent_usd: s.spent_usd,
            hard_reached: s.hard_reached(),
            soft_reached: s.soft_reached(),
        })
        .collect();
    Ok(Json(List::of(data)))
}

/// A cap's amounts, in US dollars (either may be absent, not both).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Caps {
    /// No further model call is made once the period's spend reaches it.
    hard_usd: Option<f64>,
    /// Reaching it is logged and counted for operators; turns go on.
    soft_usd: Option<f64>,
}

/// The scope (`tenant`, or an agent's id or name) and period (`day`, `month`) of a path.
async fn scope(
    state: &AdminState,
    tenant: hermes_core::TenantId,
    scope: &str,
    period: &str,
) -> Result<(Option<AgentId>, BudgetPeriod)> {
    let period = period.parse::<BudgetPeriod>().map_err(|_| {
        ApiError::not_found(ErrorCode::NotFound, format!("no budget period {period:?}: use day or month"))
    })?;
    let agent = match scope {
        "tenant" => None,
        agent => Some(state.agent(tenant, agent).await?.id),
    };
    Ok((agent, period))
}

#[utoipa::path(put, path = "/admin/v1/tenants/{tenant}/budgets/{scope}/{period}", tag = "admin: usage", request_body = Caps,
    params(TenantPath,
        ("scope" = String, Path, description = "`tenant`, or an agent's id or name"),
        ("period" = String, Path, description = "`day` or `month` (in the tenant's time zone)")),
    responses((status = 204, description = "Set (replacing the cap of that scope and period)"),
        (status = 400, description = "No amount, or a negative one", body = hermes_wire::ErrorBody),
        MayNotSetBudgets,
        (status = 404, description = "No such tenant, agent or period", body = hermes_wire::ErrorBody)))]
pub(crate) async fn set(
    call: TenantCall,
    Path((_, scope_ref, period)): Path<(String, String, String)>,
    body: Body<Caps>,
) -> Result<StatusCode> {
    let t = call.allow(AdminOp::ManageBudgets).await?;
    let (agent, period) = scope(&call.state, t.id, &scope_ref, &period).await?;
    let hermes_http::ApiJson(body) = body?;
    if body.hard_usd.is_none() && body.soft_usd.is_none() {
        let why = "give hard_usd, soft_usd or both (DELETE removes a cap)";
        return Err(ApiError::invalid_request(ErrorCode::InvalidValue, why).with_param("hard_usd"));
    }
    let before = call.state.store.tenancy().tenant_budgets(t.id, chrono::Utc::now()).await.map_err(store_error)?;
    let before = before.into_iter().map(|s| s.budget).find(|b| b.agent_id == agent && b.period == period);
    let budget = Budget { agent_id: agent, period, hard_usd: body.hard_usd, soft_usd: body.soft_usd };
    let mut tx = call.begin(t.id).await?;
    tx.set_budget(&budget).await.map_err(|e| match e {
        StoreError::Invalid(why) => ApiError::invalid_request(ErrorCode::InvalidValue, why).with_param("hard_usd"),
        other => store_error(other),
    })?;
    let change = Change::new("budget.set", "budget", format!("{scope_ref}/{period}")).before(&before).after(&budget);
    tx.commit(change).await.map_err(store_error)?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(delete, path = "/admin/v1/tenants/{tenant}/budgets/{scope}/{period}", tag = "admin: usage",
    params(TenantPath,
        ("scope" = String, Path, description = "`tenant`, or an agent's id or name"),
        ("period" = String, Path, description = "`day` or `month`")),
    responses((status = 204, description = "Removed: that scope has no cap for the period now"),
        MayNotSetBudgets,
        (status = 404, description = "No such cap", body = hermes_wire::ErrorBody)))]
pub(crate) async fn remove(
    call: TenantCall,
    Path((_, scope_ref, period)): Path<(String, String, String)>,
) -> Result<StatusCode> {
    let t = call.allow(AdminOp::ManageBudgets).await?;
    let (agent, period) = scope(&call.state, t.id, &scope_ref, &period).await?;
    let mut tx = call.begin(t.id).await?;
    if !tx.delete_budget(agent, period).await.map_err(store_error)? {
        return Err(ApiError::not_found(ErrorCode::NotFound, "no such budget"));
    }
    tx.commit(Change::new("budget.removed", "budget", format!("{scope_ref}/{period}"))).await.map_err(store_error)?;
    Ok(StatusCode::NO_CONTENT)
}
