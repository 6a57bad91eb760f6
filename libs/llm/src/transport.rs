//! Transports speak one provider API (`chat_completions`, `anthropic_messages`, `responses`)
//! and convert to and from the internal OpenAI-form messages. [`AnyTransport`] picks one per
//! endpoint; what each is held to ([`Transport`], [`Endpoint`]) lives below them all, in
//! `endpoint.rs`, and is re-exported here.

use std::sync::Arc;

use crate::{ChatRequest, ChatResponse, DeltaSink};

pub use crate::endpoint::{ApiMode, Endpoint, SendError, Transport, resolve_api_mode};

/// Every transport, chosen per endpoint by its API mode.
#[derive(Clone, Debug)]
pub struct AnyTransport {
    pub chat: crate::OpenAiChat,
    pub anthropic: crate::anthropic::AnthropicMessages,
    pub responses: crate::responses::OpenAiResponses,
}

impl AnyTransport {
    /// The transports over one shared HTTP client; Claude's prompts are cached for
    /// `cache_ttl`, natively and at OpenRouter and the `cache_gateways` (hosts).
    pub fn new(http: reqwest::Client, cache_ttl: crate::anthropic::CacheTtl, cache_gateways: Arc<[String]>) -> Self {
        Self {
            chat: crate::OpenAiChat::new(http.clone(), cache_ttl, cache_gateways),
            anthropic: crate::anthropic::AnthropicMessages::new(http.clone(), cache_ttl),
            responses: crate::responses::OpenAiResponses::new(http),
        }
    }
}

impl Transport for AnyTransport {
    async fn send(
        &self,
        endpoint: &Endpoint,
        key: Option<&str>,
        request: &ChatRequest,
        sink: &mut dyn DeltaSink,
    ) -> Result<ChatResponse, SendError> {
        match endpoint.api_mode {
            ApiMode::ChatCompletions => self.chat.send(endpoint, key, request, sink).await,
            ApiMode::AnthropicMessages => self.anthropic.send(endpoint, key, request, sink).await,
            ApiMode::Responses => self.responses.send(endpoint, key, request, sink).await,
        }
    }
}
