//! The gRPC client span of every call to sandboxd (OpenTelemetry RPC conventions), whose
//! `traceparent` goes in the call's metadata: sandboxd's own spans join the tool's trace.

use std::task::{Context, Poll};

use tonic::body::Body;
use tonic::transport::Channel;
use tower::Service;
use tracing::Instrument;
use tracing::instrument::Instrumented;

use hermes_core::trace::TRACEPARENT;

/// A channel whose calls are traced.
#[derive(Clone)]
pub struct Traced(pub(crate) Channel);

impl Service<http::Request<Body>> for Traced {
    type Response = <Channel as Service<http::Request<Body>>>::Response;
    type Error = <Channel as Service<http::Request<Body>>>::Error;
    type Future = Instrumented<<Channel as Service<http::Request<Body>>>::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Service::<http::Request<Body>>::poll_ready(&mut self.0, cx)
    }

    fn call(&mut self, mut request: http::Request<Body>) -> Self::Future {
        let span = hermes_telemetry::context::rpc_span(request.uri().path(), "client");
        if let Some(tp) = hermes_telemetry::context::of(&span)
            && let Ok(value) = http::HeaderValue::from_str(tp.as_str())
        {
            // The relay takes sandboxd's spans of this trace, and of no other.
            hermes_telemetry::relay::remember_sent(tp.trace_id());
            request.headers_mut().insert(TRACEPARENT, value);
        }
        self.0.call(request).instrument(span)
    }
}
