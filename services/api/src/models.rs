//! `GET /v1/models`: the tenant's agents, as models.

use axum::Json;
use axum::extract::State;

use hermes_http::ApiError;
use hermes_wire::List;
use hermes_wire::v1::{Model, ModelExtras};

use crate::auth::Caller;
use crate::documented::{BadRequest, NoApiKey};
use crate::state::AppState;

#[utoipa::path(get, path = "/v1/models", tag = "openai",
    responses((status = 200, description = "The tenant's agents, as models", body = List<Model>), BadRequest, NoApiKey))]
pub(crate) async fn list_models(
    State(state): State<AppState>,
    Caller(auth): Caller,
) -> Result<Json<List<Model>>, ApiError> {
    let agents = state.store.agents().list_agents(auth.tenant_id).await.map_err(ApiError::internal)?;
    let data = agents
        .into_iter()
        .filter(|a| auth.agent_id.is_none_or(|only| only == a.id))
        .map(|a| Model {
            object: "model".into(),
            created: a.created_at.timestamp(),
            owned_by: "hermes".into(),
            hermes: ModelExtras { agent_id: a.id, model: a.shown.model },
            id: a.shown.name,
        })
        .collect();
    Ok(Json(List::of(data)))
}
