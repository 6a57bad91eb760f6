//! `GET /v1/models`: the tenant's agents, as models.

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use hermes_http::ApiError;

use crate::auth::Caller;
use crate::state::AppState;

#[utoipa::path(get, path = "/v1/models", tag = "openai",
    responses((status = 200, description = "The tenant's agents, as models", body = crate::schemas::ModelList), (status = 400, description = "Invalid request", body = hermes_wire::ErrorBody), (status = 401, description = "Missing or invalid API key", body = hermes_wire::ErrorBody)))]
pub(crate) async fn list_models(State(state): State<AppState>, Caller(auth): Caller) -> Result<Json<Value>, ApiError> {
    let agents = state.store.list_agents(auth.tenant_id).await.map_err(ApiError::internal)?;
    let data: Vec<Value> = agents
        .iter()
        .filter(|a| auth.agent_id.is_none_or(|only| only == a.id))
        .map(|a| {
            json!({
                "id": a.name,
                "object": "model",
                "created": a.created_at.timestamp(),
                "owned_by": "hermes",
                "hermes": { "agent_id": a.id, "model": a.model }
            })
        })
        .collect();
    Ok(Json(json!({ "object": "list", "data": data })))
}
