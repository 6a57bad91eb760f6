//! The admin API's response shapes whose items are still the store's rows (audit entries,
//! usage lines, sessions, agents, ...), as the OpenAPI document describes them; the
//! end-to-end conformance test holds real responses to these. The rest answer with
//! `hermes_wire` types, which describe themselves.

#![allow(dead_code, reason = "the types exist to be described, never built")]

use serde_json::Value;
use utoipa::ToSchema;

/// A list of objects.
#[derive(ToSchema)]
pub(crate) struct ObjectList {
    object: String,
    data: Vec<Value>,
}

/// A session and a page of its messages (OpenAI message form, with `seq`).
#[derive(ToSchema)]
pub(crate) struct Transcript {
    session: Value,
    messages: Vec<Value>,
    has_more: bool,
}
