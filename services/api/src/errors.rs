//! A handler's error: the OpenAI-shaped [`ApiError`], plus what a storage error means for the
//! resource the handler works on, so `?` works on both. `hermes-http` knows nothing of the store
//! (and the store nothing of HTTP), so the conversion lives here.
//!
//! A handler names its resource in its error type (`Failure<resource::Channel>`): a store
//! `NotFound` becomes that resource's 404 (`channel_not_found`; another tenant's object looks
//! the same), `Conflict`/`Busy` its 409, `Invalid`/`Secret` a 400 `invalid_value` with the
//! store's reason, anything else a logged 500.

use std::marker::PhantomData;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use hermes_core::AgentId;
use hermes_http::{ApiError, ErrorCode};
use hermes_ops::OpsError;
use hermes_store::{KeyAuth, StoreError};

/// What a handler works on: its answers when the store says the object is missing or taken.
pub(crate) trait Resource {
    /// The 404 of a missing object (or another tenant's).
    fn not_found() -> ApiError;
    /// The 409 of an object that exists already or is busy, with the store's reason.
    fn conflict(why: String) -> ApiError;
}

/// A 409 `invalid_request_error` with `code`.
pub(crate) fn conflict(code: ErrorCode, why: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::CONFLICT, "invalid_request_error", Some(code), why)
}

/// `e` as an answer about resource `R`.
pub(crate) fn store_error<R: Resource>(e: StoreError) -> ApiError {
    match e {
        StoreError::NotFound => R::not_found(),
        StoreError::Conflict(why) | StoreError::Busy(why) => R::conflict(why),
        StoreError::Invalid(why) | StoreError::Secret(why) => ApiError::invalid_request(ErrorCode::InvalidValue, why),
        other => ApiError::internal(other),
    }
}

/// `e`, where `NotFound` is answered with `missing` (a 404 that names the id asked for) and
/// anything else is a server error.
pub(crate) fn missing_or_internal(e: StoreError, missing: impl FnOnce() -> ApiError) -> ApiError {
    match e {
        StoreError::NotFound => missing(),
        other => ApiError::internal(other),
    }
}

/// The row `found` holds, when the caller's key may use its agent (`agent_of`); `missing` when
/// there is none or the key is limited to another agent, which look the same to the caller.
pub(crate) fn of_callers_agent<T>(
    found: Result<T, StoreError>,
    auth: &KeyAuth,
    agent_of: impl FnOnce(&T) -> AgentId,
    missing: impl Fn() -> ApiError,
) -> Result<T, ApiError> {
    let row = found.map_err(|e| missing_or_internal(e, &missing))?;
    if auth.agent_id.is_some_and(|only| only != agent_of(&row)) {
        return Err(missing());
    }
    Ok(row)
}

/// A use case's refusal as an answer, or its storage failure for the caller to map.
pub(crate) fn refusal(err: OpsError) -> Result<ApiError, StoreError> {
    Ok(match err {
        OpsError::Invalid { code, param, message } => ApiError::invalid_request(code, message).with_param(param),
        OpsError::NotFound { code, what } => ApiError::not_found(code, format!("no such {what}")),
        OpsError::Refused { code, message } => ApiError::invalid_request(code, message),
        OpsError::Locked { code, message } => {
            ApiError::new(StatusCode::TOO_MANY_REQUESTS, "rate_limit_error", Some(code), message)
        }
        forbidden @ OpsError::Forbidden { .. } => ApiError::new(
            StatusCode::FORBIDDEN,
            "permission_error",
            Some(ErrorCode::PermissionDenied),
            forbidden.to_string(),
        ),
        OpsError::Store(e) => return Err(e),
    })
}

/// The id a path gives, parsed: a malformed one is resource `R`'s 404, as a missing one is.
pub(crate) fn path_id<R: Resource, I: std::str::FromStr>(raw: &str) -> Result<I, ApiError> {
    raw.parse().map_err(|_| R::not_found())
}

/// `Ok` when a delete found its object; resource `R`'s 404 when there was none to delete.
pub(crate) fn deleted<R: Resource>(found: bool) -> Result<(), ApiError> {
    if found { Ok(()) } else { Err(R::not_found()) }
}

/// A handler's error about resource `R`.
#[derive(Debug)]
pub(crate) struct Failure<R> {
    error: ApiError,
    resource: PhantomData<fn() -> R>,
}

impl<R> From<ApiError> for Failure<R> {
    fn from(error: ApiError) -> Self {
        Self { error, resource: PhantomData }
    }
}

impl<R: Resource> From<StoreError> for Failure<R> {
    fn from(e: StoreError) -> Self {
        store_error::<R>(e).into()
    }
}

impl<R: Resource> From<OpsError> for Failure<R> {
    fn from(e: OpsError) -> Self {
        refusal(e).unwrap_or_else(store_error::<R>).into()
    }
}

impl<R> Failure<R> {
    /// The answer this failure gives, for handlers that answer in another shape.
    pub(crate) fn error(self) -> ApiError {
        self.error
    }
}

impl<R> IntoResponse for Failure<R> {
    fn into_response(self) -> Response {
        self.error.into_response()
    }
}

/// The resources with their own codes, in one place (the e2e tests assert each code).
pub(crate) mod resource {
    use hermes_http::{ApiError, ErrorCode};

    use super::{Resource, conflict};

    macro_rules! resources {
        ($($(#[$doc:meta])* $name:ident: $not_found:ident, $message:literal, $exists:ident;)*) => {$(
            $(#[$doc])*
            pub(crate) enum $name {}

            impl Resource for $name {
                fn not_found() -> ApiError {
                    ApiError::not_found(ErrorCode::$not_found, $message)
                }

                fn conflict(why: String) -> ApiError {
                    conflict(ErrorCode::$exists, why)
                }
            }
        )*};
    }

    resources! {
        /// `/api/sessions`: a session with a running turn is busy.
        Session: SessionNotFound, "no such session", SessionBusy;
        /// `/v1/channels`.
        Channel: ChannelNotFound, "no such channel", ChannelExists;
        /// `/v1/cron/jobs`.
        CronJob: JobNotFound, "no such cron job", JobExists;
        /// `/v1/webhooks`.
        Webhook: WebhookNotFound, "no such webhook", WebhookExists;
        /// `/v1/event-hooks`.
        EventHook: EventHookNotFound, "no such event hook", EventHookExists;
    }

    /// `/v1/interactions/{id}`: an answered, expired or stopped one is closed.
    pub(crate) enum Interaction {}

    impl Resource for Interaction {
        fn not_found() -> ApiError {
            ApiError::not_found(ErrorCode::InteractionNotFound, "no pending question with this id")
        }

        fn conflict(_why: String) -> ApiError {
            conflict(
                ErrorCode::InteractionClosed,
                "this question was already answered, expired, or its turn was stopped",
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::resource::{Channel, EventHook, Interaction, Session};
    use super::*;

    #[test]
    fn store_errors_become_the_resources_answers() {
        let e = store_error::<Channel>(StoreError::NotFound);
        assert_eq!((e.status, e.code.map(ErrorCode::as_str)), (StatusCode::NOT_FOUND, Some("channel_not_found")));
        let e = store_error::<Session>(StoreError::Busy("a turn is running".into()));
        assert_eq!(
            (e.status, e.code.map(ErrorCode::as_str), e.message.as_str()),
            (StatusCode::CONFLICT, Some("session_busy"), "a turn is running")
        );
        let e = store_error::<EventHook>(StoreError::Secret("needs secrets.master_key".into()));
        assert_eq!((e.status, e.code.map(ErrorCode::as_str)), (StatusCode::BAD_REQUEST, Some("invalid_value")));
        let e = store_error::<Interaction>(StoreError::Conflict("answered".into()));
        assert_eq!((e.status, e.code.map(ErrorCode::as_str)), (StatusCode::CONFLICT, Some("interaction_closed")));
        let e = store_error::<Channel>(StoreError::Fenced);
        assert_eq!(
            (e.status, e.code.map(ErrorCode::as_str)),
            (StatusCode::INTERNAL_SERVER_ERROR, Some("internal_error"))
        );
    }
}
