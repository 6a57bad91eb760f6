//! The `anthropic_messages` transport: Anthropic's native Messages API, streaming, with prompt
//! caching (`system_and_3`: the system prompt and the last three messages carry cache
//! breakpoints, so a conversation's prefix is read from cache on every call).

mod request;
mod stream;

use crate::transport::{Endpoint, SendError, Transport};
use crate::wire::{self, KeyHeader};
use crate::{ChatRequest, ChatResponse, DeltaSink};

pub use request::{CacheTtl, build_request};
pub use stream::AnthropicAccumulator;

/// Anthropic's API version header value.
pub const API_VERSION: &str = "2023-06-01";

/// The native Anthropic transport.
#[derive(Clone, Debug)]
pub struct AnthropicMessages {
    http: reqwest::Client,
    cache_ttl: CacheTtl,
}

impl AnthropicMessages {
    pub fn new(http: reqwest::Client, cache_ttl: CacheTtl) -> Self {
        Self { http, cache_ttl }
    }
}

impl Transport for AnthropicMessages {
    async fn send(
        &self,
        endpoint: &Endpoint,
        key: Option<&str>,
        request: &ChatRequest,
        sink: &mut dyn DeltaSink,
    ) -> Result<ChatResponse, SendError> {
        let body = build_request(&endpoint.model, request, self.cache_ttl);
        let request = self.http.post(endpoint.url("messages")).header("anthropic-version", API_VERSION).json(&body);
        let response = wire::post(request, key, KeyHeader::Named("x-api-key")).await?;
        wire::read_events(response, AnthropicAccumulator::default(), sink).await
    }
}
