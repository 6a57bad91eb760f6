//! Provider errors, classified by what the caller can do about them.

use std::time::Duration;

/// Why a model call failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    /// 429: slow down; retryable after the given delay.
    #[error("provider rate limit (HTTP 429){}", retry_after.map(|d| format!(", retry after {}s", d.as_secs())).unwrap_or_default())]
    RateLimited { retry_after: Option<Duration> },
    /// 5xx: the provider failed; retryable.
    #[error("provider server error (HTTP {status}): {message}")]
    Server { status: u16, message: String, retry_after: Option<Duration> },
    /// 401/403: the key is wrong or lacks access; not retryable with the same key.
    #[error("provider rejected the credentials (HTTP {status}): {message}")]
    Auth { status: u16, message: String },
    /// The conversation no longer fits the model's context window.
    #[error("context window exceeded: {message}")]
    ContextOverflow { message: String },
    /// Another 4xx: the request itself is wrong; not retryable.
    #[error("provider refused the request (HTTP {status}): {message}")]
    BadRequest { status: u16, message: String },
    /// No answer in time; retryable.
    #[error("provider timed out")]
    Timeout,
    /// The connection failed or broke; retryable.
    #[error("cannot reach the provider: {0}")]
    Transport(String),
    /// The provider answered with something that is not a valid response.
    #[error("malformed provider response: {0}")]
    Protocol(String),
}

impl LlmError {
    /// Whether trying the same call again may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::RateLimited { .. } | Self::Server { .. } | Self::Timeout | Self::Transport(_))
    }

    /// A stable code for outcomes and API errors.
    pub fn code(&self) -> &'static str {
        match self {
            Self::RateLimited { .. } => "provider_rate_limited",
            Self::Server { .. } => "provider_server_error",
            Self::Auth { .. } => "provider_auth_failed",
            Self::ContextOverflow { .. } => "context_length_exceeded",
            Self::BadRequest { .. } => "provider_bad_request",
            Self::Timeout => "provider_timeout",
            Self::Transport(_) => "provider_unreachable",
            Self::Protocol(_) => "provider_protocol_error",
        }
    }

    /// Classifies an HTTP error status and body.
    pub(crate) fn from_status(status: u16, body: &str, retry_after: Option<Duration>) -> Self {
        let message = error_message(body);
        let lower = message.to_ascii_lowercase();
        match status {
            429 => Self::RateLimited { retry_after },
            401 | 403 => Self::Auth { status, message },
            400 | 413 | 422
                if lower.contains("context length")
                    || lower.contains("context_length")
                    || lower.contains("maximum context")
                    || lower.contains("too many tokens")
                    || lower.contains("context_length_exceeded") =>
            {
                Self::ContextOverflow { message }
            }
            408 => Self::Timeout,
            s if s >= 500 => Self::Server { status, message, retry_after },
            _ => Self::BadRequest { status, message },
        }
    }
}

impl LlmError {
    /// Classifies an `{"error": {...}}` object received inside a stream. Its `code` may be a
    /// number (an HTTP status) or a string (`context_length_exceeded`, `rate_limit_exceeded`).
    pub(crate) fn from_stream_error(err: &serde_json::Value) -> Self {
        let message = err.get("message").and_then(|m| m.as_str()).unwrap_or("stream error").to_owned();
        let code = err.get("code");
        let status = code.and_then(|c| c.as_u64()).and_then(|c| u16::try_from(c).ok());
        let code_text = code.and_then(|c| c.as_str()).unwrap_or_default();
        let status = status.unwrap_or(match code_text {
            "context_length_exceeded" => 400,
            "rate_limit_exceeded" => 429,
            "invalid_api_key" => 401,
            _ => 500,
        });
        let body = serde_json::json!({ "error": { "message": format!("{message} {code_text}") } }).to_string();
        Self::from_status(status, &body, None)
    }
}

/// The `error.message` of an OpenAI-style error body, else the body itself (shortened).
fn error_message(body: &str) -> String {
    let parsed = serde_json::from_str::<serde_json::Value>(body).ok();
    let msg = parsed
        .as_ref()
        .and_then(|v| v.pointer("/error/message").or_else(|| v.get("message")).or_else(|| v.get("error")))
        .and_then(|m| m.as_str())
        .unwrap_or(body);
    msg.chars().take(500).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_recoverable_classes() {
        assert!(LlmError::from_status(500, "oops", None).is_retryable());
        assert!(LlmError::from_status(429, "", Some(Duration::from_secs(3))).is_retryable());
        let auth = LlmError::from_status(401, r#"{"error":{"message":"bad key"}}"#, None);
        assert!(!auth.is_retryable());
        assert!(auth.to_string().contains("bad key"));
        let ctx =
            LlmError::from_status(400, r#"{"error":{"message":"This model's maximum context length is 8192"}}"#, None);
        assert!(matches!(ctx, LlmError::ContextOverflow { .. }));
        assert!(matches!(LlmError::from_status(404, "no", None), LlmError::BadRequest { .. }));
    }
}
