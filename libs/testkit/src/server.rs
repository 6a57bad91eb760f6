//! The HTTP side of the scripted model.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::Notify;

use crate::ScriptedReply;
use crate::served::Served;

/// A request the server received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub body: Value,
    /// The `Authorization` header (OpenAI-style servers).
    pub authorization: Option<String>,
    /// The `x-api-key` header (Anthropic).
    pub api_key: Option<String>,
}

impl RecordedRequest {
    /// The request's messages.
    pub fn messages(&self) -> Vec<Value> {
        self.body.get("messages").and_then(Value::as_array).cloned().unwrap_or_default()
    }

    /// The text of the request's last message: what the model was told last (a tool's
    /// result, a person's words); empty when it has none.
    pub fn last_text(&self) -> String {
        let messages = self.messages();
        messages.last().and_then(|m| m["content"].as_str()).unwrap_or_default().to_owned()
    }

    /// The text of each of the request's messages from `role`, in order (empty where one has
    /// none, as a call to a tool).
    pub fn texts_of(&self, role: &str) -> Vec<String> {
        let messages = self.messages();
        messages.iter().filter(|m| m["role"] == role).map(|m| m["content"].as_str().unwrap_or("").to_owned()).collect()
    }
}

#[derive(Default)]
pub(crate) struct Shared {
    pub(crate) script: Mutex<VecDeque<ScriptedReply>>,
    pub(crate) requests: Mutex<Vec<RecordedRequest>>,
    pub(crate) arrived: Notify,
    pub(crate) default_latency: Mutex<Duration>,
    /// Requests are kept for `requests()` unless a long load test turned that off.
    pub(crate) forget_requests: std::sync::atomic::AtomicBool,
    /// Claude's prompt cache behind a gateway (requests with `cache_control`).
    pub(crate) prompt_cache: crate::prompt_cache::PromptCache,
    /// Thinking signatures (Anthropic) and encrypted reasoning (Responses) handed out, with
    /// the thinking each seals.
    pub(crate) signatures: Mutex<std::collections::HashMap<String, String>>,
}

impl Shared {
    /// Keeps `request` for `requests()` (unless a load test turned that off) and wakes those
    /// waiting for one: every scripted route records through here.
    pub(crate) fn record(&self, request: RecordedRequest) {
        if !self.forget_requests.load(std::sync::atomic::Ordering::Relaxed)
            && let Ok(mut r) = self.requests.lock()
        {
            r.push(request);
        }
        self.arrived.notify_waiters();
    }
}

/// A running scripted model server; stops when dropped.
pub struct ScriptedLlm {
    served: Served,
    shared: Arc<Shared>,
}

impl ScriptedLlm {
    /// Starts on a free loopback port.
    pub async fn start() -> std::io::Result<Self> {
        Self::start_on("127.0.0.1:0".parse().map_err(std::io::Error::other)?).await
    }

    /// Starts on `addr`.
    pub async fn start_on(addr: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/v1/messages", post(crate::anthropic::messages))
            .route("/v1/responses", post(crate::responses::responses))
            .route("/v1/models", get(models))
            .route("/__script", post(push_script))
            .route("/__requests", get(list_requests))
            .with_state(shared.clone());
        // Streamed answers come in small writes: no Nagle delay, as a real provider.
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        Ok(Self { served: Served::on(listener, app)?, shared })
    }

    /// The base URL to configure as an agent's provider (`http://127.0.0.1:PORT/v1`).
    pub fn base_url(&self) -> String {
        self.served.url("/v1")
    }

    pub fn addr(&self) -> SocketAddr {
        self.served.addr()
    }

    /// Queues the next answer.
    pub fn push(&self, reply: ScriptedReply) {
        if let Ok(mut s) = self.shared.script.lock() {
            s.push_back(reply);
        }
    }

    /// Queues `replies`, in order.
    pub fn push_all(&self, replies: impl IntoIterator<Item = ScriptedReply>) {
        replies.into_iter().for_each(|reply| self.push(reply));
    }

    /// Latency of unscripted (default) answers.
    pub fn set_default_latency(&self, latency: Duration) {
        if let Ok(mut l) = self.shared.default_latency.lock() {
            *l = latency;
        }
    }

    /// Stops keeping requests (a load test's millions would fill the memory).
    pub fn forget_requests(&self) {
        self.shared.forget_requests.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Waits until at least `n` requests arrived; `false` on timeout.
    pub async fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        let wait = async {
            loop {
                let notified = self.shared.arrived.notified();
                if self.requests().len() >= n {
                    return;
                }
                notified.await;
            }
        };
        tokio::time::timeout(timeout, wait).await.is_ok()
    }
}

async fn models() -> Json<Value> {
    Json(json!({"object": "list", "data": [{"id": "scripted", "object": "model", "owned_by": "hermes-testkit"}]}))
}

/// Every request received so far (bodies only), for demos and measurements.
async fn list_requests(State(shared): State<Arc<Shared>>) -> Json<Value> {
    let bodies: Vec<Value> =
        shared.requests.lock().map(|r| r.iter().map(|q| q.body.clone()).collect()).unwrap_or_default();
    Json(Value::Array(bodies))
}

async fn push_script(State(shared): State<Arc<Shared>>, Json(replies): Json<Vec<ScriptedReply>>) -> StatusCode {
    if let Ok(mut s) = shared.script.lock() {
        s.extend(replies);
    }
    StatusCode::NO_CONTENT
}

/// The answer when nothing is scripted: run `$ cmd` with the terminal tool, report a tool
/// result, or echo the user.
fn default_reply(body: &Value, latency: Duration) -> ScriptedReply {
    let messages = body.get("messages").and_then(Value::as_array).cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    let text_of = |m: &Value| match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect(),
        _ => String::new(),
    };
    let reply = match last.get("role").and_then(Value::as_str) {
        Some("tool") => ScriptedReply::text(format!("The command printed:\n{}", text_of(&last))),
        _ => {
            let text = text_of(&last);
            let has_terminal = body
                .get("tools")
                .and_then(Value::as_array)
                .is_some_and(|t| t.iter().any(|t| t.pointer("/function/name") == Some(&json!("terminal"))));
            match text.strip_prefix("$ ") {
                Some(cmd) if has_terminal => ScriptedReply::tool_call("terminal", json!({ "command": cmd })),
                _ => ScriptedReply::text(format!("echo: {text}")),
            }
        }
    };
    reply.after(latency)
}

pub(crate) fn estimate_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4).max(1)
}

async fn chat(State(shared): State<Arc<Shared>>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
    shared.record(RecordedRequest { body: body.clone(), authorization, api_key: None });
    let scripted = shared.script.lock().ok().and_then(|mut s| s.pop_front());
    let default_latency = shared.default_latency.lock().map(|l| *l).unwrap_or_default();
    let reply = scripted.unwrap_or_else(|| default_reply(&body, default_latency));
    if !reply.latency().is_zero() {
        tokio::time::sleep(reply.latency()).await;
    }
    let model = body.get("model").and_then(Value::as_str).unwrap_or("scripted").to_owned();
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let include_usage = body.pointer("/stream_options/include_usage").and_then(Value::as_bool).unwrap_or(false);
    let cache = shared.prompt_cache.account(&body);
    let prompt_tokens = cache
        .map_or_else(|| estimate_tokens(&body.get("messages").map(Value::to_string).unwrap_or_default()), |c| c.total);
    let cache = cache.unwrap_or_default();
    let usage_json = |prompt: u64, completion: u64| usage_json(prompt, completion, cache);
    match reply {
        ScriptedReply::Error { status, message, .. } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            (status, Json(json!({"error": {"message": message, "type": "scripted_error", "code": null}})))
                .into_response()
        }
        ScriptedReply::Text { text, reasoning, finish_reason, .. } => {
            let finish = finish_reason.unwrap_or_else(|| "stop".into());
            let usage = usage_json(prompt_tokens, estimate_tokens(&text));
            if stream {
                let mut chunks = vec![json!({"role": "assistant", "content": ""})];
                if let Some(r) = reasoning {
                    chunks.push(json!({ "reasoning_content": r }));
                }
                chunks.extend(split_words(&text).into_iter().map(|w| json!({ "content": w })));
                sse(&model, chunks, &finish, include_usage.then_some(usage))
            } else {
                let mut message = json!({"role": "assistant", "content": text});
                if let Some(r) = reasoning {
                    message["reasoning_content"] = json!(r);
                }
                completion(&model, message, &finish, usage)
            }
        }
        ScriptedReply::ToolCalls { calls, .. } => {
            let calls: Vec<Value> = calls
                .into_iter()
                .enumerate()
                .map(|(i, (name, args))| {
                    json!({"index": i, "id": format!("call_{i}_{}", uuid_like()), "type": "function",
                           "function": {"name": name, "arguments": args.to_string()}})
                })
                .collect();
            let usage = usage_json(prompt_tokens, 20);
            if stream {
                let chunks = vec![json!({"role": "assistant", "content": null}), json!({ "tool_calls": calls })];
                sse(&model, chunks, "tool_calls", include_usage.then_some(usage))
            } else {
                completion(
                    &model,
                    json!({"role": "assistant", "content": null, "tool_calls": calls}),
                    "tool_calls",
                    usage,
                )
            }
        }
    }
}

pub(crate) fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("{:08x}", NEXT.fetch_add(1, Ordering::Relaxed))
}

fn usage_json(prompt: u64, completion: u64, cache: crate::prompt_cache::CacheUse) -> Value {
    let mut usage =
        json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion});
    if cache.read + cache.written > 0 {
        usage["prompt_tokens_details"] = json!({"cached_tokens": cache.read, "cache_write_tokens": cache.written});
    }
    usage
}

pub(crate) fn split_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for ch in text.chars() {
        cur.push(ch);
        if ch == ' ' {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn completion(model: &str, message: Value, finish: &str, usage: Value) -> Response {
    Json(json!({
        "id": format!("chatcmpl-scripted-{}", uuid_like()),
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage
    }))
    .into_response()
}

fn sse(model: &str, deltas: Vec<Value>, finish: &str, usage: Option<Value>) -> Response {
    let id = format!("chatcmpl-scripted-{}", uuid_like());
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut events: Vec<Value> = deltas.into_iter().map(|d| chunk(d, None)).collect();
    events.push(chunk(json!({}), Some(finish)));
    if let Some(usage) = usage {
        events.push(json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
                           "choices": [], "usage": usage}));
    }
    let mut items: Vec<Result<Event, Infallible>> =
        events.into_iter().map(|e| Ok(Event::default().data(e.to_string()))).collect();
    items.push(Ok(Event::default().data("[DONE]")));
    Sse::new(futures_util::stream::iter(items)).into_response()
}
