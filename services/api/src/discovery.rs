//! Discovery, as upstream's API server offers it: `GET /v1/capabilities` (what this server
//! does), `GET /v1/toolsets` (toolsets with their tools and whether the agent has them) and
//! `GET /v1/skills` (the skills an agent sees).

use axum::Json;
use axum::extract::{Query, State};
use serde::Deserialize;
use serde_json::{Value, json};

use hermes_core::toolsets::TOOLSETS;
use hermes_http::ApiError;
use hermes_store::{Agent, VisibleSkill};

use crate::agents::resolve_agent;
use crate::auth::Caller;
use crate::state::AppState;

#[utoipa::path(get, path = "/v1/capabilities", tag = "hermes",
    responses((status = 200, description = "What this server supports", body = crate::schemas::Capabilities), (status = 400, description = "Invalid request", body = hermes_wire::ErrorBody), (status = 401, description = "Missing or invalid API key", body = hermes_wire::ErrorBody)))]
pub(crate) async fn capabilities(Caller(_): Caller) -> Json<Value> {
    Json(json!({
        "object": "hermes.api_server.capabilities",
        "platform": "hermes-cloud",
        "version": env!("CARGO_PKG_VERSION"),
        "auth": { "type": "bearer", "scope": "tenant", "agent_restricted_keys": true },
        "runtime": "server_agent",
        "features": {
            "chat_completions": true,
            "streaming": true,
            "sessions": true,
            "session_key_memory": true,
            "idempotency_key": true,
            "interactions": true,
            "rate_limits": true,
            "responses_api": true,
            "runs_api": true,
            "usage": true,
            "budgets": true,
            "files": true
        },
        "endpoints": {
            "chat_completions": "/v1/chat/completions",
            "responses": "/v1/responses",
            "runs": "/v1/runs",
            "usage": "/v1/usage",
            "files": "/v1/files/{id}",
            "openapi": "/openapi.json",
            "models": "/v1/models",
            "interactions": "/v1/interactions/{id}",
            "sessions": "/api/sessions",
            "skills": "/v1/skills",
            "toolsets": "/v1/toolsets"
        }
    }))
}

#[derive(Debug, Deserialize)]
pub(crate) struct ForAgent {
    model: Option<String>,
}

#[utoipa::path(get, path = "/v1/toolsets", tag = "hermes", params(("model" = Option<String>, Query, description = "The agent")),
    responses((status = 200, description = "Toolsets and whether the agent has them", body = crate::schemas::ObjectList), (status = 400, description = "Invalid request", body = hermes_wire::ErrorBody), (status = 401, description = "Missing or invalid API key", body = hermes_wire::ErrorBody), (status = 404, description = "Not found (or another tenant's)", body = hermes_wire::ErrorBody)))]
pub(crate) async fn toolsets(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Query(q): Query<ForAgent>,
) -> Result<Json<Value>, ApiError> {
    let agent = resolve_agent(&state, &auth, q.model.as_deref()).await?;
    let data: Vec<Value> = TOOLSETS
        .iter()
        .map(|t| {
            json!({
                "name": t.name(),
                "description": t.description,
                "tools": t.tools,
                "enabled": t.id.enabled_in(&agent.toolsets),
            })
        })
        .collect();
    Ok(Json(json!({"object": "list", "model": agent.name, "data": data})))
}

#[utoipa::path(get, path = "/v1/skills", tag = "hermes", params(("model" = Option<String>, Query, description = "The agent")),
    responses((status = 200, description = "The skills the agent sees", body = crate::schemas::ObjectList), (status = 400, description = "Invalid request", body = hermes_wire::ErrorBody), (status = 401, description = "Missing or invalid API key", body = hermes_wire::ErrorBody), (status = 404, description = "Not found (or another tenant's)", body = hermes_wire::ErrorBody)))]
pub(crate) async fn skills(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Query(q): Query<ForAgent>,
) -> Result<Json<Value>, ApiError> {
    let agent = resolve_agent(&state, &auth, q.model.as_deref()).await?;
    let visible = state.store.visible_skills(auth.tenant_id, agent.id).await.map_err(ApiError::internal)?;
    Ok(Json(json!({"object": "list", "model": agent.name, "data": shown_skills(&agent, &visible)})))
}

/// The skills the agent's toolsets and settings show, as listed (archived ones are not).
fn shown_skills(agent: &Agent, visible: &[VisibleSkill]) -> Vec<Value> {
    let tools: Vec<&str> =
        TOOLSETS.iter().filter(|t| t.id.enabled_in(&agent.toolsets)).flat_map(|t| t.tools.iter().copied()).collect();
    let rules =
        hermes_skills::Visibility { toolsets: &agent.toolsets, tools: &tools, disabled: &agent.disabled_skills };
    visible
        .iter()
        .filter(|v| v.state != hermes_core::SkillState::Archived)
        .filter_map(|v| serde_json::from_value::<hermes_skills::Skill>(v.skill.meta.clone()).ok().map(|s| (v, s)))
        .filter(|(_, s)| rules.shows(s))
        .map(|(v, s)| {
            json!({
                "name": v.skill.name,
                "description": v.skill.description,
                "category": v.skill.category,
                "version": s.version,
                "tags": s.tags,
                "source": v.skill.scope,
                "state": v.state,
                "pinned": v.pinned,
                "view_count": v.view_count,
                "use_count": v.use_count,
                "last_used_at": v.last_used_at,
            })
        })
        .collect()
}
