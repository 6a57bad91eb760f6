//! LLM providers behind one trait. Every provider streams, converts to the internal
//! OpenAI-form [`ChatMessage`], and classifies its errors so callers can choose a recovery.

mod accumulate;
pub mod anthropic;
mod endpoint;
mod error;
pub mod keys;
mod meter;
pub mod models;
mod openai;
mod reasoning_details;
mod resilient;
pub mod responses;
mod retry;
mod spans;
pub mod transport;
mod wire;

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use hermes_core::{ChatMessage, Usage};

pub use accumulate::StreamAccumulator;
pub use error::{ErrorClass, LlmError, Recovery};
pub use keys::{Credential, KeySource, StaticKeys};
pub use meter::{CallBuffer, CallMeter};
pub use openai::{OpenAiChat, http_client};
pub use resilient::{PRIMARY_COOLDOWN, ResilientModel};
pub use retry::RetryPolicy;
pub use transport::{AnyTransport, ApiMode, Endpoint, SendError, Transport, resolve_api_mode};

/// One model call.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<ChatMessage>,
    /// Tool schemas in OpenAI form (`{"type":"function","function":{...}}`), each built once
    /// when its tool is registered and shared by every call that offers it.
    pub tools: Arc<[Arc<Value>]>,
    /// This call's output cap (the settings' `max_output_tokens` is already folded in).
    pub max_tokens: Option<u32>,
    /// Sampling and reasoning, mapped by each transport to what its provider accepts.
    pub settings: hermes_core::ModelSettings,
}

/// A model's answer to one call.
#[derive(Debug, Clone)]
pub struct ChatResponse {
    /// The assistant message (text and/or tool calls, reasoning kept apart).
    pub message: ChatMessage,
    /// The provider's finish reason (`stop`, `length`, `tool_calls`, ...).
    pub finish_reason: Option<String>,
    pub usage: Usage,
}

/// Receives the answer while it streams.
pub trait DeltaSink: Send {
    fn text(&mut self, text: &str);
    fn reasoning(&mut self, text: &str);
    /// Something the user should know about the turn that is not part of the answer (a soft
    /// spending cap reached). Dropped by sinks that show nothing.
    fn notice(&mut self, _code: &str, _message: &str) {}
}

/// A sink that drops everything (non-streaming callers).
pub struct NoDeltas;

impl DeltaSink for NoDeltas {
    fn text(&mut self, _: &str) {}
    fn reasoning(&mut self, _: &str) {}
}

/// A chat model.
pub trait ChatModel: Send + Sync {
    /// Runs one call, streaming deltas into `sink`. Retries retryable failures itself as long
    /// as nothing has been streamed yet.
    fn complete(
        &self,
        request: &ChatRequest,
        sink: &mut dyn DeltaSink,
    ) -> impl Future<Output = Result<ChatResponse, LlmError>> + Send;
}

#[cfg(test)]
mod settings_tests;
