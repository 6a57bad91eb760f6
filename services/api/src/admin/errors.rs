//! Storage failures as the admin API's errors (the OpenAI error shape the whole API uses).

use axum::http::StatusCode;

use hermes_core::ErrorCode;
use hermes_http::ApiError;
use hermes_store::StoreError;

/// An admin handler's result: its error is an [`ApiError`] unless it says otherwise.
pub(crate) type Result<T, E = ApiError> = std::result::Result<T, E>;

/// A store error as a response: not found is 404, a refused change 409, bad input 400,
/// a dependency down 503, anything else 500 (logged).
pub(crate) fn store_error(err: StoreError) -> ApiError {
    match err {
        StoreError::NotFound => ApiError::not_found(ErrorCode::NotFound, "not found"),
        StoreError::Invalid(msg) => ApiError::invalid_request(ErrorCode::InvalidValue, msg),
        StoreError::Conflict(what) => ApiError::new(
            StatusCode::CONFLICT,
            "invalid_request_error",
            Some(ErrorCode::MemberExists),
            format!("{what} already exists"),
        ),
        StoreError::Busy(msg) if msg == hermes_store::admin::members::LAST_OWNER => {
            ApiError::new(StatusCode::CONFLICT, "invalid_request_error", Some(ErrorCode::LastOwner), msg)
        }
        StoreError::Busy(msg) => ApiError::new(StatusCode::CONFLICT, "invalid_request_error", None, msg),
        e if e.is_transient() => ApiError::unavailable("the database is unavailable; try again"),
        e => ApiError::internal(e),
    }
}

/// A store error where not found means a specific object (`member_not_found`, ...).
pub(crate) fn store_error_for(err: StoreError, code: ErrorCode, what: &str) -> ApiError {
    match err {
        StoreError::NotFound => ApiError::not_found(code, format!("no such {what}")),
        other => store_error(other),
    }
}

/// A store error where a conflict is a value the caller chose (409 `invalid_value`), which
/// `why` explains from what is in the way.
pub(crate) fn value_conflict(err: StoreError, why: impl FnOnce(String) -> String) -> ApiError {
    match err {
        StoreError::Conflict(what) => {
            ApiError::new(StatusCode::CONFLICT, "invalid_request_error", Some(ErrorCode::InvalidValue), why(what))
        }
        other => store_error(other),
    }
}

/// The id a path gives, parsed: a malformed one is answered as a missing one would be
/// ([`store_error_for`]).
pub(crate) fn path_id<I: std::str::FromStr>(raw: &str, code: ErrorCode, what: &str) -> Result<I, ApiError> {
    raw.parse().map_err(|_| ApiError::not_found(code, format!("no such {what}")))
}

/// A use case's refusal or failure as a response.
pub(crate) fn ops_error(err: hermes_ops::OpsError) -> ApiError {
    crate::errors::refusal(err).unwrap_or_else(store_error)
}
