//! Usage for people: sums of the daily rollups over a bounded range of days, by day, agent,
//! model or source. A page reads the rows of its days, never the calls themselves.

use axum::Json;
use axum::extract::Query;
use chrono::NaiveDate;
use serde::Deserialize;

use hermes_core::ErrorCode;
use hermes_core::access::AdminOp;
use hermes_http::ApiError;
use hermes_store::admin::RollupGroup;
use hermes_wire::admin::{RollupLine, UsageRollup};

use crate::admin::errors::store_error;
use crate::admin::tenant_call::TenantCall;
use crate::documented::{TenantNotFound, TenantPath};

/// Which days, grouped how.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct UsageQuery {
    /// First day (UTC, `YYYY-MM-DD`); default 29 days before `to`.
    #[param(value_type = Option<String>)]
    from: Option<NaiveDate>,
    /// Last day, inclusive; default today. At most 366 days in all.
    #[param(value_type = Option<String>)]
    to: Option<NaiveDate>,
    /// `day` (default), `agent`, `model` or `source` (`api`, `chat`, `cron`, `webhook`).
    #[param(value_type = Option<String>)]
    by: Option<RollupGroup>,
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/usage", tag = "admin: usage",
    params(TenantPath, UsageQuery),
    responses((status = 200, description = "Tokens, dollars, turns, tool and sandbox time per group, and the total", body = UsageRollup),
        (status = 400, description = "A range that is backwards or longer than 366 days", body = hermes_wire::ErrorBody),
        TenantNotFound))]
pub(crate) async fn usage(call: TenantCall, Query(q): Query<UsageQuery>) -> Result<Json<UsageRollup>, ApiError> {
    let t = call.allow(AdminOp::ViewUsage).await?;
    let to = q.to.unwrap_or_else(|| chrono::Utc::now().date_naive());
    let from = q.from.unwrap_or(to - chrono::Duration::days(29));
    let by = q.by.unwrap_or(RollupGroup::Day);
    let lines = call.state.store.admin().usage_rollup(t.id, from, to, by).await.map_err(|e| match e {
        hermes_store::StoreError::Invalid(why) => {
            ApiError::invalid_request(ErrorCode::InvalidValue, why).with_param("from")
        }
        other => store_error(other),
    })?;
    let mut total = RollupLine { key: "total".into(), ..Default::default() };
    for line in &lines {
        total.usage.add(&line.usage);
    }
    let by = match by {
        RollupGroup::Day => "day",
        RollupGroup::Agent => "agent",
        RollupGroup::Model => "model",
        RollupGroup::Source => "source",
    };
    Ok(Json(UsageRollup { from, to, by: by.to_owned(), lines, total }))
}
