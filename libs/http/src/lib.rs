//! axum glue shared by the HTTP-serving roles: OpenAI-style errors, JSON bodies refused in
//! that style, request ids in every log line, and the ops endpoints (`/healthz`, `/readyz`,
//! `/metrics`). Also the two parsers of what strangers send over HTTP, kept here so they can
//! be fuzzed without the database stack: the chat-completion request ([`chat_request`]) and
//! signed webhook deliveries ([`signed`]).

pub mod chat_request;
mod sampling;
pub use sampling::{Asked, allowed as allowed_settings, requested as requested_settings};
mod error;
mod handle;
mod json;
mod ops;
mod request_id;
pub mod signed;

pub use error::{ApiError, ErrorCode};
pub use handle::StateHandle;
pub use json::{ApiJson, BodyLimit, json_rejection};
pub use ops::{Readiness, ReadinessCheck, ops_router, probe_router};
pub use request_id::{REQUEST_ID_HEADER, request_span};

use std::convert::Infallible;
use std::task::{Context, Poll};

use axum::serve::{IncomingStream, Listener, ListenerExt};
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
    axum::serve(listener, SharedRouter(app.with_state(())))
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
}

/// Gives every connection the same router, its handlers turned into routes once. axum's own
/// make-service does that turning (`with_state`) for each connection, rebuilding the route
/// table: about 18 KB a connection, 37 MB for 2,000 open requests. Each request is told its
/// connection's peer address (`ConnectInfo<SocketAddr>`), which the audit log records.
#[derive(Clone)]
struct SharedRouter(axum::Router);

impl<L: Listener<Addr = std::net::SocketAddr>> tower::Service<IncomingStream<'_, L>> for SharedRouter {
    type Response = WithPeer;
    type Error = Infallible;
    type Future = std::future::Ready<Result<WithPeer, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, stream: IncomingStream<'_, L>) -> Self::Future {
        std::future::ready(Ok(WithPeer { router: self.0.clone(), peer: *stream.remote_addr() }))
    }
}

/// The shared router, for one connection.
#[derive(Clone)]
struct WithPeer {
    router: axum::Router,
    peer: std::net::SocketAddr,
}

impl tower::Service<axum::extract::Request> for WithPeer {
    type Response = axum::response::Response;
    type Error = Infallible;
    type Future = <axum::Router as tower::Service<axum::extract::Request>>::Future;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: axum::extract::Request) -> Self::Future {
        request.extensions_mut().insert(axum::extract::ConnectInfo(self.peer));
        tower::Service::call(&mut self.router, request)
    }
}
