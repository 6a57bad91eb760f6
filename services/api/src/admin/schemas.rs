//! The admin API's response shapes whose items are still the store's rows (audit entries,
//! usage lines, sessions, agents, ...), as the OpenAPI document describes them; the
//! end-to-end conformance test holds real responses to these. The rest answer with
//! `hermes_wire` types, which describe themselves.

#![allow(dead_code, reason = "the types exist to be described, never built")]

use serde_json::Value;
use utoipa::ToSchema;

#[derive(ToSchema)]
pub(crate) struct Actor {
    /// `person`, `token`, `cli`, `chat` or `system`.
    kind: String,
    id: String,
    label: String,
}

#[derive(ToSchema)]
pub(crate) struct AuditEntry {
    id: i64,
    tenant_id: Option<String>,
    at: String,
    actor: Actor,
    /// Such as `member.role_changed`, `api_key.created`.
    action: String,
    object_kind: String,
    object_id: String,
    /// The object before and after, secrets masked.
    before: Option<Value>,
    after: Option<Value>,
    request_id: Option<String>,
    source_address: Option<String>,
}

#[derive(ToSchema)]
pub(crate) struct AuditList {
    object: String,
    data: Vec<AuditEntry>,
    /// The `cursor` of the next page; `null` on the last.
    next: Option<i64>,
}

/// A list of objects.
#[derive(ToSchema)]
pub(crate) struct ObjectList {
    object: String,
    data: Vec<Value>,
}

/// A page of objects.
#[derive(ToSchema)]
pub(crate) struct ObjectPage {
    object: String,
    data: Vec<Value>,
    has_more: bool,
}

/// A session and a page of its messages (OpenAI message form, with `seq`).
#[derive(ToSchema)]
pub(crate) struct Transcript {
    session: Value,
    messages: Vec<Value>,
    has_more: bool,
}

/// One group's usage.
#[derive(ToSchema)]
pub(crate) struct UsageLine {
    /// The day, the agent's name, the model or the source.
    key: String,
    calls: i64,
    prompt_tokens: i64,
    completion_tokens: i64,
    cached_tokens: i64,
    cost_usd: f64,
    /// Calls of models without a price (not in `cost_usd`).
    unpriced_calls: i64,
    turns: i64,
    tool_ms: i64,
    sandbox_ms: i64,
}

#[derive(ToSchema)]
pub(crate) struct UsageReport {
    from: String,
    to: String,
    by: String,
    lines: Vec<UsageLine>,
    total: UsageLine,
}

/// A tenant's webhook triggers and event endpoints.
#[derive(ToSchema)]
pub(crate) struct Hooks {
    webhooks: Vec<Value>,
    event_hooks: Vec<Value>,
}
