//! Which agent a request means: the `model` it names, or the only agent its key may use.

use hermes_http::{ApiError, ErrorCode};
use hermes_store::{Agent, KeyAuth};

use crate::errors::missing_or_internal;
use crate::state::AppState;

/// The agent `model` names (or the caller's only one), if the caller's key may use it.
pub(crate) async fn resolve_agent(state: &AppState, auth: &KeyAuth, model: Option<&str>) -> Result<Agent, ApiError> {
    let not_found = |name: &str| {
        ApiError::not_found(
            ErrorCode::ModelNotFound,
            format!("The model `{name}` does not exist or you do not have access to it."),
        )
        .with_param("model")
    };
    let agent = match model {
        Some(name) => state
            .store
            .agents()
            .agent_by_name(auth.tenant_id, name)
            .await
            .map_err(|e| missing_or_internal(e, || not_found(name)))?,
        None => {
            let agents = state.store.agents().list_agents(auth.tenant_id).await.map_err(ApiError::internal)?;
            let usable: Vec<Agent> =
                agents.into_iter().filter(|a| auth.agent_id.is_none_or(|only| only == a.id)).collect();
            match <[Agent; 1]>::try_from(usable) {
                Ok([only]) => only,
                Err(_) => {
                    return Err(ApiError::invalid_request(
                        ErrorCode::MissingRequiredParameter,
                        "model is required: name one of your agents (GET /v1/models)",
                    )
                    .with_param("model"));
                }
            }
        }
    };
    if auth.agent_id.is_some_and(|only| only != agent.id) {
        return Err(not_found(&agent.name));
    }
    Ok(agent)
}
