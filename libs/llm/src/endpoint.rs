//! An endpoint and what sending to it means: the provider API it speaks ([`ApiMode`]), the
//! [`Endpoint`] itself, the [`Transport`] trait every provider API implements and its
//! [`SendError`]. Its own file below the transports: each concrete transport (and the wire
//! plumbing they share) needs these, while `transport.rs`'s `AnyTransport` needs the concrete
//! transports.

use std::future::Future;

use crate::{ChatRequest, ChatResponse, DeltaSink, LlmError};

pub use hermes_core::ApiMode;

/// The API an endpoint speaks, by Hermes's precedence: an explicit setting, then the
/// provider, then the base URL, then `chat_completions`.
pub fn resolve_api_mode(explicit: Option<ApiMode>, provider: &str, base_url: &str) -> ApiMode {
    if let Some(mode) = explicit {
        return mode;
    }
    if provider == "anthropic" {
        return ApiMode::AnthropicMessages;
    }
    let host = reqwest::Url::parse(base_url).ok().and_then(|u| u.host_str().map(str::to_ascii_lowercase));
    if host.is_some_and(|h| h == "api.anthropic.com" || h.ends_with(".anthropic.com")) {
        return ApiMode::AnthropicMessages;
    }
    ApiMode::ChatCompletions
}

/// One model at one provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The credential pool its keys come from (`openai`, `openrouter`, `custom:<host>`, ...).
    pub provider: String,
    /// Base URL up to and including the version segment, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// The provider's model id.
    pub model: String,
    pub api_mode: ApiMode,
    /// Where OpenRouter may send the call (sent only to OpenRouter).
    pub routing: hermes_core::ProviderRouting,
}

impl Endpoint {
    /// Whether `/fast` asks this endpoint for its priority tier: OpenAI's own API for its
    /// flagship models (`service_tier: priority`), Anthropic's own for fast mode (`speed: fast`).
    pub fn has_priority_tier(&self) -> bool {
        match self.api_mode {
            ApiMode::ChatCompletions | ApiMode::Responses => {
                self.provider == "openai" && crate::models::offers_priority_tier(&self.model)
            }
            ApiMode::AnthropicMessages => self.provider == "anthropic" && crate::models::offers_fast_mode(&self.model),
        }
    }

    /// The host requests go to (lower case, no port).
    pub fn host(&self) -> Option<String> {
        reqwest::Url::parse(&self.base_url).ok().and_then(|u| u.host_str().map(str::to_ascii_lowercase))
    }

    /// The URL of `path` (no leading slash) below the base URL.
    pub fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.base_url.trim_end_matches('/'))
    }
}

/// A failed send.
#[derive(Debug)]
pub struct SendError {
    pub error: LlmError,
    /// Output already reached the sink: retrying would duplicate it.
    pub emitted: bool,
}

impl SendError {
    pub fn fresh(error: LlmError) -> Self {
        Self { error, emitted: false }
    }
}

/// Sends one request to one endpoint, streaming into `sink`. No retries: the caller decides.
pub trait Transport: Send + Sync {
    fn send(
        &self,
        endpoint: &Endpoint,
        key: Option<&str>,
        request: &ChatRequest,
        sink: &mut dyn DeltaSink,
    ) -> impl Future<Output = Result<ChatResponse, SendError>> + Send;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_mode_follows_hermes_precedence() {
        assert_eq!(
            resolve_api_mode(Some(ApiMode::ChatCompletions), "anthropic", "https://api.anthropic.com/v1"),
            ApiMode::ChatCompletions
        );
        assert_eq!(resolve_api_mode(None, "anthropic", "https://proxy.example/v1"), ApiMode::AnthropicMessages);
        assert_eq!(resolve_api_mode(None, "custom:x", "https://api.anthropic.com/v1"), ApiMode::AnthropicMessages);
        assert_eq!(resolve_api_mode(None, "openrouter", "https://openrouter.ai/api/v1"), ApiMode::ChatCompletions);
    }
}
