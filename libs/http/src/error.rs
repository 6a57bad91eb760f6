//! Errors in OpenAI's shape: `{"error": {"message", "type", "param", "code"}}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

pub use hermes_core::ErrorCode;
pub use hermes_wire::{ErrorBody, ErrorDetail};

/// An error answer. Internal details are logged, never sent.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub kind: &'static str,
    pub code: Option<ErrorCode>,
    pub param: Option<&'static str>,
    /// Seconds for a `Retry-After` header.
    pub retry_after: Option<u64>,
    /// Hermes-specific details, sent as `error.hermes` (clients that do not know it ignore it).
    pub hermes: Option<Box<serde_json::Value>>,
}

impl ApiError {
    pub fn new(status: StatusCode, kind: &'static str, code: Option<ErrorCode>, message: impl Into<String>) -> Self {
        Self { status, message: message.into(), kind, code, param: None, retry_after: None, hermes: None }
    }

    /// 400 `invalid_request_error`.
    pub fn invalid_request(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request_error", Some(code), message)
    }

    /// Names the offending request parameter.
    pub fn with_param(mut self, param: &'static str) -> Self {
        self.param = Some(param);
        self
    }

    /// 401 `invalid_api_key`.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "invalid_request_error", Some(ErrorCode::InvalidApiKey), message)
    }

    /// 404 with a specific code (`model_not_found`, `session_not_found`, ...).
    pub fn not_found(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "invalid_request_error", Some(code), message)
    }

    /// 413 `body_too_large`.
    pub fn body_too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            Some(ErrorCode::BodyTooLarge),
            format!("request body is larger than the limit of {limit} bytes"),
        )
    }

    /// 500; logs `err` with the request's span, sends a generic message.
    pub fn internal(err: impl std::fmt::Display) -> Self {
        tracing::error!(error = %err, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            Some(ErrorCode::InternalError),
            "internal server error",
        )
    }

    /// 503: a dependency is down; the client may retry.
    pub fn unavailable(message: impl Into<String>) -> Self {
        let mut e =
            Self::new(StatusCode::SERVICE_UNAVAILABLE, "server_error", Some(ErrorCode::ServiceUnavailable), message);
        e.retry_after = Some(1);
        e
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let error = ErrorDetail {
            message: self.message,
            r#type: self.kind.to_owned(),
            param: self.param.map(str::to_owned),
            code: self.code.map(|c| c.to_string()),
            hermes: self.hermes.map(|h| *h),
        };
        let body = ErrorBody { error };
        let mut resp = (self.status, Json(body)).into_response();
        if let Some(secs) = self.retry_after
            && let Ok(v) = secs.to_string().parse()
        {
            resp.headers_mut().insert(axum::http::header::RETRY_AFTER, v);
        }
        resp
    }
}
