//! The `anthropic_messages` transport: Anthropic's native Messages API, streaming, with prompt
//! caching (`system_and_3`: the system prompt and the last three messages carry cache
//! breakpoints, so a conversation's prefix is read from cache on every call).

mod request;
mod stream;

use crate::ChatRequest;
use crate::endpoint::Endpoint;
use crate::wire::{KeyHeader, WireApi};

pub(crate) use request::cache_control;
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

impl WireApi for AnthropicMessages {
    type Fold = AnthropicAccumulator;
    const KEY: KeyHeader = KeyHeader::Named("x-api-key");

    fn request(&self, endpoint: &Endpoint, request: &ChatRequest) -> reqwest::RequestBuilder {
        let (body, betas) = build_request(endpoint, request, self.cache_ttl);
        let post = self.http.post(endpoint.url("messages")).header("anthropic-version", API_VERSION);
        let post = if betas.is_empty() { post } else { post.header("anthropic-beta", betas.join(",")) };
        post.json(&body)
    }
}
