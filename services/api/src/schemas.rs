//! The wire shapes of the turn path (chat completions, responses, runs) and of the lists whose
//! items are still the store's rows. Those handlers build their bodies with `serde_json`, so
//! these types describe them (handlers name them in `#[utoipa::path]`); the end-to-end
//! conformance test checks real responses against the document, which keeps the two in step.
//! Everything else answers with `hermes_wire` types, which describe themselves.

#![allow(dead_code, reason = "the types exist to be described, never built")]

use serde_json::Value;
use utoipa::ToSchema;

#[derive(ToSchema)]
pub(crate) struct ChatMessageOut {
    /// Always `assistant`.
    role: String,
    content: Option<String>,
    refusal: Option<String>,
}

#[derive(ToSchema)]
pub(crate) struct ChatChoice {
    index: u32,
    message: ChatMessageOut,
    /// `stop`, `length` or `error`.
    finish_reason: String,
    logprobs: Option<Value>,
}

#[derive(ToSchema)]
pub(crate) struct ChatUsage {
    prompt_tokens: u64,
    completion_tokens: u64,
    total_tokens: u64,
}

/// A `chat.completion` (non-streaming answer).
#[derive(ToSchema)]
pub(crate) struct ChatCompletion {
    /// `chatcmpl-...`
    id: String,
    /// Always `chat.completion`.
    object: String,
    created: i64,
    model: String,
    choices: Vec<ChatChoice>,
    usage: ChatUsage,
    /// Hermes extras: the pending interaction when the turn waits for the user.
    hermes: Option<Value>,
}

/// The request of `POST /v1/chat/completions` (other OpenAI fields are accepted and ignored).
#[derive(ToSchema)]
pub(crate) struct ChatCompletionRequest {
    /// The agent's name (`GET /v1/models`); optional when the key has one agent.
    model: Option<String>,
    /// OpenAI chat messages; text and image parts.
    messages: Vec<Value>,
    stream: Option<bool>,
    stream_options: Option<Value>,
}

/// One item of a response's `output`: `message`, `function_call` or `function_call_output`.
#[derive(ToSchema)]
pub(crate) struct ResponseItem {
    id: String,
    r#type: String,
    status: String,
    role: Option<String>,
    content: Option<Vec<Value>>,
    call_id: Option<String>,
    name: Option<String>,
    arguments: Option<String>,
    output: Option<String>,
}

#[derive(ToSchema)]
pub(crate) struct ResponseUsage {
    input_tokens: u64,
    output_tokens: u64,
    total_tokens: u64,
    input_tokens_details: Value,
    output_tokens_details: Value,
}

/// A Responses API `response` object.
#[derive(ToSchema)]
pub(crate) struct ResponseObject {
    /// `resp_` and 32 hex digits.
    id: String,
    /// Always `response`.
    object: String,
    created_at: i64,
    /// `queued`, `in_progress`, `completed`, `incomplete`, `failed` or `cancelled`.
    status: String,
    model: String,
    output: Vec<ResponseItem>,
    instructions: Option<String>,
    previous_response_id: Option<String>,
    store: bool,
    /// `auto` or `disabled`.
    truncation: String,
    error: Option<Value>,
    incomplete_details: Option<Value>,
    usage: Option<ResponseUsage>,
    /// Hermes extras: `session_id`, and the pending `interaction` of a waiting turn.
    hermes: Value,
}

/// The request of `POST /v1/responses` (other Responses API fields are accepted and ignored).
#[derive(ToSchema)]
pub(crate) struct ResponsesRequest {
    model: Option<String>,
    /// A string, or message items (`function_call*` and `reasoning` items are skipped).
    input: Value,
    instructions: Option<String>,
    previous_response_id: Option<String>,
    /// A conversation name (or `{ "id": name }`) continuing from its latest response.
    conversation: Option<Value>,
    /// Explicit history; wins over chaining.
    conversation_history: Option<Vec<Value>>,
    /// Default true.
    store: Option<bool>,
    stream: Option<bool>,
    /// `auto` keeps the last 100 history messages.
    truncation: Option<String>,
}

/// The request of `POST /v1/runs`: a Responses request plus `session_id`.
#[derive(ToSchema)]
pub(crate) struct RunRequest {
    input: Value,
    model: Option<String>,
    instructions: Option<String>,
    session_id: Option<String>,
    previous_response_id: Option<String>,
    conversation_history: Option<Vec<Value>>,
}

#[derive(ToSchema)]
pub(crate) struct RunStarted {
    object: String,
    /// `run_` and 32 hex digits.
    run_id: String,
    /// Always `started`.
    status: String,
    session_id: String,
}

/// A run's state (`hermes.run`).
#[derive(ToSchema)]
pub(crate) struct Run {
    object: String,
    run_id: String,
    /// `queued`, `running`, `waiting_for_approval`, `waiting_for_input`, `completed`,
    /// `failed` or `cancelled`.
    status: String,
    session_id: String,
    model: String,
    created_at: i64,
    updated_at: i64,
    last_event: Option<String>,
    output: Option<String>,
    usage: Option<Value>,
    error: Option<Value>,
    pending: Option<Value>,
}

#[derive(ToSchema)]
pub(crate) struct RunApproval {
    /// once, session, always or deny (approve/approved/allow mean once).
    choice: String,
}

#[derive(ToSchema)]
pub(crate) struct RunApprovalResponse {
    object: String,
    run_id: String,
    choice: String,
    resolved: u32,
}

#[derive(ToSchema)]
pub(crate) struct RunStopped {
    object: String,
    run_id: String,
    /// `cancelled`, or `stopping` if the worker has not stopped within 5 seconds.
    status: String,
}

/// A slice of a longer list (a job's runs, an event hook's deliveries, a session's messages).
#[derive(ToSchema)]
pub(crate) struct ObjectList {
    object: String,
    data: Vec<Value>,
    /// Whether older items exist beyond this slice.
    has_more: bool,
}
