//! Any OpenAI-compatible `/chat/completions` endpoint (OpenAI, OpenRouter, vLLM, Ollama,
//! llama.cpp, LiteLLM, ...), always streaming.

use std::time::Duration;

use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde::Serialize;
use serde_json::Value;

use hermes_core::{ChatMessage, Content, Role, ToolCall};

use crate::transport::{Endpoint, SendError, Transport};
use crate::{ChatRequest, ChatResponse, DeltaSink, LlmError, StreamAccumulator};

/// The `chat_completions` transport: any OpenAI-compatible server. Cheap to clone; shares
/// the HTTP connection pool.
#[derive(Clone, Debug)]
pub struct OpenAiChat {
    http: reqwest::Client,
}

/// Builds the shared HTTP client for providers.
pub fn http_client(connect_timeout: Duration, request_timeout: Duration) -> Result<reqwest::Client, LlmError> {
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .timeout(request_timeout)
        .read_timeout(request_timeout.min(Duration::from_secs(300)))
        .pool_max_idle_per_host(64)
        .user_agent(concat!("hermes-cloud/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| LlmError::network(e.to_string()))
}

/// The message as providers accept it: reasoning stays with us.
#[derive(Serialize)]
struct WireMessage<'a> {
    role: Role,
    content: Option<&'a Content>,
    #[serde(skip_serializing_if = "<[ToolCall]>::is_empty")]
    tool_calls: &'a [ToolCall],
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
}

impl<'a> From<&'a ChatMessage> for WireMessage<'a> {
    fn from(m: &'a ChatMessage) -> Self {
        Self {
            role: m.role,
            content: m.content.as_ref(),
            tool_calls: &m.tool_calls,
            tool_call_id: m.tool_call_id.as_deref(),
            // `name` on tool messages is not accepted by every server; the call id suffices.
            name: if m.role == Role::Tool { None } else { m.name.as_deref() },
        }
    }
}

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "<[Value]>::is_empty")]
    tools: &'a [Value],
    stream: bool,
    stream_options: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
}

impl OpenAiChat {
    pub fn new(http: reqwest::Client) -> Self {
        Self { http }
    }
}

impl Transport for OpenAiChat {
    async fn send(
        &self,
        endpoint: &Endpoint,
        key: Option<&str>,
        request: &ChatRequest,
        sink: &mut dyn DeltaSink,
    ) -> Result<ChatResponse, SendError> {
        let url = format!("{}/chat/completions", endpoint.base_url.trim_end_matches('/'));
        let body = WireRequest {
            model: &endpoint.model,
            messages: request.messages.iter().map(WireMessage::from).collect(),
            tools: &request.tools,
            stream: true,
            stream_options: serde_json::json!({ "include_usage": true }),
            max_tokens: request.max_tokens,
        };
        let mut builder = self.http.post(&url).json(&body);
        if let Some(key) = key {
            builder = builder.bearer_auth(key);
        }
        let response = builder.send().await.map_err(|e| SendError::fresh(transport_error(&e)))?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            let text = read_capped(response, 64 * 1024).await;
            return Err(SendError::fresh(LlmError::from_status(status.as_u16(), &text, retry_after)));
        }
        let is_sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let mut acc = StreamAccumulator::default();
        if !is_sse {
            // A server that ignores `stream: true` answers with one JSON body.
            let text = response.text().await.map_err(|e| SendError::fresh(transport_error(&e)))?;
            acc.push(&text, sink).map_err(SendError::fresh)?;
            return Ok(acc.finish());
        }
        let mut events = response.bytes_stream().eventsource();
        let mut done = false;
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| SendError {
                error: LlmError::network(format!("stream broke: {e}")),
                emitted: acc.has_emitted(),
            })?;
            if event.data.trim() == "[DONE]" {
                done = true;
                break;
            }
            if event.data.trim().is_empty() {
                continue;
            }
            acc.push(&event.data, sink).map_err(|error| SendError { error, emitted: acc.has_emitted() })?;
        }
        if !done && !acc.has_finish_reason() {
            return Err(SendError {
                error: LlmError::network("stream ended before [DONE]"),
                emitted: acc.has_emitted(),
            });
        }
        Ok(acc.finish())
    }
}

/// Reads at most `limit` bytes of an error body (a misbehaving server may send megabytes).
pub(crate) async fn read_capped(response: reqwest::Response, limit: usize) -> String {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        let room = limit.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..room.min(chunk.len())]);
        if body.len() >= limit {
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

pub(crate) fn transport_error(e: &reqwest::Error) -> LlmError {
    if e.is_timeout() { LlmError::timeout() } else { LlmError::network(e.to_string()) }
}
