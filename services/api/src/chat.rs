//! `POST /v1/chat/completions`.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use hermes_core::SessionId;
use hermes_http::ApiError;
use hermes_queue::SessionWork;
use hermes_store::{Agent, Enqueued, KeyAuth, NewTurn, StoreError, TurnTarget};

use crate::AppState;
use crate::auth::Caller;
use crate::chat_wire::{ChatCompletionRequest, ParsedChat};
use crate::completion::{Completion, DisconnectGuard};
use crate::wait::Waiter;

pub(crate) const SESSION_HEADER: &str = "x-hermes-session-id";
/// Names the end user behind an API key (a chat channel, a person in the caller's product),
/// so each gets their own USER memory profile; without it the API key is the user.
pub(crate) const SESSION_KEY_HEADER: &str = "x-hermes-session-key";
const MAX_SESSION_KEY_CHARS: usize = 256;

/// Tells the workers a session has work. The turn is stored already: if the broker is slow
/// or down, the reaper republishes it and the request still completes.
pub(crate) async fn signal_work(state: &AppState, work: SessionWork) {
    match tokio::time::timeout(Duration::from_secs(5), state.broker.publish_work(&work)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "cannot publish work; the reaper will pick the turn up"),
        Err(_) => tracing::warn!("publishing work timed out; the reaper will pick the turn up"),
    }
}

/// The answer to a request that follows `turn` (its events subscribed as `sub`).
pub(crate) fn completion(
    state: &AppState,
    tenant: hermes_core::TenantId,
    turn: hermes_core::TurnId,
    sub: hermes_queue::EventSubscription,
    model: String,
) -> Completion {
    let api = &state.config.api;
    let recheck = Duration::from_secs(api.recheck_seconds.max(1));
    Completion {
        waiter: Waiter::new(sub, state.store.clone(), tenant, turn, recheck),
        turn,
        model,
        timeout: Duration::from_secs(api.turn_timeout_seconds),
        keepalive: Duration::from_secs(api.keepalive_seconds.max(1)),
        guard: DisconnectGuard {
            store: state.store.clone(),
            cancels: state.cancels.clone(),
            tenant,
            turn,
            armed: api.on_disconnect == hermes_config::OnDisconnect::Interrupt,
        },
        permit: None,
    }
}

/// Maps axum's JSON rejections to OpenAI-style errors (413 for oversized bodies).
pub(crate) fn json_error(rejection: JsonRejection, limit: usize) -> ApiError {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return ApiError::body_too_large(limit);
    }
    match rejection {
        JsonRejection::MissingJsonContentType(_) => ApiError::invalid_request(
            "invalid_content_type",
            "send the body as JSON with Content-Type: application/json",
        ),
        other => {
            ApiError::invalid_request("invalid_json", format!("request body is not valid JSON: {}", other.body_text()))
        }
    }
}

pub(crate) async fn resolve_agent(state: &AppState, auth: &KeyAuth, model: Option<&str>) -> Result<Agent, ApiError> {
    let not_found = |name: &str| {
        ApiError::not_found(
            "model_not_found",
            format!("The model `{name}` does not exist or you do not have access to it."),
        )
        .with_param("model")
    };
    let agent = match model {
        Some(name) => match state.store.agent_by_name(auth.tenant_id, name).await {
            Ok(a) => a,
            Err(StoreError::NotFound) => return Err(not_found(name)),
            Err(e) => return Err(ApiError::internal(e)),
        },
        None => {
            let agents = state.store.list_agents(auth.tenant_id).await.map_err(ApiError::internal)?;
            let usable: Vec<Agent> =
                agents.into_iter().filter(|a| auth.agent_id.is_none_or(|only| only == a.id)).collect();
            match <[Agent; 1]>::try_from(usable) {
                Ok([only]) => only,
                Err(_) => {
                    return Err(ApiError::invalid_request(
                        "missing_required_parameter",
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

fn session_header(headers: &HeaderMap) -> Result<Option<SessionId>, ApiError> {
    let Some(raw) = headers.get(SESSION_HEADER) else {
        return Ok(None);
    };
    let text = raw
        .to_str()
        .map_err(|_| ApiError::invalid_request("invalid_session_id", "X-Hermes-Session-Id is not valid text"))?;
    // Ids are UUIDs; anything else cannot name a session of this tenant.
    text.trim().parse::<SessionId>().map(Some).map_err(|_| ApiError::not_found("session_not_found", "no such session"))
}

/// Who the end user of a new session is (see [`SESSION_KEY_HEADER`]).
pub(crate) fn user_key(headers: &HeaderMap, auth: &hermes_store::KeyAuth) -> Result<String, ApiError> {
    let Some(raw) = headers.get(SESSION_KEY_HEADER) else {
        return Ok(format!("api-key:{}", auth.key_id));
    };
    let invalid = || {
        ApiError::invalid_request(
            "invalid_session_key",
            "X-Hermes-Session-Key must be 1 to 256 characters of text without control characters",
        )
    };
    let text = raw.to_str().map_err(|_| invalid())?.trim();
    if text.is_empty() || text.chars().count() > MAX_SESSION_KEY_CHARS || text.chars().any(char::is_control) {
        return Err(invalid());
    }
    Ok(format!("session-key:{text}"))
}

/// The session of a request without `X-Hermes-Session-Id`, as upstream derives it: from the
/// conversation's start (system text and first user message), so clients that resend the
/// whole history each time (Open WebUI, LibreChat) stay in one session. Tenant, agent and end
/// user are part of it, so nobody else's conversation is ever continued.
fn derived_session_id(auth: &KeyAuth, agent: hermes_core::AgentId, user: &str, parsed: &ParsedChat) -> SessionId {
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

/// Stores a turn (once per `Idempotency-Key`, if the request has one): its session, the turn,
/// and whether it is an earlier request's turn.
pub(crate) async fn enqueue(
    state: &AppState,
    auth: &KeyAuth,
    new: NewTurn,
    idempotency: Option<&hermes_store::Idempotency>,
) -> Result<(SessionId, hermes_core::TurnId, bool), ApiError> {
    let enqueued = match idempotency {
        Some(idem) => state.store.enqueue_turn_once(auth.tenant_id, new, idem).await,
        None => {
            state.store.enqueue_turn(auth.tenant_id, new).await.map(|(session, turn)| Enqueued::New { session, turn })
        }
    };
    match enqueued {
        Ok(Enqueued::New { session, turn }) => Ok((session, turn, false)),
        Ok(Enqueued::Replay { session, turn }) => Ok((session, turn, true)),
        Err(StoreError::NotFound) => Err(ApiError::not_found("session_not_found", "no such session for this model")),
        Err(StoreError::Invalid(_)) if idempotency.is_some() => Err(crate::idempotency::reused()),
        Err(e) => Err(ApiError::internal(e)),
    }
}

#[utoipa::path(post, path = "/v1/chat/completions", tag = "openai",
    request_body = crate::openapi::ChatCompletionRequest,
    params(("X-Hermes-Session-Id" = Option<String>, Header, description = "Continue this session"),
           ("X-Hermes-Session-Key" = Option<String>, Header, description = "The end user (long-term memory scope)"),
           ("Idempotency-Key" = Option<String>, Header, description = "Retries with the same key share one turn")),
    responses((status = 200, description = "A chat.completion, or an SSE stream of chunks with stream: true", body = crate::openapi::ChatCompletion),
              (status = 400, description = "Invalid request", body = crate::openapi::ErrorBody), (status = 401, description = "Missing or invalid API key", body = crate::openapi::ErrorBody), (status = 404, description = "Not found (or another tenant's)", body = crate::openapi::ErrorBody), (status = 402, description = "A spending cap is reached", body = crate::openapi::ErrorBody), (status = 429, description = "Rate limit reached", body = crate::openapi::ErrorBody),
              (status = 502, description = "The agent produced nothing", body = crate::openapi::ErrorBody)))]
pub(crate) async fn chat_completions(
    State(state): State<AppState>,
    Caller(auth): Caller,
    headers: HeaderMap,
    body: Result<Json<ChatCompletionRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(body) = body.map_err(|r| json_error(r, state.config.http.max_body_bytes))?;
    let session_text = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::trim);
    let idempotency = crate::idempotency::idempotency(&headers, &auth, &body, session_text)?;
    let parsed: ParsedChat = body.parse()?;
    let agent = resolve_agent(&state, &auth, parsed.model.as_deref()).await?;
    let permit = crate::limits::start_turn(&state, &auth).await?;
    let target = match session_header(&headers)? {
        Some(id) => TurnTarget::Existing(id),
        None => {
            let user = user_key(&headers, &auth)?;
            let id = derived_session_id(&auth, agent.id, &user, &parsed);
            TurnTarget::Derived { id, source: "api".into(), user_key: user, history: parsed.history }
        }
    };
    let new = NewTurn {
        agent_id: agent.id,
        target,
        input: parsed.input,
        instructions: parsed.instructions,
        stream: parsed.stream,
        notify_hub: Some(state.events.id().to_owned()),
        api_key: Some(auth.key_id),
        response: None,
        reply_to: None,
    };
    let (session_id, turn_id, replay) = enqueue(&state, &auth, new, idempotency.as_ref()).await?;
    let span = tracing::Span::current();
    span.record("session.id", tracing::field::display(session_id));
    span.record("turn.id", tracing::field::display(turn_id));
    // Subscribe before signalling, so no event can be missed.
    let sub = state.events.subscribe(turn_id);
    // The turn is stored: if the broker is slow or down, the reaper republishes it and the
    // request still completes.
    signal_work(&state, SessionWork { tenant_id: auth.tenant_id, session_id }).await;
    metrics::counter!("hermes_api_turns_total", "stream" => parsed.stream.to_string()).increment(1);
    let mut completion = completion(&state, auth.tenant_id, turn_id, sub, agent.name);
    completion.permit = Some(permit);
    if replay {
        // The first request's turn: it may be over, and its events go to the pod that took it.
        metrics::counter!("hermes_api_idempotent_replays_total").increment(1);
        completion.waiter = completion.waiter.checking_first();
    }
    let mut resp = if parsed.stream {
        completion.stream(parsed.include_usage).into_response()
    } else {
        completion.collect().await?
    };
    if !resp.headers().contains_key(SESSION_HEADER)
        && let Ok(v) = HeaderValue::from_str(&session_id.to_string())
    {
        resp.headers_mut().insert(SESSION_HEADER, v);
    }
    Ok(resp)
}
