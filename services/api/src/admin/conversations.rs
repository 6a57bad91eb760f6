//! What a tenant's agents have been doing: its agents (and the toolsets they may be given),
//! their sessions and transcripts, and deleting a session. Transcripts are returned as stored;
//! the console renders every part as text, never as markup.

use axum::Json;
use axum::extract::{Path, Query};
use axum::http::StatusCode;
use serde::Deserialize;

use hermes_core::access::AdminOp;
use hermes_core::{ErrorCode, SessionId};
use hermes_http::ApiError;
use hermes_ops::OpsError;
use hermes_ops::agents::{self as agent_ops, ModelUrls};
use hermes_ops::toolsets::Installed;
use hermes_store::admin::Change;
use hermes_wire::admin::{Agent, AgentEdit, NewAgent, ToolsetChoice, Transcript};
use hermes_wire::{List, Slice};

use crate::admin::errors::{Result, ops_error, path_id, store_error, store_error_for, value_conflict};
use crate::admin::tenant_call::{AgentCall, Body, TenantCall};
use crate::documented::{
    AgentPath, MayNotEditAgents, NoSuchAgent, NoSuchSession, ObjectPath, SessionPath, TenantNotFound, TenantPath,
};

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/agents", tag = "admin: agents", params(TenantPath),
    responses((status = 200, description = "The tenant's agents (provider keys are never shown)", body = List<Agent>),
        TenantNotFound))]
pub(crate) async fn agents(call: TenantCall) -> Result<Json<List<Agent>>> {
    call.list_shown(AdminOp::ViewAgents, async |store, t| store.agents().list_agents(t).await, |agent| agent.shown)
        .await
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/sandbox-images", tag = "admin: agents", params(TenantPath),
    responses((status = 200, description = "The sandbox images agents may pick and the most they may ask for", body = hermes_wire::admin::SandboxOffer),
        TenantNotFound))]
pub(crate) async fn sandbox_images(call: TenantCall) -> Result<Json<hermes_wire::admin::SandboxOffer>> {
    call.allow(AdminOp::ViewAgents).await?;
    let cfg = &call.state.config.sandbox;
    let images = cfg
        .images_offered()
        .into_iter()
        .map(|i| hermes_wire::admin::SandboxImageShown { name: i.name, carries: i.carries })
        .collect();
    let max = &cfg.max;
    Ok(Json(hermes_wire::admin::SandboxOffer {
        images,
        max_cpus: max.cpus,
        max_memory_mb: max.memory_mb,
        max_disk_mb: max.disk_mb,
        max_pids: max.pids,
    }))
}

/// A page of sessions, narrowed and searched.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct SessionPage {
    /// Words to find in what users and agents said: `"a phrase"`, `a OR b`, `-word`, `word*`.
    /// Results come best match first, each with a snippet.
    q: Option<String>,
    /// Only this agent's sessions (id or name).
    agent: Option<String>,
    /// Only sessions from `api`, `cron`, `webhook`, `telegram`, `slack` or `wecom`.
    #[param(value_type = Option<String>)]
    source: Option<hermes_core::SessionSource>,
    /// 1 to 100; default 50.
    limit: Option<i64>,
    offset: Option<i64>,
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/sessions", tag = "admin: sessions",
    params(TenantPath, SessionPage),
    responses((status = 200, description = "Sessions, most recently active first (best match first when searching)", body = Slice<hermes_wire::admin::ListedSession>),
        (status = 400, description = "A query with nothing to search for", body = hermes_wire::ErrorBody),
        (status = 404, description = "No such tenant or agent (or not yours)", body = hermes_wire::ErrorBody)))]
pub(crate) async fn sessions(
    call: TenantCall,
    Query(page): Query<SessionPage>,
) -> Result<Json<Slice<hermes_wire::admin::ListedSession>>> {
    let t = call.allow(AdminOp::ViewSessions).await?;
    let limit = page.limit.unwrap_or(50).clamp(1, 100);
    let offset = page.offset.unwrap_or(0).max(0);
    let agent = match page.agent.as_deref().filter(|a| !a.is_empty()) {
        Some(agent) => Some(call.state.agent(t.id, agent).await?.id),
        None => None,
    };
    let tsquery = match page.q.as_deref().map(str::trim).filter(|q| !q.is_empty()) {
        Some(q) => Some(hermes_store::search_text::parse_query(q).ok_or_else(|| {
            ApiError::invalid_request(ErrorCode::InvalidValue, "nothing searchable in the query").with_param("q")
        })?),
        None => None,
    };
    let filter = hermes_store::SessionFilter { agent, source: page.source, tsquery };
    let found =
        call.state.store.conversations().find_sessions(t.id, &filter, limit + 1, offset).await.map_err(store_error)?;
    let has_more = found.len() as i64 > limit;
    let data = found.into_iter().take(limit as usize).map(crate::admin::shown::listed_session).collect();
    Ok(Json(Slice::of(data, has_more)))
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
    params(TenantPath, SessionPath, TranscriptPage),
    responses((status = 200, description = "The session and a page of its transcript", body = Transcript),
        NoSuchSession))]
pub(crate) async fn transcript(
    call: TenantCall,
    Path(ObjectPath { id }): Path<ObjectPath>,
    Query(page): Query<TranscriptPage>,
) -> Result<Json<Transcript>> {
    let t = call.allow(AdminOp::ViewSessions).await?;
    let id: SessionId = path_id(&id, ErrorCode::SessionNotFound, "session")?;
    let info = call.state.store.conversations().session_info(t.id, None, id).await;
    let info = info.map_err(|e| store_error_for(e, ErrorCode::SessionNotFound, "session"))?;
    let limit = page.limit.unwrap_or(200).clamp(1, 500);
    let found =
        call.state.store.conversations().messages_after(t.id, id, page.after.unwrap_or(0), Some(limit + 1)).await;
    let found = found.map_err(store_error)?;
    let has_more = found.len() as i64 > limit;
    let messages = found.into_iter().take(limit as usize).map(crate::shown::numbered).collect();
    Ok(Json(Transcript { session: info, messages, has_more }))
}

#[utoipa::path(delete, path = "/admin/v1/tenants/{tenant}/sessions/{id}", tag = "admin: sessions",
    params(TenantPath, SessionPath),
    responses((status = 204, description = "Deleted with its transcript"),
        (status = 403, description = "The caller's role may not delete sessions", body = hermes_wire::ErrorBody),
        NoSuchSession,
        (status = 409, description = "A turn is running in it: stop it first", body = hermes_wire::ErrorBody)))]
pub(crate) async fn delete_session(call: TenantCall, Path(ObjectPath { id }): Path<ObjectPath>) -> Result<StatusCode> {
    let t = call.allow(AdminOp::ManageSessions).await?;
    let id: SessionId = path_id(&id, ErrorCode::SessionNotFound, "session")?;
    let info = call.state.store.conversations().session_info(t.id, None, id).await;
    let info = info.map_err(|e| store_error_for(e, ErrorCode::SessionNotFound, "session"))?;
    let mut tx = call.begin(t.id).await?;
    tx.delete_session(None, id).await.map_err(|e| store_error_for(e, ErrorCode::SessionNotFound, "session"))?;
    tx.commit(Change::new("session.deleted", "session", id).before(&info)).await.map_err(store_error)?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/admin/v1/tenants/{tenant}/agents", tag = "admin: agents", request_body = NewAgent,
    params(TenantPath),
    responses((status = 201, description = "The agent (its key is never shown); with no `toolsets` named, the installation's defaults", body = Agent),
        (status = 400, description = "A bad name, URL or toolset", body = hermes_wire::ErrorBody),
        (status = 403, description = "The caller's role may not create agents", body = hermes_wire::ErrorBody),
        (status = 409, description = "The tenant has an agent of that name", body = hermes_wire::ErrorBody)))]
pub(crate) async fn create_agent(call: TenantCall, body: Body<NewAgent>) -> Result<(StatusCode, Json<Agent>)> {
    let (t, body) = call.allow_with_body(AdminOp::EditAgents, body).await?;
    let policy = call.state.outbound_policy();
    let doors = (ModelUrls::Policy(&policy), call.state.secrets.as_ref(), &call.state.config.sandbox);
    let installed = Installed::from_config(&call.state.config);
    let made = agent_ops::create(&call.state.store, call.caller.audit(), t.id, body, doors, installed).await;
    let agent = made.map_err(|e| match e {
        OpsError::Store(e) => value_conflict(e, |what| format!("{what} already exists")),
        refused => ops_error(refused),
    })?;
    Ok((StatusCode::CREATED, Json(agent.shown)))
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/toolsets", tag = "admin: agents", params(TenantPath),
    responses((status = 200, description = "Every toolset an agent may be given, with whether this installation has the service it needs and whether new agents get it when no toolsets are named", body = List<ToolsetChoice>),
        TenantNotFound))]
pub(crate) async fn toolsets(call: TenantCall) -> Result<Json<List<ToolsetChoice>>> {
    call.allow(AdminOp::ViewAgents).await?;
    Ok(Json(List::of(Installed::from_config(&call.state.config).choices())))
}

#[utoipa::path(patch, path = "/admin/v1/tenants/{tenant}/agents/{agent}", tag = "admin: agents", request_body = AgentEdit,
    params(TenantPath, AgentPath),
    responses((status = 200, description = "The agent as it now is; new sessions use it", body = Agent),
        (status = 400, description = "An unknown toolset, approval mode or image input mode, or a fallback or vision model URL the outbound policy refuses", body = hermes_wire::ErrorBody),
        MayNotEditAgents,
        NoSuchAgent))]
pub(crate) async fn edit_agent(call: AgentCall, body: Body<AgentEdit>) -> Result<Json<Agent>> {
    let (t, before) = call.allow_agent(AdminOp::EditAgents).await?;
    let hermes_http::ApiJson(body) = body?;
    let policy = call.state.outbound_policy();
    let edited = agent_ops::edit(
        &call.state.store,
        call.caller.audit(),
        (t.id, &before),
        body,
        (ModelUrls::Policy(&policy), &call.state.config.sandbox),
    );
    Ok(Json(edited.await.map_err(ops_error)?.shown))
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/sessions/{id}/export", tag = "admin: sessions",
    params(TenantPath, SessionPath),
    responses((status = 200, description = "The whole conversation and its lineage as one JSON file", body = Object),
        NoSuchSession))]
pub(crate) async fn export(
    call: TenantCall,
    Path(ObjectPath { id }): Path<ObjectPath>,
) -> Result<axum::response::Response> {
    use axum::response::IntoResponse;
    let t = call.allow(AdminOp::ViewSessions).await?;
    let id: SessionId = path_id(&id, ErrorCode::SessionNotFound, "session")?;
    let exported = call.state.store.conversations().export_session(t.id, id).await;
    let exported = exported.map_err(|e| store_error_for(e, ErrorCode::SessionNotFound, "session"))?;
    let disposition = format!("attachment; filename=\"session-{id}.json\"");
    Ok(([(axum::http::header::CONTENT_DISPOSITION, disposition)], Json(exported)).into_response())
}
