//! Any OpenAI-compatible `/chat/completions` endpoint (OpenAI, OpenRouter, vLLM, Ollama,
//! llama.cpp, LiteLLM, ...), always streaming.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use hermes_core::{ApiMode, ChatMessage, Content, ModelSettings, ReasoningEffort, Role, ToolCall};

use crate::accumulate::Streamed;
use crate::endpoint::Endpoint;
use crate::wire::{KeyHeader, StreamFold, WireApi};
use crate::{ChatRequest, ChatResponse, DeltaSink, LlmError, StreamAccumulator};

/// The `chat_completions` transport: any OpenAI-compatible server. Cheap to clone; shares
/// the HTTP connection pool.
#[derive(Clone, Debug)]
pub struct OpenAiChat {
    http: reqwest::Client,
    /// How long Claude's cached prefixes live at gateways that cache on request.
    cache_ttl: crate::anthropic::CacheTtl,
    /// Hosts of gateways besides OpenRouter that cache Claude's prompts on request.
    cache_gateways: Arc<[String]>,
}

/// Builds the shared HTTP client for providers, held to the outbound `policy` (public
/// addresses or the operator's trusted hosts, no proxy from the environment) and following no
/// redirect (a redirect would carry the provider key's header to another host).
pub fn http_client(
    connect_timeout: Duration,
    request_timeout: Duration,
    policy: std::sync::Arc<hermes_net_policy::outbound::Policy>,
) -> Result<reqwest::Client, LlmError> {
    hermes_net_policy::outbound::builder(policy)
        .redirect(reqwest::redirect::Policy::none())
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
    /// OpenRouter's reasoning details, back to the endpoint and model that wrote them.
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_details: Option<&'a [Value]>,
}

impl<'a> WireMessage<'a> {
    fn new(m: &'a ChatMessage, endpoint: &Endpoint) -> Self {
        let replay =
            m.replay.as_ref().and_then(|r| r.for_call(ApiMode::ChatCompletions, &endpoint.base_url, &endpoint.model));
        Self {
            role: m.role,
            content: m.content.as_ref(),
            tool_calls: &m.tool_calls,
            tool_call_id: m.tool_call_id.as_deref(),
            // `name` on tool messages is not accepted by every server; the call id suffices.
            name: if m.role == Role::Tool { None } else { m.name.as_deref() },
            reasoning_details: replay,
        }
    }
}

/// The messages as sent: as they are, or (Claude through a gateway) with cache breakpoints.
#[derive(Serialize)]
#[serde(untagged)]
enum WireMessages<'a> {
    Plain(Vec<WireMessage<'a>>),
    Cached(Vec<Value>),
}

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    messages: WireMessages<'a>,
    #[serde(skip_serializing_if = "<[Arc<Value>]>::is_empty", serialize_with = "shared_values")]
    tools: &'a [Arc<Value>],
    stream: bool,
    stream_options: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(flatten)]
    settings: WireSettings,
    /// OpenRouter's provider preferences (the agent's `provider_routing`).
    #[serde(skip_serializing_if = "Option::is_none")]
    provider: Option<&'a hermes_core::ProviderRouting>,
}

/// The settings as chat completions servers take them: OpenAI's `reasoning_effort` and
/// `service_tier`, or OpenRouter's `reasoning` object.
#[derive(Serialize, Default)]
struct WireSettings {
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<ReasoningEffort>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    service_tier: Option<&'static str>,
}

impl WireSettings {
    fn for_endpoint(endpoint: &Endpoint, settings: &ModelSettings) -> Self {
        let openrouter = endpoint.provider == "openrouter";
        // OpenRouter takes a token budget or an effort, never both.
        let reasoning = match (settings.thinking_budget, settings.reasoning_effort) {
            _ if !openrouter => None,
            (_, Some(ReasoningEffort::None)) => Some(serde_json::json!({ "effort": "none" })),
            (Some(budget), _) => Some(serde_json::json!({ "max_tokens": budget })),
            (None, Some(effort)) => Some(serde_json::json!({ "effort": effort })),
            (None, None) => None,
        };
        let priority = settings.fast == Some(true) && endpoint.has_priority_tier();
        let (sampling, reasons) = crate::models::openai_knobs(&endpoint.provider, &endpoint.model);
        // OpenRouter takes its effort in the `reasoning` object instead.
        let effort = reasons && !openrouter;
        Self {
            temperature: settings.temperature.filter(|_| sampling),
            top_p: settings.top_p.filter(|_| sampling),
            reasoning_effort: settings.reasoning_effort.filter(|_| effort),
            reasoning,
            service_tier: priority.then_some("priority"),
        }
    }
}

fn shared_values<S: serde::Serializer>(values: &[Arc<Value>], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(values.iter().map(|v| &**v))
}

impl OpenAiChat {
    /// The transport over `http`; Claude at OpenRouter or one of `cache_gateways` (hosts) is
    /// sent cache breakpoints living `cache_ttl`.
    pub fn new(http: reqwest::Client, cache_ttl: crate::anthropic::CacheTtl, cache_gateways: Arc<[String]>) -> Self {
        Self { http, cache_ttl, cache_gateways }
    }

    /// Whether `endpoint` serves Claude through a gateway that caches its prompts only at
    /// `cache_control` breakpoints (without them every call pays the full input price).
    fn caches_on_request(&self, endpoint: &Endpoint) -> bool {
        let gateway = endpoint.provider == "openrouter"
            || endpoint.host().is_some_and(|h| self.cache_gateways.iter().any(|g| g.eq_ignore_ascii_case(&h)));
        gateway && crate::models::is_claude(&endpoint.model)
    }
}

/// Marks one message as a cache breakpoint, as gateways pass it on to Anthropic: on its last
/// content part (text becomes one part), or on the message when it has no content. Tool
/// results take none (gateways do not carry it to Anthropic's tool_result).
fn mark(message: &mut Value, marker: &Value) {
    if message["role"] == "tool" {
        return;
    }
    match message.get_mut("content") {
        Some(Value::String(text)) if !text.is_empty() => {
            let text = std::mem::take(text);
            message["content"] = serde_json::json!([{"type": "text", "text": text, "cache_control": marker}]);
        }
        Some(Value::Array(parts)) if !parts.is_empty() => {
            if let Some(last) = parts.last_mut() {
                last["cache_control"] = marker.clone();
            }
        }
        _ => message["cache_control"] = marker.clone(),
    }
}

/// Anthropic's `system_and_3` layout on chat messages: the first system message and the last
/// three others are breakpoints, so each call reads the conversation so far from the cache.
fn with_breakpoints(messages: &[ChatMessage], endpoint: &Endpoint, ttl: crate::anthropic::CacheTtl) -> Vec<Value> {
    let marker = crate::anthropic::cache_control(ttl);
    let mut out: Vec<Value> =
        messages.iter().map(|m| serde_json::to_value(WireMessage::new(m, endpoint)).unwrap_or(Value::Null)).collect();
    if let Some(system) = out.first_mut().filter(|m| m["role"] == "system") {
        mark(system, &marker);
    }
    let others: Vec<usize> = (0..out.len()).filter(|&i| out[i]["role"] != "system").collect();
    for &i in others.iter().skip(others.len().saturating_sub(3)) {
        mark(&mut out[i], &marker);
    }
    out
}

impl WireApi for OpenAiChat {
    type Fold = ChatStream;
    const KEY: KeyHeader = KeyHeader::Bearer;
    const TAKES_WHOLE_BODY: bool = true;

    fn request(&self, endpoint: &Endpoint, request: &ChatRequest) -> reqwest::RequestBuilder {
        let body = WireRequest {
            model: &endpoint.model,
            messages: if self.caches_on_request(endpoint) {
                WireMessages::Cached(with_breakpoints(&request.messages, endpoint, self.cache_ttl))
            } else {
                WireMessages::Plain(request.messages.iter().map(|m| WireMessage::new(m, endpoint)).collect())
            },
            tools: &request.tools,
            stream: true,
            stream_options: serde_json::json!({ "include_usage": true }),
            max_tokens: request.max_tokens,
            settings: WireSettings::for_endpoint(endpoint, &request.settings),
            provider: Some(&endpoint.routing).filter(|r| endpoint.provider == "openrouter" && !r.is_empty()),
        };
        self.http.post(endpoint.url("chat/completions")).json(&body)
    }
}

/// A chat completions stream: chunks until `[DONE]`.
#[derive(Default)]
pub(crate) struct ChatStream {
    acc: StreamAccumulator,
    done: bool,
}

impl StreamFold for ChatStream {
    const END: &'static str = "[DONE]";

    fn push(&mut self, data: &str, sink: &mut dyn DeltaSink) -> Result<(), LlmError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        self.acc.push(data, sink)
    }

    fn streamed(&self) -> &Streamed {
        self.acc.streamed()
    }

    fn is_done(&self) -> bool {
        self.done
    }

    /// OpenRouter's reasoning details, to be sent back on the next call.
    fn take_replay(&mut self) -> Vec<Value> {
        self.acc.take_details()
    }

    /// Some servers close the stream after the finish reason without `[DONE]`.
    fn is_complete(&self) -> bool {
        self.done || self.acc.has_finish_reason()
    }

    fn finish(self) -> ChatResponse {
        self.acc.finish()
    }
}
