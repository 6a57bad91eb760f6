//! What a tenant's agents have been doing: its agents, their sessions and transcripts, and
//! deleting a session. Transcripts are returned as stored; the console renders every part as
//! text, never as markup.

use axum::Json;
use axum::extract::{Path, Query};
use axum::http::StatusCode;
use serde::Deserialize;

use hermes_core::access::AdminOp;
use hermes_core::{ErrorCode, SessionId};
use hermes_http::ApiError;
use hermes_store::admin::Change;
use hermes_wire::admin::{Agent, Transcript};
use hermes_wire::{List, Slice};

use crate::admin::errors::{path_id, store_error, store_error_for, value_conflict};
use crate::admin::tenant_call::{AgentCall, Body, TenantCall};
use crate::documented::{AgentPath, ObjectPath, TenantNotFound, TenantPath};

type Result<T, E = ApiError> = std::result::Result<T, E>;

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/agents", tag = "admin: agents", params(TenantPath),
    responses((status = 200, description = "The tenant's agents (provider keys are never shown)", body = List<Agent>),
        TenantNotFound))]
pub(crate) async fn agents(call: TenantCall) -> Result<Json<List<Agent>>> {
    call.list_shown(AdminOp::ViewAgents, async |store, t| store.list_agents(t).await, crate::admin::shown::agent).await
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
    let found = call.state.store.find_sessions(t.id, &filter, limit + 1, offset).await.map_err(store_error)?;
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
    params(TenantPath, ("id" = String, Path, description = "Session id"), TranscriptPage),
    responses((status = 200, description = "The session and a page of its transcript", body = Transcript),
        (status = 404, description = "No such session", body = hermes_wire::ErrorBody)))]
pub(crate) async fn transcript(
    call: TenantCall,
    Path(ObjectPath { id }): Path<ObjectPath>,
    Query(page): Query<TranscriptPage>,
) -> Result<Json<Transcript>> {
    let t = call.allow(AdminOp::ViewSessions).await?;
    let id: SessionId = path_id(&id, ErrorCode::SessionNotFound, "session")?;
    let info = call.state.store.session_info(t.id, None, id).await;
    let info = info.map_err(|e| store_error_for(e, ErrorCode::SessionNotFound, "session"))?;
    let limit = page.limit.unwrap_or(200).clamp(1, 500);
    let found = call.state.store.messages_after(t.id, id, page.after.unwrap_or(0), Some(limit + 1)).await;
    let found = found.map_err(store_error)?;
    let has_more = found.len() as i64 > limit;
    let messages = found.into_iter().take(limit as usize).map(crate::shown::numbered).collect();
    Ok(Json(Transcript { session: info, messages, has_more }))
}

#[utoipa::path(delete, path = "/admin/v1/tenants/{tenant}/sessions/{id}", tag = "admin: sessions",
    params(TenantPath, ("id" = String, Path, description = "Session id")),
    responses((status = 204, description = "Deleted with its transcript"),
        (status = 403, description = "The caller's role may not delete sessions", body = hermes_wire::ErrorBody),
        (status = 404, description = "No such session", body = hermes_wire::ErrorBody),
        (status = 409, description = "A turn is running in it: stop it first", body = hermes_wire::ErrorBody)))]
pub(crate) async fn delete_session(call: TenantCall, Path(ObjectPath { id }): Path<ObjectPath>) -> Result<StatusCode> {
    let t = call.allow(AdminOp::ManageSessions).await?;
    let id: SessionId = path_id(&id, ErrorCode::SessionNotFound, "session")?;
    let info = call.state.store.session_info(t.id, None, id).await;
    let info = info.map_err(|e| store_error_for(e, ErrorCode::SessionNotFound, "session"))?;
    let mut tx = call.begin(t.id).await?;
    tx.delete_session(None, id).await.map_err(|e| store_error_for(e, ErrorCode::SessionNotFound, "session"))?;
    tx.commit(Change::new("session.deleted", "session", id).before(&info)).await.map_err(store_error)?;
    Ok(StatusCode::NO_CONTENT)
}

/// An agent to create.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewAgentBody {
    /// What API clients send as `model`.
    name: String,
    /// The provider's model id.
    model: String,
    /// The provider's OpenAI-compatible base URL, such as `https://api.openai.com/v1`.
    provider_base_url: String,
    /// Write-only: sealed at rest, never shown again.
    provider_key: Option<String>,
    soul: Option<String>,
    system_message: Option<String>,
    /// Toolset names (`GET /v1/toolsets`); default none.
    #[serde(default)]
    toolsets: Vec<String>,
    /// Whether its sandbox may reach the public internet.
    #[serde(default)]
    egress: bool,
}

#[utoipa::path(post, path = "/admin/v1/tenants/{tenant}/agents", tag = "admin: agents", request_body = NewAgentBody,
    params(TenantPath),
    responses((status = 201, description = "The agent (its key is never shown)", body = Agent),
        (status = 400, description = "A bad name, URL or toolset", body = hermes_wire::ErrorBody),
        (status = 403, description = "The caller's role may not create agents", body = hermes_wire::ErrorBody),
        (status = 409, description = "The tenant has an agent of that name", body = hermes_wire::ErrorBody)))]
pub(crate) async fn create_agent(call: TenantCall, body: Body<NewAgentBody>) -> Result<(StatusCode, Json<Agent>)> {
    let (t, body) = call.allow_with_body(AdminOp::EditAgents, body).await?;
    let bad =
        |param: &'static str, msg: String| ApiError::invalid_request(ErrorCode::InvalidValue, msg).with_param(param);
    let url =
        reqwest::Url::parse(body.provider_base_url.trim()).map_err(|_| bad("provider_base_url", "not a URL".into()))?;
    let policy = call.state.outbound_policy();
    if let Some(why) = policy.refuse(&url) {
        return Err(bad("provider_base_url", why));
    }
    let host = url.host_str().map(str::to_ascii_lowercase).unwrap_or_default();
    for toolset in &body.toolsets {
        toolset.parse::<hermes_core::ToolsetName>().map_err(|e| bad("toolsets", e.to_string()))?;
    }
    if body.provider_key.is_some() && call.state.secrets.is_none() {
        return Err(bad("provider_key", "storing provider keys needs secrets.master_key".into()));
    }
    let new = hermes_store::NewAgent {
        name: body.name.trim().to_owned(),
        model: body.model.trim().to_owned(),
        provider_base_url: url.as_str().trim_end_matches('/').to_owned(),
        provider_key: body.provider_key.filter(|k| !k.is_empty()),
        soul: body.soul.filter(|s| !s.trim().is_empty()),
        system_message: body.system_message.filter(|s| !s.trim().is_empty()),
        toolsets: body.toolsets,
        provider_key_hosts: vec![host],
        fallbacks: vec![],
        api_mode: None,
        auxiliary: None,
        context_window: None,
    };
    let mut tx = call.begin(t.id).await?;
    let mut agent = tx
        .create_agent(new, call.state.secrets.as_ref())
        .await
        .map_err(|e| value_conflict(e, |what| format!("{what} already exists")))?;
    if body.egress {
        tx.set_egress(agent.id, true).await.map_err(store_error)?;
        agent.egress = true;
    }
    tx.commit(Change::new("agent.created", "agent", agent.id).after(&agent)).await.map_err(store_error)?;
    Ok((StatusCode::CREATED, Json(crate::admin::shown::agent(agent))))
}

/// Changes to an agent (absent: unchanged; an empty `soul` or `system_message` clears it).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AgentEdit {
    model: Option<String>,
    soul: Option<String>,
    system_message: Option<String>,
    toolsets: Option<Vec<String>>,
    /// Models to fall back to, in order: `{"model": ..., "base_url": ...}`.
    #[schema(value_type = Option<Vec<Object>>)]
    fallbacks: Option<Vec<hermes_store::FallbackModel>>,
    egress: Option<bool>,
    /// `manual`, `smart` or `off`.
    approval_mode: Option<String>,
    /// How the model is shown the images people send: `auto`, `native` or `text`.
    image_input_mode: Option<String>,
    /// The model that describes images (`{"model": ..., "base_url": ...}`); `null` removes it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Object>, nullable)]
    vision_model: Option<Option<hermes_store::FallbackModel>>,
}

/// A field that is present (even as `null`) is `Some`, so `null` can clear what absence keeps.
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> std::result::Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

#[utoipa::path(patch, path = "/admin/v1/tenants/{tenant}/agents/{agent}", tag = "admin: agents", request_body = AgentEdit,
    params(TenantPath, AgentPath),
    responses((status = 200, description = "The agent as it now is; new sessions use it", body = Agent),
        (status = 400, description = "An unknown toolset, approval mode or image input mode, or a fallback or vision model URL the outbound policy refuses", body = hermes_wire::ErrorBody),
        (status = 403, description = "The caller's role may not edit agents", body = hermes_wire::ErrorBody),
        (status = 404, description = "No such agent", body = hermes_wire::ErrorBody)))]
pub(crate) async fn edit_agent(call: AgentCall, body: Body<AgentEdit>) -> Result<Json<Agent>> {
    let (t, before) = call.allow_agent(AdminOp::EditAgents).await?;
    let hermes_http::ApiJson(body) = body?;
    let bad =
        |param: &'static str, msg: String| ApiError::invalid_request(ErrorCode::InvalidValue, msg).with_param(param);
    for toolset in body.toolsets.iter().flatten() {
        toolset.parse::<hermes_core::ToolsetName>().map_err(|e| bad("toolsets", e.to_string()))?;
    }
    let policy = call.state.outbound_policy();
    let vision = body.vision_model.iter().flatten().map(|m| ("vision_model", m));
    for (param, model) in body.fallbacks.iter().flatten().map(|m| ("fallbacks", m)).chain(vision) {
        let url = reqwest::Url::parse(&model.base_url)
            .map_err(|_| bad(param, format!("{:?} is not a URL", model.base_url)))?;
        if let Some(why) = policy.refuse(&url) {
            return Err(bad(param, why));
        }
    }
    let images = body.image_input_mode.as_deref().map(|m| m.parse::<hermes_core::ImageInputMode>()).transpose();
    let images = images.map_err(|e| bad("image_input_mode", e.to_string()))?;
    let mode = body.approval_mode.as_deref().map(|m| m.parse::<hermes_core::ApprovalMode>()).transpose();
    let mode = mode.map_err(|e| bad("approval_mode", e.to_string()))?;
    let changes = hermes_store::AgentChanges {
        model: body.model.map(|m| m.trim().to_owned()).filter(|m| !m.is_empty()),
        soul: body.soul,
        system_message: body.system_message,
        toolsets: body.toolsets,
        fallbacks: body.fallbacks,
    };
    let mut tx = call.begin(t.id).await?;
    let mut after = tx.update_agent(before.id, &changes).await.map_err(store_error)?;
    if let Some(egress) = body.egress {
        tx.set_egress(before.id, egress).await.map_err(store_error)?;
        after.egress = egress;
    }
    if let Some(mode) = mode {
        tx.set_approval_mode(before.id, mode).await.map_err(store_error)?;
        after.approval_mode = mode;
    }
    if images.is_some() || body.vision_model.is_some() {
        let model = body.vision_model.as_ref().map(Option::as_ref);
        tx.set_vision(before.id, images, model).await.map_err(store_error)?;
        after.image_input_mode = images.unwrap_or(after.image_input_mode);
        if let Some(model) = body.vision_model {
            after.vision_model = model;
        }
    }
    let change = Change::new("agent.updated", "agent", before.id).before(&before).after(&after);
    tx.commit(change).await.map_err(store_error)?;
    Ok(Json(crate::admin::shown::agent(after)))
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/sessions/{id}/export", tag = "admin: sessions",
    params(TenantPath, ("id" = String, Path, description = "Session id")),
    responses((status = 200, description = "The whole conversation and its lineage as one JSON file", body = Object),
        (status = 404, description = "No such session", body = hermes_wire::ErrorBody)))]
pub(crate) async fn export(
    call: TenantCall,
    Path(ObjectPath { id }): Path<ObjectPath>,
) -> Result<axum::response::Response> {
    use axum::response::IntoResponse;
    let t = call.allow(AdminOp::ViewSessions).await?;
    let id: SessionId = path_id(&id, ErrorCode::SessionNotFound, "session")?;
    let exported = call.state.store.export_session(t.id, id).await;
    let exported = exported.map_err(|e| store_error_for(e, ErrorCode::SessionNotFound, "session"))?;
    let disposition = format!("attachment; filename=\"session-{id}.json\"");
    Ok(([(axum::http::header::CONTENT_DISPOSITION, disposition)], Json(exported)).into_response())
}
