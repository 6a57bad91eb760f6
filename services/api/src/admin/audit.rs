//! Reading the audit log: a tenant's (admins and owners) or the installation's (operators),
//! filtered, newest first in keyset pages, or exported whole as CSV or JSON lines.

use axum::Json;
use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use hermes_core::access::AdminOp;
use hermes_core::{ErrorCode, TenantId};
use hermes_http::ApiError;
use hermes_store::admin::{AuditEntry, AuditFilter, AuditPage as StoredPage};
use hermes_wire::admin::AuditPage;

use crate::admin::caller::Caller;
use crate::admin::errors::{Result, store_error};
use crate::admin::state::AdminState;
use crate::admin::tenant_call::TenantCall;
use crate::documented::{OperatorsOnly, TenantNotFound, TenantPath};

/// The most entries one export holds; narrow the dates for more.
const EXPORT_MAX: usize = 100_000;

/// How to answer.
#[derive(Debug, Clone, Copy, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Format {
    /// A page of entries and the cursor of the next.
    #[default]
    Json,
    /// Every matching entry as CSV.
    Csv,
    /// Every matching entry as JSON lines.
    Jsonl,
}

/// Filters (every one narrows) and paging.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct AuditQuery {
    /// Entries whose action starts with this, such as `member.`.
    action: Option<String>,
    /// Entries by this actor: a person's email or id, a token's id.
    actor: Option<String>,
    /// Entries about this object id.
    object: Option<String>,
    /// From this time (RFC 3339), inclusive.
    #[param(value_type = Option<String>)]
    since: Option<chrono::DateTime<chrono::Utc>>,
    /// Until this time (RFC 3339), exclusive.
    #[param(value_type = Option<String>)]
    until: Option<chrono::DateTime<chrono::Utc>>,
    /// The `next` of the previous page.
    cursor: Option<i64>,
    /// 1 to 200; default 50.
    limit: Option<u32>,
    #[param(value_type = Option<String>)]
    format: Option<Format>,
}

impl AuditQuery {
    fn filter(&self) -> AuditFilter {
        AuditFilter {
            action: self.action.clone().filter(|s| !s.is_empty()),
            actor: self.actor.clone().filter(|s| !s.is_empty()),
            object_id: self.object.clone().filter(|s| !s.is_empty()),
            since: self.since,
            until: self.until,
            before_id: self.cursor,
            limit: self.limit.unwrap_or(50).clamp(1, 200),
        }
    }
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/audit", tag = "admin: audit", params(TenantPath, AuditQuery),
    responses((status = 200, description = "A page of entries (or, with format=csv|jsonl, every matching entry as a file)", body = AuditPage),
        (status = 403, description = "Members may not read the audit log", body = hermes_wire::ErrorBody),
        TenantNotFound))]
pub(crate) async fn tenant_audit(call: TenantCall, Query(query): Query<AuditQuery>) -> Result<Response> {
    let t = call.allow(AdminOp::ViewAudit).await?;
    answer(&call.state, Some(t.id), query).await
}

#[utoipa::path(get, path = "/admin/v1/audit", tag = "admin: audit", params(AuditQuery),
    responses((status = 200, description = "A page of the installation's own entries (tenants, operators)", body = AuditPage),
        OperatorsOnly))]
pub(crate) async fn installation_audit(
    State(state): State<AdminState>,
    caller: Caller,
    Query(query): Query<AuditQuery>,
) -> Result<Response> {
    caller.installation(AdminOp::ViewCluster)?;
    answer(&state, None, query).await
}

async fn page(state: &AdminState, tenant: Option<TenantId>, filter: &AuditFilter) -> Result<StoredPage> {
    let found = match tenant {
        Some(t) => state.store.admin().audit_entries(t, filter).await,
        None => state.store.admin().installation_audit_entries(filter).await,
    };
    found.map_err(store_error)
}

async fn answer(state: &AdminState, tenant: Option<TenantId>, query: AuditQuery) -> Result<Response> {
    if let (Some(since), Some(until)) = (query.since, query.until)
        && since >= until
    {
        return Err(
            ApiError::invalid_request(ErrorCode::InvalidValue, "`since` must be before `until`").with_param("since")
        );
    }
    let format = query.format.unwrap_or_default();
    let mut filter = query.filter();
    if let Format::Json = format {
        let found = page(state, tenant, &filter).await?;
        let page = AuditPage { object: hermes_wire::ListKind::List, data: found.entries, next: found.next };
        return Ok(Json(page).into_response());
    }
    filter.limit = 1000;
    let mut entries: Vec<AuditEntry> = Vec::new();
    loop {
        let found = page(state, tenant, &filter).await?;
        entries.extend(found.entries);
        match found.next {
            Some(next) if entries.len() < EXPORT_MAX => filter.before_id = Some(next),
            _ => break,
        }
    }
    entries.truncate(EXPORT_MAX);
    let (body, kind, ext) = match format {
        Format::Csv => (csv(&entries), "text/csv; charset=utf-8", "csv"),
        _ => (jsonl(&entries), "application/x-ndjson", "jsonl"),
    };
    let disposition = format!("attachment; filename=\"audit.{ext}\"");
    Ok(([(header::CONTENT_TYPE, kind.to_owned()), (header::CONTENT_DISPOSITION, disposition)], body).into_response())
}

fn jsonl(entries: &[AuditEntry]) -> String {
    entries.iter().filter_map(|e| serde_json::to_string(e).ok()).map(|line| line + "\n").collect()
}

/// One CSV field: quoted when needed, and a leading `=`, `+`, `-` or `@` defused so a
/// spreadsheet does not run it as a formula.
fn field(text: &str) -> String {
    let text = if text.starts_with(['=', '+', '-', '@']) { format!("'{text}") } else { text.to_owned() };
    if text.contains([',', '"', '\n', '\r']) { format!("\"{}\"", text.replace('"', "\"\"")) } else { text }
}

fn csv(entries: &[AuditEntry]) -> String {
    let mut out = String::from(
        "id,at,tenant_id,actor_kind,actor_id,actor_label,action,object_kind,object_id,before,after,request_id,source_address\n",
    );
    for e in entries {
        let json_or_empty = |v: &Option<serde_json::Value>| v.as_ref().map(|v| v.to_string()).unwrap_or_default();
        let row = [
            e.id.to_string(),
            e.at.to_rfc3339(),
            e.tenant_id.map(|t| t.to_string()).unwrap_or_default(),
            e.actor.kind.clone(),
            e.actor.id.clone(),
            e.actor.label.clone(),
            e.action.clone(),
            e.object_kind.clone(),
            e.object_id.clone(),
            json_or_empty(&e.before),
            json_or_empty(&e.after),
            e.request_id.clone().unwrap_or_default(),
            e.source_address.clone().unwrap_or_default(),
        ];
        out.push_str(&row.iter().map(|f| field(f)).collect::<Vec<_>>().join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::field;

    #[test]
    fn csv_fields_are_quoted_and_formulas_defused() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(field("@SUM(A1)"), "'@SUM(A1)");
    }
}
