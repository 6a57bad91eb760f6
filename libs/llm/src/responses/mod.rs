//! The `responses` transport: OpenAI's Responses API (`/responses`), streaming. Internal
//! OpenAI-form messages become input items (messages, `function_call`, `function_call_output`);
//! the stream's events fold back into one assistant message.

mod request;
mod stream;

use crate::transport::{Endpoint, SendError, Transport};
use crate::wire::{self, KeyHeader};
use crate::{ChatRequest, ChatResponse, DeltaSink};

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
        let request = self.http.post(endpoint.url("responses")).json(&build_request(&endpoint.model, request));
        let response = wire::post(request, key, KeyHeader::Bearer).await?;
        wire::read_events(response, ResponsesAccumulator::default(), sink).await
    }
}
