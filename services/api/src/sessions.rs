//! `/api/sessions`: the tenant's conversations as resources, as upstream's API server has them:
//! list, create, get (with lineage), rename, delete, messages, fork, and export (JSON or
//! ShareGPT). A key restricted to one agent sees only that agent's sessions; another tenant's
//! session, or one of an agent the key may not use, is a 404 like a missing one.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;

use hermes_core::SessionId;
use hermes_http::{ApiError, ApiJson, ErrorCode};
use hermes_store::{KeyAuth, SessionInfo};
use hermes_wire::Slice;
use hermes_wire::v1::{Deleted, NumberedMessage, Session, SessionWithLineage};

use crate::agents::resolve_agent;
use crate::auth::Caller;
use crate::documented::{BadRequest, NoApiKey, NotFound, ObjectPath};
use crate::errors::{Failure, path_id, resource};
use crate::headers::user_key;
use crate::shown::numbered;
use crate::state::AppState;
use crate::visible::{Addressed, CallerObject, Visible};

/// This module's handlers' error: a store error is about a session.
type Result<T> = std::result::Result<T, Failure<resource::Session>>;

const DEFAULT_PAGE: i64 = 20;
const MAX_PAGE: i64 = 100;

/// The session, if this caller may see it.
impl CallerObject for SessionInfo {
    type Path = ObjectPath;
    type Missing = Failure<resource::Session>;

    async fn find(state: &AppState, auth: &KeyAuth, id: &str) -> Result<Self> {
        let id: SessionId = path_id::<resource::Session, _>(id)?;
        Ok(state.store.conversations().session_info(auth.tenant_id, auth.agent_id, id).await?)
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct Page {
    limit: Option<i64>,
    offset: Option<i64>,
    /// Only this agent's sessions.
    model: Option<String>,
}

#[utoipa::path(get, path = "/api/sessions", tag = "sessions",
    responses((status = 200, description = "Sessions, newest first", body = Slice<Session>), BadRequest, NoApiKey))]
pub(crate) async fn list(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Query(page): Query<Page>,
) -> Result<Json<Slice<Session>>> {
    let limit = page.limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE);
    let offset = page.offset.unwrap_or(0).max(0);
    let agent = match page.model.as_deref() {
        Some(name) => Some(resolve_agent(&state, &auth, Some(name)).await?.id),
        None => auth.agent_id,
    };
    let sessions = state.store.conversations().list_sessions(auth.tenant_id, agent, limit + 1, offset).await?;
    let has_more = sessions.len() as i64 > limit;
    let data = sessions.into_iter().take(limit as usize).collect();
    Ok(Json(Slice::of(data, has_more)))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateSession {
    model: Option<String>,
    title: Option<String>,
}

#[utoipa::path(post, path = "/api/sessions", tag = "sessions",
    responses((status = 201, description = "A new, empty session", body = Session), BadRequest, NoApiKey, NotFound))]
pub(crate) async fn create(
    State(state): State<AppState>,
    Caller(auth): Caller,
    headers: HeaderMap,
    ApiJson(body): ApiJson<CreateSession>,
) -> Result<Response> {
    let agent = resolve_agent(&state, &auth, body.model.as_deref()).await?;
    let user = user_key(&headers, &auth)?;
    let title = body.title.as_deref().map(str::trim).filter(|t| !t.is_empty());
    let id = state
        .store
        .conversations()
        .create_session(auth.tenant_id, agent.id, hermes_core::SessionSource::Api, &user, title)
        .await?;
    let info = state.store.conversations().session_info(auth.tenant_id, auth.agent_id, id).await?;
    Ok((StatusCode::CREATED, Json(info)).into_response())
}

#[utoipa::path(get, path = "/api/sessions/{id}", tag = "sessions", params(ObjectPath),
    responses((status = 200, description = "The session and its lineage", body = SessionWithLineage), BadRequest, NoApiKey, NotFound))]
pub(crate) async fn get(
    Visible { state, auth, found: info, .. }: Visible<SessionInfo>,
) -> Result<Json<SessionWithLineage>> {
    // `lineage` says how this session began (fork, compaction, subagent); the tree is apart.
    let lineage_tree = state.store.conversations().session_lineage(auth.tenant_id, info.id).await?;
    Ok(Json(SessionWithLineage { session: info, lineage_tree }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Rename {
    title: Option<String>,
}

#[utoipa::path(patch, path = "/api/sessions/{id}", tag = "sessions", params(ObjectPath),
    responses((status = 200, description = "Renamed", body = Session), BadRequest, NoApiKey, NotFound))]
pub(crate) async fn rename(at: Addressed<SessionInfo>, ApiJson(body): ApiJson<Rename>) -> Result<Json<Session>> {
    let Visible { state, auth, found: info, .. } = at.find().await?;
    state.store.conversations().set_session_title(auth.tenant_id, info.id, body.title.as_deref()).await?;
    Ok(Json(state.store.conversations().session_info(auth.tenant_id, auth.agent_id, info.id).await?))
}

#[utoipa::path(delete, path = "/api/sessions/{id}", tag = "sessions", params(ObjectPath),
    responses((status = 200, description = "Deleted", body = Deleted), BadRequest, NoApiKey, NotFound,
              (status = 409, description = "A turn is running in it", body = hermes_wire::ErrorBody)))]
pub(crate) async fn delete(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(ObjectPath { id }): Path<ObjectPath>,
) -> Result<Json<Deleted>> {
    let id: SessionId = path_id::<resource::Session, _>(&id)?;
    state.store.conversations().delete_session(auth.tenant_id, auth.agent_id, id).await?;
    Ok(Json(Deleted::new(id, "session.deleted")))
}

#[derive(Debug, Deserialize)]
pub(crate) struct MessagePage {
    /// Messages after this sequence number.
    after: Option<i32>,
    limit: Option<i64>,
}

#[utoipa::path(get, path = "/api/sessions/{id}/messages", tag = "sessions", params(ObjectPath),
    responses((status = 200, description = "A page of messages", body = Slice<NumberedMessage>), BadRequest, NoApiKey, NotFound))]
pub(crate) async fn messages(
    at: Addressed<SessionInfo>,
    Query(page): Query<MessagePage>,
) -> Result<Json<Slice<NumberedMessage>>> {
    let Visible { state, auth, found: info, .. } = at.find().await?;
    let limit = page.limit.unwrap_or(100).clamp(1, 1_000) as usize;
    let after = page.after.unwrap_or(0);
    let page =
        state.store.conversations().messages_after(auth.tenant_id, info.id, after, Some(limit as i64 + 1)).await?;
    let has_more = page.len() > limit;
    let data = page.into_iter().take(limit).map(numbered).collect();
    Ok(Json(Slice::of(data, has_more)))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Fork {
    /// Copy the conversation up to this message (`seq`); all of it when absent.
    up_to: Option<i32>,
    title: Option<String>,
}

#[utoipa::path(post, path = "/api/sessions/{id}/fork", tag = "sessions", params(ObjectPath),
    responses((status = 201, description = "The fork", body = Session), BadRequest, NoApiKey, NotFound))]
pub(crate) async fn fork(at: Addressed<SessionInfo>, body: Option<ApiJson<Fork>>) -> Result<Response> {
    let Visible { state, auth, found: info, .. } = at.find().await?;
    let body = body.map(|ApiJson(b)| b).unwrap_or(Fork { up_to: None, title: None });
    if body.up_to.is_some_and(|n| n < 1) {
        return Err(ApiError::invalid_request(ErrorCode::InvalidValue, "up_to is a message sequence number, from 1")
            .with_param("up_to")
            .into());
    }
    let child =
        state.store.conversations().fork_session(auth.tenant_id, info.id, body.up_to, body.title.as_deref()).await?;
    let created = state.store.conversations().session_info(auth.tenant_id, auth.agent_id, child).await?;
    Ok((StatusCode::CREATED, Json(created)).into_response())
}

#[derive(Debug, Deserialize)]
pub(crate) struct ExportQuery {
    format: Option<String>,
}

#[utoipa::path(get, path = "/api/sessions/{id}/export", tag = "sessions",
    params(ObjectPath,
           ("format" = Option<String>, Query, description = "json (default) or sharegpt")),
    responses((status = 200, description = "The whole session with its lineage", body = serde_json::Value), BadRequest, NoApiKey, NotFound))]
pub(crate) async fn export(at: Addressed<SessionInfo>, Query(q): Query<ExportQuery>) -> Result<Json<Value>> {
    let Visible { state, auth, found: info, .. } = at.find().await?;
    let export = state.store.conversations().export_session(auth.tenant_id, info.id).await?;
    match q.format.as_deref().unwrap_or("json") {
        "json" => Ok(Json(serde_json::to_value(export).map_err(ApiError::internal)?)),
        "sharegpt" => Ok(Json(export.to_sharegpt())),
        _ => Err(ApiError::invalid_request(ErrorCode::InvalidValue, "format is json or sharegpt")
            .with_param("format")
            .into()),
    }
}
