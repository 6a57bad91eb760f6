//! The `responses` transport: OpenAI's Responses API (`/responses`), streaming. Internal
//! OpenAI-form messages become input items (messages, `function_call`, `function_call_output`);
//! the stream's events fold back into one assistant message.

mod request;
mod stream;

use crate::ChatRequest;
use crate::endpoint::Endpoint;
use crate::wire::{KeyHeader, WireApi};

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

impl WireApi for OpenAiResponses {
    type Fold = ResponsesAccumulator;
    const KEY: KeyHeader = KeyHeader::Bearer;

    fn request(&self, endpoint: &Endpoint, request: &ChatRequest) -> reqwest::RequestBuilder {
        self.http.post(endpoint.url("responses")).json(&build_request(endpoint, request))
    }
}
