//! Where a new turn runs: the session a request names or continues, a new one, or (for chat
//! completions without a session header) the one its conversation's start derives.

use axum::http::HeaderMap;

use hermes_core::{AgentId, SessionId, TurnId};
use hermes_http::{ApiError, ErrorCode};
use hermes_store::{Agent, KeyAuth, TurnTarget};

use crate::agents::resolve_agent;
use crate::errors::{missing_or_internal, of_callers_agent};
use crate::headers::{session_header, user_key};
use crate::responses_wire::{Continues, ParsedResponses, response_id};
use crate::state::AppState;
use hermes_http::chat_request::ParsedChat;

/// The turn of a chat completion: the session `X-Hermes-Session-Id` names, else the derived
/// one (seeded with the request's earlier messages when it is new).
pub(crate) fn chat_target(
    headers: &HeaderMap,
    auth: &KeyAuth,
    agent: AgentId,
    parsed: &mut ParsedChat,
) -> Result<TurnTarget, ApiError> {
    if let Some(id) = session_header(headers)? {
        return Ok(TurnTarget::Existing(id));
    }
    let user = user_key(headers, auth)?;
    let id = derived_session_id(auth, agent, &user, parsed);
    Ok(TurnTarget::Derived {
        id,
        source: hermes_core::SessionSource::Api,
        user_key: user,
        history: std::mem::take(&mut parsed.history),
    })
}

/// The session of a request without `X-Hermes-Session-Id`, as upstream derives it: from the
/// conversation's start (system text and first user message), so clients that resend the
/// whole history each time (Open WebUI, LibreChat) stay in one session. Tenant, agent and end
/// user are part of it, so nobody else's conversation is ever continued.
fn derived_session_id(auth: &KeyAuth, agent: AgentId, user: &str, parsed: &ParsedChat) -> SessionId {
    use sha2::{Digest, Sha256};
    let first = parsed.history.iter().find(|m| m.role == hermes_core::Role::User).unwrap_or(&parsed.input);
    let mut hasher = Sha256::new();
    for part in [
        "hermes-derived-session",
        &auth.tenant_id.to_string(),
        &agent.to_string(),
        user,
        parsed.instructions.as_deref().unwrap_or_default(),
        &first.text(),
    ] {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    let digest = hasher.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    // A version 8 (custom) UUID, so it never collides with generated v7 ids.
    bytes[6] = (bytes[6] & 0x0f) | 0x80;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    SessionId::from_uuid(uuid::Uuid::from_bytes(bytes))
}

fn response_not_found(id: TurnId) -> ApiError {
    ApiError::not_found(ErrorCode::ResponseNotFound, format!("Response not found: {}", response_id(id)))
}

/// Where a new response's turn runs, the response it continues, and (carried forward along a
/// chain) its instructions.
pub(crate) async fn response_target(
    state: &AppState,
    auth: &KeyAuth,
    headers: &HeaderMap,
    parsed: &mut ParsedResponses,
) -> Result<(Agent, TurnTarget, Option<TurnId>), ApiError> {
    let previous = match &parsed.continues {
        _ if parsed.explicit_history => None,
        Continues::Nothing => None,
        Continues::Response(id) => Some(*id),
        Continues::Conversation(name) => {
            state.store.turns().conversation_head(auth.tenant_id, name).await.map_err(ApiError::internal)?
        }
    };
    let Some(previous) = previous else {
        let agent = resolve_agent(state, auth, parsed.model.as_deref()).await?;
        let user = user_key(headers, auth)?;
        let history = std::mem::take(&mut parsed.history);
        return Ok((agent, TurnTarget::New { source: hermes_core::SessionSource::Api, user_key: user, history }, None));
    };
    if !parsed.history.is_empty() {
        return Err(ApiError::invalid_request(
            ErrorCode::InvalidInput,
            "a response that continues another takes only new user input; earlier messages are on the server",
        )
        .with_param("input"));
    }
    let lost = || match &parsed.continues {
        Continues::Response(id) => response_not_found(*id).with_param("previous_response_id"),
        _ => response_not_found(previous).with_param("conversation"),
    };
    let chain = state.store.turns().response_chain(auth.tenant_id, previous).await;
    let chain = of_callers_agent(chain, auth, |c| c.agent_id, lost)?;
    let agent = state.store.agents().agent(auth.tenant_id, chain.agent_id).await.map_err(ApiError::internal)?;
    if parsed.model.as_deref().is_some_and(|m| m != agent.name) {
        return Err(ApiError::invalid_request(
            ErrorCode::ModelMismatch,
            format!("the previous response belongs to model `{}`; send that model or none", agent.name),
        )
        .with_param("model"));
    }
    if parsed.instructions.is_none() {
        // Instructions carry forward along a chain, as upstream.
        parsed.instructions = chain.instructions;
    }
    let session = match chain.fork_up_to {
        // Continuing an earlier response than the latest branches the conversation there.
        Some(seq) => state
            .store
            .conversations()
            .fork_session(auth.tenant_id, chain.session_id, Some(seq), None)
            .await
            .map_err(ApiError::internal)?,
        None => chain.session_id,
    };
    Ok((agent, TurnTarget::Existing(session), Some(previous)))
}

/// Where a run's turn runs: the session it names (`session_id`), else as a response's would.
pub(crate) async fn run_target(
    state: &AppState,
    auth: &KeyAuth,
    headers: &HeaderMap,
    session_id: Option<&str>,
    parsed: &mut ParsedResponses,
) -> Result<(Agent, TurnTarget), ApiError> {
    let Some(id) = session_id.filter(|s| !s.trim().is_empty()) else {
        let (agent, target, _) = response_target(state, auth, headers, parsed).await?;
        return Ok((agent, target));
    };
    let missing = || ApiError::not_found(ErrorCode::SessionNotFound, "no such session").with_param("session_id");
    let session: SessionId = id.trim().parse().map_err(|_| missing())?;
    let info = state
        .store
        .conversations()
        .session_info(auth.tenant_id, auth.agent_id, session)
        .await
        .map_err(|e| missing_or_internal(e, missing))?;
    if parsed.model.as_deref().is_some_and(|m| m != info.model) {
        return Err(ApiError::invalid_request(ErrorCode::ModelMismatch, "the session belongs to another model")
            .with_param("model"));
    }
    let agent = state.store.agents().agent(auth.tenant_id, info.agent_id).await.map_err(ApiError::internal)?;
    Ok((agent, TurnTarget::Existing(session)))
}
