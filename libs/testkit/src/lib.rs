//! Test and demo support. [`ScriptedLlm`] is an OpenAI-compatible chat-completions server
//! whose answers a test scripts in advance; it records every request it receives. With an
//! empty script it answers by itself (echo, or a `terminal` call for messages starting with
//! `$ `), which makes it a usable demo model and a load-test backend (`hermes-mock-llm`).

mod anthropic;
mod reply;
mod server;
pub mod slack;
pub mod telegram;
pub mod wecom;

pub use reply::ScriptedReply;
pub use server::{RecordedRequest, ScriptedLlm};
