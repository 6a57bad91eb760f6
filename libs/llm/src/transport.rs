//! Transports speak one provider API (`chat_completions` now; `anthropic_messages` and
//! `responses` next) and convert to and from the internal OpenAI-form messages.

use std::future::Future;

use crate::{ChatRequest, ChatResponse, DeltaSink, LlmError};

/// One model at one provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The credential pool its keys come from (`openai`, `openrouter`, `custom:<host>`, ...).
    pub provider: String,
    /// Base URL up to and including the version segment, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// The provider's model id.
    pub model: String,
}

impl Endpoint {
    /// The host requests go to (lower case, no port).
    pub fn host(&self) -> Option<String> {
        reqwest::Url::parse(&self.base_url).ok().and_then(|u| u.host_str().map(str::to_ascii_lowercase))
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
