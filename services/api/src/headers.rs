//! The Hermes request and response headers: which session a request continues, and who its
//! end user is.

use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;

use hermes_core::SessionId;
use hermes_http::{ApiError, ErrorCode};
use hermes_store::KeyAuth;

pub(crate) const SESSION_HEADER: &str = "x-hermes-session-id";
/// Names the end user behind an API key (a chat channel, a person in the caller's product),
/// so each gets their own USER memory profile; without it the API key is the user.
pub(crate) const SESSION_KEY_HEADER: &str = "x-hermes-session-key";
const MAX_SESSION_KEY_CHARS: usize = 256;

/// The session `X-Hermes-Session-Id` names, if the request has one.
pub(crate) fn session_header(headers: &HeaderMap) -> Result<Option<SessionId>, ApiError> {
    let Some(raw) = headers.get(SESSION_HEADER) else {
        return Ok(None);
    };
    let text = raw
        .to_str()
        .map_err(|_| ApiError::invalid_request(ErrorCode::InvalidSessionId, "X-Hermes-Session-Id is not valid text"))?;
    // Ids are UUIDs; anything else cannot name a session of this tenant.
    text.trim()
        .parse::<SessionId>()
        .map(Some)
        .map_err(|_| ApiError::not_found(ErrorCode::SessionNotFound, "no such session"))
}

/// `X-Hermes-Session-Id` as sent (trimmed), for fingerprinting a request.
pub(crate) fn session_text(headers: &HeaderMap) -> Option<&str> {
    headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::trim)
}

/// Who the end user of a new session is (see [`SESSION_KEY_HEADER`]).
pub(crate) fn user_key(headers: &HeaderMap, auth: &KeyAuth) -> Result<String, ApiError> {
    let Some(raw) = headers.get(SESSION_KEY_HEADER) else {
        return Ok(format!("api-key:{}", auth.key_id));
    };
    let invalid = || {
        ApiError::invalid_request(
            ErrorCode::InvalidSessionKey,
            "X-Hermes-Session-Key must be 1 to 256 characters of text without control characters",
        )
    };
    let text = raw.to_str().map_err(|_| invalid())?.trim();
    if text.is_empty() || text.chars().count() > MAX_SESSION_KEY_CHARS || text.chars().any(char::is_control) {
        return Err(invalid());
    }
    Ok(format!("session-key:{text}"))
}

/// Names the session on an answer that does not name one already (compaction may have moved
/// the conversation to a new session, and then the answer names that one).
pub(crate) fn with_session(mut resp: Response, session: SessionId) -> Response {
    if let Ok(v) = HeaderValue::from_str(&session.to_string()) {
        resp.headers_mut().entry(SESSION_HEADER).or_insert(v);
    }
    resp
}
