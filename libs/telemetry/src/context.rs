//! Carrying a trace across processes: the `traceparent` of a span to hand on, and a received
//! one made the parent of a span here.

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use hermes_core::trace::{TRACEPARENT, TraceParent};

/// The context to hand on from `span`: `None` when tracing is off (no exporter) or the span
/// is disabled, so nothing is sent where nothing is traced.
pub fn of(span: &tracing::Span) -> Option<TraceParent> {
    let cx = span.context();
    let span = cx.span();
    let sc = span.span_context();
    if !sc.is_valid() {
        return None;
    }
    TraceParent::parse(&format!("00-{}-{}-{:02x}", sc.trace_id(), sc.span_id(), sc.trace_flags().to_u8()))
}

/// [`of`] the current span.
pub fn current() -> Option<TraceParent> {
    of(&tracing::Span::current())
}

/// Makes `parent` (from another process) the trace parent of `span`, which must not have been
/// entered yet; its log lines keep their place under the local spans. Without tracing, or
/// without a parent, nothing happens and `span` starts its own trace.
pub fn adopt(span: &tracing::Span, parent: Option<&TraceParent>) {
    let Some(parent) = parent else { return };
    let (Ok(trace), Ok(id)) = (TraceId::from_hex(parent.trace_id()), SpanId::from_hex(parent.span_id())) else {
        return;
    };
    let flags = if parent.sampled() { TraceFlags::SAMPLED } else { TraceFlags::default() };
    let remote = SpanContext::new(trace, id, flags, true, TraceState::default());
    // Fails only without the OpenTelemetry layer (tracing off) or on a started span.
    let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(remote));
}

/// The `traceparent` of an HTTP request (a malformed one is ignored: the request starts a
/// new trace rather than failing).
pub fn from_headers(headers: &http::HeaderMap) -> Option<TraceParent> {
    headers.get(TRACEPARENT).and_then(|v| v.to_str().ok()).and_then(TraceParent::parse)
}

/// Adds the current span's `traceparent` to outgoing HTTP headers.
pub fn inject(headers: &mut http::HeaderMap) {
    if let Some(tp) = current()
        && let Ok(value) = http::HeaderValue::from_str(tp.as_str())
    {
        headers.insert(TRACEPARENT, value);
    }
}

/// The span of one gRPC call (`/pkg.Service/Method`), as the client (`"client"`) or the server
/// (`"server"`) sees it, named and described by the RPC conventions.
pub fn rpc_span(path: &str, kind: &'static str) -> tracing::Span {
    let full = path.trim_start_matches('/');
    let (service, method) = full.split_once('/').unwrap_or((full, ""));
    tracing::info_span!(
        "rpc",
        otel.name = %full,
        otel.kind = kind,
        rpc.system = "grpc",
        rpc.service = %service,
        rpc.method = %method,
    )
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::TracerProvider as _;
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    #[test]
    fn a_received_context_is_continued_and_handed_on_with_a_new_parent_span() {
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
        let subscriber =
            tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
        tracing::subscriber::with_default(subscriber, || {
            let received = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
            let span = tracing::info_span!("turn");
            adopt(&span, Some(&received));
            let sent = of(&span).expect("a traced span hands its context on");
            assert_eq!(sent.trace_id(), received.trace_id(), "the same trace");
            assert_ne!(sent.span_id(), received.span_id(), "with this span as the parent");
            assert!(sent.sampled());
            let child = span.in_scope(current).unwrap();
            assert_eq!(child.span_id(), sent.span_id(), "inside the span, the current context is the span's");
            let fresh = of(&tracing::info_span!("request")).unwrap();
            assert_ne!(fresh.trace_id(), received.trace_id(), "a span without a parent starts a trace");
        });
    }

    #[test]
    fn without_an_exporter_nothing_is_handed_on_and_nothing_breaks() {
        let span = tracing::info_span!("request");
        let parent = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        adopt(&span, parent.as_ref());
        assert_eq!(of(&span), None, "no layer, no context: no header goes out");
        let mut headers = http::HeaderMap::new();
        headers.insert(TRACEPARENT, http::HeaderValue::from_static("00-bad"));
        assert_eq!(from_headers(&headers), None, "a malformed header starts a new trace");
        inject(&mut headers);
        assert_eq!(headers.get(TRACEPARENT).map(|v| v.as_bytes()), Some(&b"00-bad"[..]));
    }
}
