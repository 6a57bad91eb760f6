//! Test and demo support. [`ScriptedLlm`] is an OpenAI-compatible chat-completions server
//! whose answers a test scripts in advance; it records every request it receives. With an
//! empty script it answers by itself (echo, or a `terminal` call for messages starting with
//! `$ `), which makes it a usable demo model and a load-test backend (`hermes-mock-llm`).
#![allow(
    clippy::disallowed_methods,
    reason = "test servers start their tasks freely; the rule is for the service's own"
)]

mod anthropic;
pub mod docs;
mod emulated;
pub mod fetching_extractor;
pub mod image_api;
pub mod images;
pub mod mcp;
pub mod multipart;
pub mod oidc;
pub mod otlp;
mod prompt_cache;
pub mod receiver;
mod reply;
mod responses;
mod served;
mod server;
pub mod slack;
pub mod slack_socket;
pub mod speech;
pub mod telegram;
mod telegram_html;
pub mod tls_host;
pub mod tts;
pub mod web;
pub mod wecom;
pub mod wecom_bot;

pub use reply::ScriptedReply;
pub use server::{RecordedRequest, ScriptedLlm};

/// Serves `app` on a free loopback port until the process ends; its address.
pub(crate) async fn serve_loopback(app: axum::Router) -> std::io::Result<std::net::SocketAddr> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(addr)
}
