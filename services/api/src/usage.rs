//! `GET /v1/usage`: the tenant's model calls in tokens and dollars, per day (in the tenant's
//! time zone), agent or API key. A key restricted to one agent sees that agent's usage only.
//! Calls of models without a price are counted as `unpriced_calls`, never as free.

use axum::Json;
use axum::extract::{Query, State};
use chrono::{Duration, NaiveDate, Utc};
use serde::Deserialize;

use hermes_http::{ApiError, ErrorCode};
use hermes_store::{UsageGroup, UsageLine};
use hermes_wire::ListKind;
use hermes_wire::v1::{UsageReport, UsageTotals};

use crate::agents::resolve_agent;
use crate::auth::Caller;
use crate::documented::{BadRequest, NoApiKey, NotFound};
use crate::state::AppState;

/// The longest period one report covers.
const MAX_DAYS: i64 = 366;

#[derive(Debug, Deserialize)]
pub(crate) struct UsageQuery {
    group_by: Option<String>,
    /// First day, `YYYY-MM-DD` (default: 29 days before `end`).
    start: Option<String>,
    /// Last day, inclusive (default: today).
    end: Option<String>,
    /// Only this agent.
    model: Option<String>,
}

fn day(param: &'static str, text: Option<&str>) -> Result<Option<NaiveDate>, ApiError> {
    text.map(|t| {
        NaiveDate::parse_from_str(t.trim(), "%Y-%m-%d").map_err(|_| {
            ApiError::invalid_request(ErrorCode::InvalidValue, format!("{param} is a date: YYYY-MM-DD"))
                .with_param(param)
        })
    })
    .transpose()
}

#[utoipa::path(get, path = "/v1/usage", tag = "hermes",
    params(("group_by" = Option<String>, Query, description = "day (default), agent or key"),
           ("start" = Option<String>, Query, description = "First day (YYYY-MM-DD)"),
           ("end" = Option<String>, Query, description = "Last day (YYYY-MM-DD)"),
           ("model" = Option<String>, Query, description = "Only this agent")),
    responses((status = 200, description = "Tokens and dollars per group, with totals", body = UsageReport), BadRequest, NoApiKey, NotFound))]
pub(crate) async fn usage(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Query(q): Query<UsageQuery>,
) -> Result<Json<UsageReport>, ApiError> {
    let period = q.period()?;
    let agent = match q.model.as_deref() {
        Some(name) => Some(resolve_agent(&state, &auth, Some(name)).await?.id),
        None => auth.agent_id,
    };
    let lines = state
        .store
        .tenancy()
        .usage_report(auth.tenant_id, agent, period.group, period.start, period.end)
        .await
        .map_err(ApiError::internal)?;
    Ok(Json(period.report(lines)))
}

/// What one report covers, and how it groups the calls.
struct Period {
    group: UsageGroup,
    start: NaiveDate,
    end: NaiveDate,
}

impl UsageQuery {
    /// The checked period: by default the 30 days up to today, grouped by day.
    fn period(&self) -> Result<Period, ApiError> {
        let group = match self.group_by.as_deref().unwrap_or("day") {
            "day" => UsageGroup::Day,
            "agent" | "model" => UsageGroup::Agent,
            "key" | "api_key" => UsageGroup::Key,
            _ => {
                return Err(ApiError::invalid_request(ErrorCode::InvalidValue, "group_by is day, agent or key")
                    .with_param("group_by"));
            }
        };
        let end = day("end", self.end.as_deref())?.unwrap_or_else(|| Utc::now().date_naive());
        let start = day("start", self.start.as_deref())?.unwrap_or(end - Duration::days(29));
        if start > end || end - start > Duration::days(MAX_DAYS) {
            return Err(ApiError::invalid_request(
                ErrorCode::InvalidValue,
                format!("start must be before end, at most {MAX_DAYS} days apart"),
            )
            .with_param("start"));
        }
        Ok(Period { group, start, end })
    }
}

impl Period {
    /// The report: one line per group, with totals.
    fn report(&self, lines: Vec<UsageLine>) -> UsageReport {
        let mut total = UsageTotals::default();
        for line in &lines {
            total.add(&line.usage);
        }
        let group_by = match self.group {
            UsageGroup::Day => "day",
            UsageGroup::Agent => "agent",
            UsageGroup::Key => "key",
        };
        UsageReport {
            object: ListKind::List,
            group_by: group_by.to_owned(),
            start: self.start.to_string(),
            end: self.end.to_string(),
            data: lines,
            total,
        }
    }
}
