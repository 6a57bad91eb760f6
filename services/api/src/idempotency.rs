//! `Idempotency-Key` on `POST /v1/chat/completions` and `POST /v1/responses`: a client that retries a request (a
//! timeout, a dropped connection) with the same key gets the same turn's answer instead of
//! starting the work again, on whichever API pod the retry lands. Keys are per API key and
//! last a day. Reusing a key for a different request is refused with 422, as the IETF
//! Idempotency-Key draft says.

use axum::http::{HeaderMap, StatusCode};
use sha2::{Digest, Sha256};

use hermes_http::{ApiError, ErrorCode};
use hermes_store::{Idempotency, KeyAuth};

pub(crate) const IDEMPOTENCY_HEADER: &str = "idempotency-key";
const MAX_KEY_CHARS: usize = 255;

/// The request's key, if it sent one, with the request's fingerprint.
pub(crate) fn idempotency(
    headers: &HeaderMap,
    auth: &KeyAuth,
    body: &impl serde::Serialize,
    session: Option<&str>,
) -> Result<Option<Idempotency>, ApiError> {
    let Some(raw) = headers.get(IDEMPOTENCY_HEADER) else { return Ok(None) };
    let key = raw
        .to_str()
        .ok()
        .map(str::trim)
        .filter(|k| !k.is_empty() && k.len() <= MAX_KEY_CHARS && k.bytes().all(|b| b.is_ascii_graphic()));
    let Some(key) = key else {
        return Err(ApiError::invalid_request(
            ErrorCode::InvalidIdempotencyKey,
            "Idempotency-Key must be 1 to 255 visible ASCII characters",
        ));
    };
    // The fields that decide what the turn does, in a stable order (map keys are sorted).
    let canonical = serde_json::json!({ "request": body, "session": session });
    let digest = Sha256::digest(canonical.to_string().as_bytes());
    let fingerprint = digest.iter().map(|b| format!("{b:02x}")).collect();
    Ok(Some(Idempotency { api_key: auth.key_id, key: key.to_owned(), fingerprint }))
}

/// A key reused for another request.
pub(crate) fn reused() -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_request_error",
        Some(ErrorCode::IdempotencyKeyReused),
        "this Idempotency-Key was already used for a different request; use a new key",
    )
}
