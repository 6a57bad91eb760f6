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
