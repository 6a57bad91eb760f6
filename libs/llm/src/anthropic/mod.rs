//! The `anthropic_messages` transport: Anthropic's native Messages API, streaming, with prompt
//! caching (`system_and_3`: the system prompt and the last three messages carry cache
//! breakpoints, so a conversation's prefix is read from cache on every call).

mod request;
mod stream;

use std::time::Duration;

use eventsource_stream::Eventsource;
use futures_util::StreamExt;

use crate::transport::{Endpoint, SendError, Transport};
use crate::{ChatRequest, ChatResponse, DeltaSink, LlmError};

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
        let url = format!("{}/messages", endpoint.base_url.trim_end_matches('/'));
        let body = build_request(&endpoint.model, request, self.cache_ttl);
        let mut builder = self.http.post(&url).header("anthropic-version", API_VERSION).json(&body);
        if let Some(key) = key {
            builder = builder.header("x-api-key", key);
        }
        let response = builder.send().await.map_err(|e| SendError::fresh(crate::openai::transport_error(&e)))?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            let text = crate::openai::read_capped(response, 64 * 1024).await;
            return Err(SendError::fresh(LlmError::from_status(status.as_u16(), &text, retry_after)));
        }
        let mut acc = AnthropicAccumulator::default();
        let mut events = response.bytes_stream().eventsource();
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| SendError {
                error: LlmError::network(format!("stream broke: {e}")),
                emitted: acc.has_emitted(),
            })?;
            if event.data.trim().is_empty() {
                continue;
            }
            acc.push(&event.data, sink).map_err(|error| SendError { error, emitted: acc.has_emitted() })?;
            if acc.is_done() {
                break;
            }
        }
        if !acc.is_done() {
            return Err(SendError {
                error: LlmError::network("stream ended before message_stop"),
                emitted: acc.has_emitted(),
            });
        }
        Ok(acc.finish())
    }
}
