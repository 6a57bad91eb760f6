//! JSON log lines that name their trace: `trace_id` and `span_id` first, so a log search
//! leads to the trace and back.

use std::fmt;

use opentelemetry::trace::TraceContextExt;
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// Wraps a JSON event format; lines outside any traced span are unchanged.
pub(crate) struct WithTraceIds<F>(pub(crate) F);

impl<S, N, F> FormatEvent<S, N> for WithTraceIds<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'w> FormatFields<'w> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let ids = ctx.lookup_current().and_then(|span| {
            let id = span.id();
            drop(span);
            // The layer's data sits in the span's extensions, which nothing holds here.
            tracing::dispatcher::get_default(|d| tracing_opentelemetry::get_otel_context(&id, d))
        });
        let Some((trace, span)) = ids.and_then(|cx| {
            let sc = cx.span().span_context().clone();
            sc.is_valid().then(|| (sc.trace_id(), sc.span_id()))
        }) else {
            return self.0.format_event(ctx, writer, event);
        };
        let mut line = String::with_capacity(256);
        self.0.format_event(ctx, Writer::new(&mut line), event)?;
        match line.strip_prefix('{') {
            Some(rest) => write!(writer, "{{\"trace_id\":\"{trace}\",\"span_id\":\"{span}\",{rest}"),
            None => writer.write_str(&line),
        }
    }
}
