//! Discovery, as upstream's API server offers it: `GET /v1/capabilities` (what this server
//! does), `GET /v1/toolsets` (toolsets with their tools and whether the agent has them) and
//! `GET /v1/skills` (the skills an agent sees).

use axum::Json;
use axum::extract::{FromRef, FromRequestParts, Query};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use hermes_core::toolsets::TOOLSETS;
use hermes_http::ApiError;
use hermes_store::{Agent, KeyAuth, VisibleSkill};
use hermes_wire::v1::{Capabilities, CapabilityAuth, ForModel, ListedSkill, Toolset};

use crate::agents::resolve_agent;
use crate::auth::Caller;
use crate::documented::{BadRequest, NoApiKey, NotFound};
use crate::state::AppState;
use crate::visible::part;

#[utoipa::path(get, path = "/v1/capabilities", tag = "hermes",
    responses((status = 200, description = "What this server supports", body = Capabilities), BadRequest, NoApiKey))]
pub(crate) async fn capabilities(Caller(_): Caller) -> Json<Capabilities> {
    let features = [
        "chat_completions",
        "streaming",
        "sessions",
        "session_key_memory",
        "idempotency_key",
        "interactions",
        "rate_limits",
        "responses_api",
        "runs_api",
        "usage",
        "budgets",
        "files",
    ];
    let endpoints = [
        ("chat_completions", "/v1/chat/completions"),
        ("responses", "/v1/responses"),
        ("runs", "/v1/runs"),
        ("usage", "/v1/usage"),
        ("files", "/v1/files/{id}"),
        ("openapi", "/openapi.json"),
        ("models", "/v1/models"),
        ("interactions", "/v1/interactions/{id}"),
        ("sessions", "/api/sessions"),
        ("skills", "/v1/skills"),
        ("toolsets", "/v1/toolsets"),
    ];
    Json(Capabilities {
        object: "hermes.api_server.capabilities".into(),
        platform: "hermes-cloud".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        auth: CapabilityAuth { r#type: "bearer".into(), scope: "tenant".into(), agent_restricted_keys: true },
        runtime: "server_agent".into(),
        features: features.into_iter().map(|f| (f.to_owned(), true)).collect(),
        endpoints: endpoints.into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect(),
    })
}

#[derive(Debug, Deserialize)]
pub(crate) struct ForAgent {
    model: Option<String>,
}

/// The caller and the agent the query's `model` names (the key's one agent when it names none).
pub(crate) struct QueriedAgent {
    state: AppState,
    auth: KeyAuth,
    agent: Agent,
}

impl<S: Send + Sync> FromRequestParts<S> for QueriedAgent
where
    AppState: FromRef<S>,
{
    /// 401 without a key, then a bad query's answer, then the model's 400 or 404.
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Caller(auth) = part(parts, state).await?;
        let Query(q) = part::<Query<ForAgent>, _>(parts, state).await?;
        let state = AppState::from_ref(state);
        let agent = resolve_agent(&state, &auth, q.model.as_deref()).await.map_err(IntoResponse::into_response)?;
        Ok(Self { state, auth, agent })
    }
}

#[utoipa::path(get, path = "/v1/toolsets", tag = "hermes", params(("model" = Option<String>, Query, description = "The agent")),
    responses((status = 200, description = "Toolsets and whether the agent has them", body = ForModel<Toolset>), BadRequest, NoApiKey, NotFound))]
pub(crate) async fn toolsets(QueriedAgent { agent, .. }: QueriedAgent) -> Json<ForModel<Toolset>> {
    let data = TOOLSETS
        .iter()
        .map(|t| Toolset {
            name: t.name().to_owned(),
            description: t.description.to_owned(),
            tools: t.tools.iter().map(|&tool| tool.to_owned()).collect(),
            enabled: t.id.enabled_in(&agent.toolsets),
        })
        .collect();
    Json(ForModel::of(agent.shown.name, data))
}

#[utoipa::path(get, path = "/v1/skills", tag = "hermes", params(("model" = Option<String>, Query, description = "The agent")),
    responses((status = 200, description = "The skills the agent sees", body = ForModel<ListedSkill>), BadRequest, NoApiKey, NotFound))]
pub(crate) async fn skills(
    QueriedAgent { state, auth, agent }: QueriedAgent,
) -> Result<Json<ForModel<ListedSkill>>, ApiError> {
    let visible = state.store.agents().visible_skills(auth.tenant_id, agent.id).await.map_err(ApiError::internal)?;
    let data = shown_skills(&agent, &visible);
    Ok(Json(ForModel::of(agent.shown.name, data)))
}

/// The skills the agent's toolsets and settings show, as listed (archived ones are not).
fn shown_skills(agent: &Agent, visible: &[VisibleSkill]) -> Vec<ListedSkill> {
    let tools: Vec<&str> =
        TOOLSETS.iter().filter(|t| t.id.enabled_in(&agent.toolsets)).flat_map(|t| t.tools.iter().copied()).collect();
    let rules =
        hermes_skills::Visibility { toolsets: &agent.toolsets, tools: &tools, disabled: &agent.disabled_skills };
    visible
        .iter()
        .filter(|v| v.state != hermes_core::SkillState::Archived)
        .filter_map(|v| serde_json::from_value::<hermes_skills::Skill>(v.skill.meta.clone()).ok().map(|s| (v, s)))
        .filter(|(_, s)| rules.shows(s))
        .map(|(v, s)| ListedSkill {
            name: v.skill.name.clone(),
            description: v.skill.description.clone(),
            category: v.skill.category.clone(),
            version: s.version,
            tags: s.tags,
            source: scope_name(v.skill.scope).to_owned(),
            state: v.state,
            pinned: v.pinned,
            view_count: v.view_count,
            use_count: v.use_count,
            last_used_at: v.last_used_at,
        })
        .collect()
}

/// A skill's scope as the API names it.
pub(crate) fn scope_name(scope: hermes_store::SkillScope) -> &'static str {
    match scope {
        hermes_store::SkillScope::Bundled => "bundled",
        hermes_store::SkillScope::Tenant => "tenant",
        hermes_store::SkillScope::Agent => "agent",
    }
}
