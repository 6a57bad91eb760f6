//! Provider errors, classified by what the caller can do about them. Every class has a
//! recovery ladder: the steps to try in order before the turn fails.

use std::time::Duration;

use hermes_core::ErrorCode;

/// What went wrong, in terms of what helps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// 429: too many requests for this key right now.
    RateLimit,
    /// 402, or a quota/billing 429: this key has no money or quota left.
    Billing,
    /// Our own spending cap (a tenant's or agent's budget) is reached: no call is made.
    SpendCap,
    /// 401/403 that may pass (an expired token, a permission not yet granted).
    AuthTransient,
    /// 401 for a key that is invalid or revoked: it will never work again.
    AuthRevoked,
    /// The conversation does not fit the model's context window.
    ContextOverflow,
    /// The request body is too large for the provider (not a token limit).
    PayloadTooLarge,
    /// The model name is unknown to this provider.
    ModelNotFound,
    /// The provider's content filter refused the request or the answer.
    ContentFilter,
    /// A reasoning ("thinking") block's signature was rejected (history from another model).
    ThinkingSignature,
    /// 503/529: the provider is overloaded.
    Overloaded,
    /// Other 5xx.
    Server,
    /// No answer in time.
    Timeout,
    /// The connection failed or broke.
    Network,
    /// The answer is not a valid response (or its tool-call JSON is broken beyond use).
    Malformed,
    /// Another 4xx: the request itself is wrong.
    BadRequest,
    /// Refused before sending: this key may not be sent to that host.
    KeyNotAllowed,
}

/// One step of a recovery ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// Try the same call again after a backoff.
    Retry,
    /// Take this key out of rotation (for `cooldown`, or for good when `None`) and use another
    /// key of the same provider.
    RotateKey { cooldown: Option<Duration> },
    /// Compress the conversation and try again.
    Compress,
    /// Drop reasoning blocks from the history and try again.
    StripReasoning,
    /// Switch to the next model of the fallback chain.
    Fallback,
}

const FIVE_MINUTES: Duration = Duration::from_secs(300);
const ONE_HOUR: Duration = Duration::from_secs(3600);

impl ErrorClass {
    /// The steps to try, in order; when they are exhausted the turn fails with a clear message.
    pub fn recovery(self) -> &'static [Recovery] {
        use Recovery::*;
        match self {
            Self::RateLimit => &[Retry, RotateKey { cooldown: Some(ONE_HOUR) }, Fallback],
            Self::Billing => &[RotateKey { cooldown: Some(ONE_HOUR) }, Fallback],
            Self::AuthTransient => &[RotateKey { cooldown: Some(FIVE_MINUTES) }, Fallback],
            Self::AuthRevoked => &[RotateKey { cooldown: None }, Fallback],
            Self::ContextOverflow | Self::PayloadTooLarge => &[Compress],
            Self::ModelNotFound => &[Fallback],
            Self::ThinkingSignature => &[StripReasoning],
            Self::Overloaded | Self::Server | Self::Timeout | Self::Network => &[Retry, Fallback],
            Self::Malformed => &[Retry, Fallback],
            Self::ContentFilter | Self::BadRequest | Self::KeyNotAllowed | Self::SpendCap => &[],
        }
    }

    /// A stable code for outcomes and API errors.
    pub fn code(self) -> ErrorCode {
        match self {
            Self::RateLimit => ErrorCode::ProviderRateLimited,
            Self::Billing => ErrorCode::ProviderQuotaExhausted,
            Self::SpendCap => ErrorCode::InsufficientQuota,
            Self::AuthTransient | Self::AuthRevoked => ErrorCode::ProviderAuthFailed,
            Self::ContextOverflow => ErrorCode::ContextLengthExceeded,
            Self::PayloadTooLarge => ErrorCode::ProviderPayloadTooLarge,
            Self::ModelNotFound => ErrorCode::ProviderModelNotFound,
            Self::ContentFilter => ErrorCode::ContentFiltered,
            Self::ThinkingSignature => ErrorCode::ProviderThinkingSignature,
            Self::Overloaded => ErrorCode::ProviderOverloaded,
            Self::Server => ErrorCode::ProviderServerError,
            Self::Timeout => ErrorCode::ProviderTimeout,
            Self::Network => ErrorCode::ProviderUnreachable,
            Self::Malformed => ErrorCode::ProviderProtocolError,
            Self::BadRequest => ErrorCode::ProviderBadRequest,
            Self::KeyNotAllowed => ErrorCode::ProviderKeyNotAllowed,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Self::RateLimit => "provider rate limit",
            Self::Billing => "provider quota or billing limit reached",
            Self::SpendCap => "spending cap reached",
            Self::AuthTransient => "provider rejected the credentials",
            Self::AuthRevoked => "provider rejected the credentials (invalid or revoked key)",
            Self::ContextOverflow => "context window exceeded",
            Self::PayloadTooLarge => "request too large for the provider",
            Self::ModelNotFound => "model not found at the provider",
            Self::ContentFilter => "the provider's content filter refused the request",
            Self::ThinkingSignature => "the provider rejected a reasoning block's signature",
            Self::Overloaded => "provider overloaded",
            Self::Server => "provider server error",
            Self::Timeout => "provider timed out",
            Self::Network => "cannot reach the provider",
            Self::Malformed => "malformed provider response",
            Self::BadRequest => "provider refused the request",
            Self::KeyNotAllowed => "the credential may not be sent to this host",
        }
    }
}

/// Why a model call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}{}", class.describe(), status.map(|s| format!(" (HTTP {s})")).unwrap_or_default(), if message.is_empty() { String::new() } else { format!(": {message}") })]
pub struct LlmError {
    pub class: ErrorClass,
    pub status: Option<u16>,
    pub message: String,
    /// The provider's `Retry-After`, when it sent one.
    pub retry_after: Option<Duration>,
}

impl LlmError {
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        Self { class, status: None, message: message.into(), retry_after: None }
    }

    pub fn timeout() -> Self {
        Self::new(ErrorClass::Timeout, "")
    }

    pub fn network(message: impl Into<String>) -> Self {
        Self::new(ErrorClass::Network, message)
    }

    pub fn malformed(message: impl Into<String>) -> Self {
        Self::new(ErrorClass::Malformed, message)
    }

    /// Whether trying the same call again may succeed.
    pub fn is_retryable(&self) -> bool {
        self.class.recovery().first() == Some(&Recovery::Retry)
    }

    /// A stable code for outcomes and API errors.
    pub fn code(&self) -> ErrorCode {
        self.class.code()
    }

    /// Classifies an HTTP error status and body.
    pub fn from_status(status: u16, body: &str, retry_after: Option<Duration>) -> Self {
        let message = error_message(body);
        let class = classify(status, &message.to_ascii_lowercase(), &body.to_ascii_lowercase());
        Self { class, status: Some(status), message, retry_after }
    }

    /// Classifies an `{"error": {...}}` object received inside a stream. Its `code` may be a
    /// number (an HTTP status) or a string (`context_length_exceeded`, `rate_limit_exceeded`).
    pub(crate) fn from_stream_error(err: &serde_json::Value) -> Self {
        let message = err.get("message").and_then(|m| m.as_str()).unwrap_or("stream error").to_owned();
        let code = err.get("code");
        let status = code.and_then(|c| c.as_u64()).and_then(|c| u16::try_from(c).ok());
        let code_text =
            code.and_then(|c| c.as_str()).or_else(|| err.get("type").and_then(|t| t.as_str())).unwrap_or_default();
        let status = status.unwrap_or(match code_text {
            "context_length_exceeded" | "invalid_request_error" => 400,
            "rate_limit_exceeded" => 429,
            "insufficient_quota" => 402,
            "invalid_api_key" => 401,
            "overloaded_error" => 529,
            _ => 500,
        });
        let body = serde_json::json!({ "error": { "message": format!("{message} {code_text}").trim() } }).to_string();
        Self::from_status(status, &body, None)
    }
}

fn has_any(text: &str, needles: &[&str]) -> bool {
    needles.iter().any(|n| text.contains(n))
}

/// Status first, then the words providers use for the cases a status does not tell apart.
fn classify(status: u16, message: &str, body: &str) -> ErrorClass {
    let text = format!("{message} {body}");
    if has_any(
        &text,
        &[
            "context length",
            "context_length",
            "maximum context",
            "too many tokens",
            "prompt is too long",
            "context window",
        ],
    ) {
        return ErrorClass::ContextOverflow;
    }
    match status {
        402 => ErrorClass::Billing,
        429 if has_any(&text, &["quota", "billing", "insufficient", "credit"]) => ErrorClass::Billing,
        429 => ErrorClass::RateLimit,
        401 if has_any(
            &text,
            &[
                "revoked",
                "invalidated",
                "invalid_token",
                "invalid_grant",
                "invalid api key",
                "incorrect api key",
                "invalid_api_key",
                "invalid x-api-key",
            ],
        ) =>
        {
            ErrorClass::AuthRevoked
        }
        401 | 403 => ErrorClass::AuthTransient,
        404 => ErrorClass::ModelNotFound,
        408 => ErrorClass::Timeout,
        413 => ErrorClass::PayloadTooLarge,
        503 | 529 => ErrorClass::Overloaded,
        s if s >= 500 => ErrorClass::Server,
        _ if has_any(
            &text,
            &["model_not_found", "does not exist", "unknown model", "no such model", "invalid model"],
        ) =>
        {
            ErrorClass::ModelNotFound
        }
        _ if has_any(&text, &["content_filter", "content policy", "content_policy", "safety system", "flagged"]) => {
            ErrorClass::ContentFilter
        }
        _ if text.contains("signature") && has_any(&text, &["thinking", "reasoning"]) => ErrorClass::ThinkingSignature,
        _ => ErrorClass::BadRequest,
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

    fn class(status: u16, body: &str) -> ErrorClass {
        LlmError::from_status(status, body, None).class
    }

    #[test]
    fn provider_answers_map_to_their_class() {
        let cases = [
            (429, r#"{"error":{"message":"Rate limit reached for requests"}}"#, ErrorClass::RateLimit),
            (
                429,
                r#"{"error":{"message":"You exceeded your current quota","code":"insufficient_quota"}}"#,
                ErrorClass::Billing,
            ),
            (402, "Insufficient credits", ErrorClass::Billing),
            (401, r#"{"error":{"message":"Incorrect API key provided: sk-..."}}"#, ErrorClass::AuthRevoked),
            (401, r#"{"error":{"message":"token_revoked"}}"#, ErrorClass::AuthRevoked),
            (401, r#"{"error":{"message":"Access token expired"}}"#, ErrorClass::AuthTransient),
            (403, "not allowed yet", ErrorClass::AuthTransient),
            (
                400,
                r#"{"error":{"message":"This model's maximum context length is 8192 tokens"}}"#,
                ErrorClass::ContextOverflow,
            ),
            (
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
                ErrorClass::ContextOverflow,
            ),
            (413, "Request Entity Too Large", ErrorClass::PayloadTooLarge),
            (404, r#"{"error":{"message":"The model `gpt-9` does not exist"}}"#, ErrorClass::ModelNotFound),
            (400, r#"{"error":{"message":"model_not_found"}}"#, ErrorClass::ModelNotFound),
            (
                400,
                r#"{"error":{"message":"The response was filtered due to the prompt triggering content management policy","code":"content_filter"}}"#,
                ErrorClass::ContentFilter,
            ),
            (400, r#"{"error":{"message":"Invalid signature in thinking block"}}"#, ErrorClass::ThinkingSignature),
            (
                529,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                ErrorClass::Overloaded,
            ),
            (503, "upstream unavailable", ErrorClass::Overloaded),
            (500, "boom", ErrorClass::Server),
            (408, "", ErrorClass::Timeout),
            (400, r#"{"error":{"message":"messages: roles must alternate"}}"#, ErrorClass::BadRequest),
        ];
        for (status, body, expected) in cases {
            assert_eq!(class(status, body), expected, "{status} {body}");
        }
    }

    #[test]
    fn every_class_has_a_ladder_that_matches_hermes() {
        assert_eq!(ErrorClass::RateLimit.recovery()[0], Recovery::Retry);
        assert_eq!(ErrorClass::AuthTransient.recovery()[0], Recovery::RotateKey { cooldown: Some(FIVE_MINUTES) });
        assert_eq!(ErrorClass::AuthRevoked.recovery()[0], Recovery::RotateKey { cooldown: None });
        assert_eq!(ErrorClass::Billing.recovery()[0], Recovery::RotateKey { cooldown: Some(ONE_HOUR) });
        assert_eq!(ErrorClass::ContextOverflow.recovery(), [Recovery::Compress]);
        assert!(ErrorClass::Server.recovery().contains(&Recovery::Fallback));
        assert!(ErrorClass::ContentFilter.recovery().is_empty(), "refusals are reported, not retried");
        assert!(LlmError::from_status(500, "x", None).is_retryable());
        assert!(!LlmError::from_status(401, "x", None).is_retryable());
        let e = LlmError::from_status(401, r#"{"error":{"message":"bad key"}}"#, None);
        assert!(e.to_string().contains("credentials") && e.to_string().contains("bad key"), "{e}");
    }
}
