//! axum glue shared by the HTTP-serving roles: OpenAI-style errors, JSON bodies refused in
//! that style, request ids in every log line, and the ops endpoints (`/healthz`, `/readyz`,
//! `/metrics`). Also the two parsers of what strangers send over HTTP, kept here so they can
//! be fuzzed without the database stack: the chat-completion request ([`chat_request`]) and
//! signed webhook deliveries ([`signed`]).

pub mod chat_request;
mod error;
mod json;
mod ops;
mod request_id;
pub mod signed;

pub use error::{ApiError, ErrorCode};
pub use json::{ApiJson, BodyLimit, json_rejection};
pub use ops::{Readiness, ReadinessCheck, ops_router, probe_router};
pub use request_id::{REQUEST_ID_HEADER, request_span};

use axum::serve::ListenerExt;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Serves `app` on `listener` until `shutdown`, letting open requests finish. Nagle's delay
/// is off: an SSE stream writes small chunks, and each waited for the client's delayed ACK
/// (40 ms a streamed answer on Linux).
pub async fn serve(listener: TcpListener, app: axum::Router, shutdown: CancellationToken) -> std::io::Result<()> {
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
    });
    axum::serve(listener, app).with_graceful_shutdown(async move { shutdown.cancelled().await }).await
}
