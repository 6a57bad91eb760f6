//! The `responses` transport: OpenAI's Responses API (`/responses`), streaming. Internal
//! OpenAI-form messages become input items (messages, `function_call`, `function_call_output`);
//! the stream's events fold back into one assistant message.

mod request;
mod stream;

use std::time::Duration;

use eventsource_stream::Eventsource;
use futures_util::StreamExt;

use crate::transport::{Endpoint, SendError, Transport};
use crate::{ChatRequest, ChatResponse, DeltaSink, LlmError};

pub use request::build_request;
pub use stream::ResponsesAccumulator;

/// The Responses API transport.
#[derive(Clone, Debug)]
pub struct OpenAiResponses {
    http: reqwest::Client,
}

impl OpenAiResponses {
    pub fn new(http: reqwest::Client) -> Self {
        Self { http }
    }
}

impl Transport for OpenAiResponses {
    async fn send(
        &self,
        endpoint: &Endpoint,
        key: Option<&str>,
        request: &ChatRequest,
        sink: &mut dyn DeltaSink,
    ) -> Result<ChatResponse, SendError> {
        let url = format!("{}/responses", endpoint.base_url.trim_end_matches('/'));
        let mut builder = self.http.post(&url).json(&build_request(&endpoint.model, request));
        if let Some(key) = key {
            builder = builder.bearer_auth(key);
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
        let mut acc = ResponsesAccumulator::default();
        let mut events = response.bytes_stream().eventsource();
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| SendError {
                error: LlmError::network(format!("stream broke: {e}")),
                emitted: acc.has_emitted(),
            })?;
            if event.data.trim().is_empty() || event.data.trim() == "[DONE]" {
                continue;
            }
            acc.push(&event.data, sink).map_err(|error| SendError { error, emitted: acc.has_emitted() })?;
            if acc.is_done() {
                break;
            }
        }
        if !acc.is_done() {
            return Err(SendError {
                error: LlmError::network("stream ended before response.completed"),
                emitted: acc.has_emitted(),
            });
        }
        Ok(acc.finish())
    }
}
