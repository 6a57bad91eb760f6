//! What a tenant's agents have been doing: its agents, their sessions and transcripts, and
//! deleting a session. Transcripts are returned as stored; the console renders every part as
//! text, never as markup.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use hermes_core::access::AdminOp;
use hermes_core::{ErrorCode, SessionId};
use hermes_http::ApiError;
use hermes_store::admin::Change;

use crate::caller::Caller;
use crate::errors::{store_error, store_error_for};
use crate::state::AdminState;

type Result<T, E = ApiError> = std::result::Result<T, E>;

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/agents", tag = "admin: agents",
    params(("tenant" = String, Path, description = "Tenant id")),
    responses((status = 200, description = "The tenant's agents (provider keys are never shown)", body = crate::schemas::ObjectList),
        (status = 404, description = "No such tenant (or not yours)", body = crate::schemas::ErrorBody)))]
pub(crate) async fn agents(
    State(state): State<AdminState>,
    caller: Caller,
    Path(tenant): Path<String>,
) -> Result<Json<Value>> {
    let t = caller.tenant(&state, &tenant, AdminOp::ViewAgents).await?;
    let agents = state.store.list_agents(t.id).await.map_err(store_error)?;
    Ok(Json(json!({ "object": "list", "data": agents })))
}

/// A page of sessions.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct SessionPage {
    /// 1 to 100; default 50.
    limit: Option<i64>,
    offset: Option<i64>,
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/sessions", tag = "admin: sessions",
    params(("tenant" = String, Path, description = "Tenant id"), SessionPage),
    responses((status = 200, description = "Sessions, most recently active first", body = crate::schemas::ObjectPage),
        (status = 404, description = "No such tenant (or not yours)", body = crate::schemas::ErrorBody)))]
pub(crate) async fn sessions(
    State(state): State<AdminState>,
    caller: Caller,
    Path(tenant): Path<String>,
    Query(page): Query<SessionPage>,
) -> Result<Json<Value>> {
    let t = caller.tenant(&state, &tenant, AdminOp::ViewSessions).await?;
    let limit = page.limit.unwrap_or(50).clamp(1, 100);
    let offset = page.offset.unwrap_or(0).max(0);
    let found = state.store.list_sessions(t.id, None, limit + 1, offset).await.map_err(store_error)?;
    let has_more = found.len() as i64 > limit;
    let data: Vec<&hermes_store::SessionInfo> = found.iter().take(limit as usize).collect();
    Ok(Json(json!({ "object": "list", "data": data, "has_more": has_more })))
}

fn session_id(raw: &str) -> Result<SessionId> {
    raw.parse().map_err(|_| ApiError::not_found(ErrorCode::SessionNotFound, "no such session"))
}

/// Paging through a transcript.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct TranscriptPage {
    /// Messages after this sequence number.
    after: Option<i32>,
    /// 1 to 500; default 200.
    limit: Option<i64>,
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/sessions/{id}", tag = "admin: sessions",
    params(("tenant" = String, Path, description = "Tenant id"), ("id" = String, Path, description = "Session id"), TranscriptPage),
    responses((status = 200, description = "The session and a page of its transcript", body = crate::schemas::Transcript),
        (status = 404, description = "No such session", body = crate::schemas::ErrorBody)))]
pub(crate) async fn transcript(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, id)): Path<(String, String)>,
    Query(page): Query<TranscriptPage>,
) -> Result<Json<Value>> {
    let t = caller.tenant(&state, &tenant, AdminOp::ViewSessions).await?;
    let id = session_id(&id)?;
    let info = state.store.session_info(t.id, None, id).await;
    let info = info.map_err(|e| store_error_for(e, ErrorCode::SessionNotFound, "session"))?;
    let limit = page.limit.unwrap_or(200).clamp(1, 500);
    let found = state.store.messages_after(t.id, id, page.after.unwrap_or(0), Some(limit + 1)).await;
    let found = found.map_err(store_error)?;
    let has_more = found.len() as i64 > limit;
    let messages: Vec<Value> = found
        .iter()
        .take(limit as usize)
        .map(|m| {
            let mut v = json!(m.message);
            v["seq"] = json!(m.seq);
            v
        })
        .collect();
    Ok(Json(json!({ "session": info, "messages": messages, "has_more": has_more })))
}

#[utoipa::path(delete, path = "/admin/v1/tenants/{tenant}/sessions/{id}", tag = "admin: sessions",
    params(("tenant" = String, Path, description = "Tenant id"), ("id" = String, Path, description = "Session id")),
    responses((status = 204, description = "Deleted with its transcript"),
        (status = 403, description = "The caller's role may not delete sessions", body = crate::schemas::ErrorBody),
        (status = 404, description = "No such session", body = crate::schemas::ErrorBody),
        (status = 409, description = "A turn is running in it: stop it first", body = crate::schemas::ErrorBody)))]
pub(crate) async fn delete_session(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, id)): Path<(String, String)>,
) -> Result<StatusCode> {
    let t = caller.tenant(&state, &tenant, AdminOp::ManageSessions).await?;
    let id = session_id(&id)?;
    let info = state.store.session_info(t.id, None, id).await;
    let info = info.map_err(|e| store_error_for(e, ErrorCode::SessionNotFound, "session"))?;
    state
        .store
        .delete_session(t.id, None, id)
        .await
        .map_err(|e| store_error_for(e, ErrorCode::SessionNotFound, "session"))?;
    let change = Change::new("session.deleted", "session", id).before(&info);
    state.store.record_audit(Some(t.id), &caller.audit(), change).await.map_err(store_error)?;
    Ok(StatusCode::NO_CONTENT)
}
