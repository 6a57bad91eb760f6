//! The span of one model call, named and described by the OpenTelemetry GenAI conventions
//! (`chat {model}`, `gen_ai.*`). Prompts and answers are never attributes: they are the
//! tenant's data, and the conventions keep them opt-in.

use tracing::field::Empty;

use crate::ChatResponse;
use crate::endpoint::{Endpoint, SendError};

/// The client span of one attempt at `endpoint`.
pub(crate) fn call_span(endpoint: &Endpoint, provider: &'static str) -> tracing::Span {
    let name = format!("chat {}", endpoint.model);
    tracing::info_span!(
        "llm_call",
        otel.name = %name,
        otel.kind = "client",
        otel.status_code = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider,
        gen_ai.request.model = %endpoint.model,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        server.address = endpoint.host().as_deref(),
        error.type = Empty,
    )
}

/// Records the attempt's outcome on its span.
pub(crate) fn record_call(span: &tracing::Span, sent: &Result<ChatResponse, SendError>) {
    match sent {
        Ok(response) => {
            span.record("gen_ai.usage.input_tokens", response.usage.prompt_tokens);
            span.record("gen_ai.usage.output_tokens", response.usage.completion_tokens);
            if let Some(reason) = &response.finish_reason {
                span.record("gen_ai.response.finish_reasons", reason.as_str());
            }
        }
        Err(e) => {
            span.record("otel.status_code", "ERROR");
            span.record("error.type", e.error.code().as_str());
        }
    }
}
