//! Any OpenAI-compatible `/chat/completions` endpoint (OpenAI, OpenRouter, vLLM, Ollama,
//! llama.cpp, LiteLLM, ...), always streaming.

use std::time::{Duration, Instant};

use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde::Serialize;
use serde_json::Value;

use hermes_core::{ChatMessage, Content, Role, ToolCall};

use crate::{ChatModel, ChatRequest, ChatResponse, DeltaSink, LlmError, RetryPolicy, StreamAccumulator};

/// How to reach one provider.
#[derive(Debug, Clone)]
pub struct OpenAiOptions {
    /// Base URL up to and including the version segment, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    pub api_key: Option<String>,
    pub retry: RetryPolicy,
}

/// A client for one OpenAI-compatible provider. Cheap to clone; shares the HTTP pool.
#[derive(Clone)]
pub struct OpenAiCompatible {
    http: reqwest::Client,
    endpoint: String,
    api_key: Option<String>,
    retry: RetryPolicy,
}

impl std::fmt::Debug for OpenAiCompatible {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiCompatible").field("endpoint", &self.endpoint).finish_non_exhaustive()
    }
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

impl OpenAiCompatible {
    pub fn new(http: reqwest::Client, options: OpenAiOptions) -> Self {
        let endpoint = format!("{}/chat/completions", options.base_url.trim_end_matches('/'));
        Self { http, endpoint, api_key: options.api_key, retry: options.retry }
    }

    async fn attempt(&self, request: &ChatRequest, sink: &mut dyn DeltaSink) -> Result<ChatResponse, Attempt> {
        let body = WireRequest {
            model: &request.model,
            messages: request.messages.iter().map(WireMessage::from).collect(),
            tools: &request.tools,
            stream: true,
            stream_options: serde_json::json!({ "include_usage": true }),
            max_tokens: request.max_tokens,
        };
        let mut builder = self.http.post(&self.endpoint).json(&body);
        if let Some(key) = &self.api_key {
            builder = builder.bearer_auth(key);
        }
        let response = builder.send().await.map_err(|e| Attempt::fresh(transport_error(&e)))?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            let text = read_capped(response, 64 * 1024).await;
            return Err(Attempt::fresh(LlmError::from_status(status.as_u16(), &text, retry_after)));
        }
        let is_sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let mut acc = StreamAccumulator::default();
        if !is_sse {
            // A server that ignores `stream: true` answers with one JSON body.
            let text = response.text().await.map_err(|e| Attempt::fresh(transport_error(&e)))?;
            acc.push(&text, sink).map_err(Attempt::fresh)?;
            return Ok(acc.finish());
        }
        let mut events = response.bytes_stream().eventsource();
        let mut done = false;
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| Attempt {
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
            acc.push(&event.data, sink).map_err(|error| Attempt { error, emitted: acc.has_emitted() })?;
        }
        if !done && !acc.has_finish_reason() {
            return Err(Attempt { error: LlmError::network("stream ended before [DONE]"), emitted: acc.has_emitted() });
        }
        Ok(acc.finish())
    }
}

struct Attempt {
    error: LlmError,
    /// Output already reached the sink: retrying would duplicate it.
    emitted: bool,
}

impl Attempt {
    fn fresh(error: LlmError) -> Self {
        Self { error, emitted: false }
    }
}

/// Reads at most `limit` bytes of an error body (a misbehaving server may send megabytes).
async fn read_capped(response: reqwest::Response, limit: usize) -> String {
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

fn transport_error(e: &reqwest::Error) -> LlmError {
    if e.is_timeout() { LlmError::timeout() } else { LlmError::network(e.to_string()) }
}

impl ChatModel for OpenAiCompatible {
    async fn complete(&self, request: &ChatRequest, sink: &mut dyn DeltaSink) -> Result<ChatResponse, LlmError> {
        let mut retry = 0;
        loop {
            let started = Instant::now();
            let result = self.attempt(request, sink).await;
            let elapsed = started.elapsed().as_secs_f64();
            match result {
                Ok(resp) => {
                    metrics::histogram!("hermes_llm_call_seconds", "outcome" => "ok").record(elapsed);
                    return Ok(resp);
                }
                Err(Attempt { error, emitted }) => {
                    metrics::histogram!("hermes_llm_call_seconds", "outcome" => error.code()).record(elapsed);
                    if emitted || !error.is_retryable() || retry >= self.retry.max_retries {
                        return Err(error);
                    }
                    retry += 1;
                    let delay = self.retry.delay(retry, &error);
                    tracing::warn!(error = %error, retry, delay_ms = delay.as_millis() as u64, "retrying provider call");
                    tokio::time::sleep(delay).await;
                }
            }
        }
    }
}
