//! Logging, metrics and traces, set up the same way by every binary.
//!
//! Logs are JSON lines (or text for a terminal) and carry the fields of every enclosing span,
//! so a line logged deep inside a turn still names its `request_id` / `turn_id`, and, when
//! traces are exported, its `trace_id`. Metrics go to a Prometheus recorder rendered by the
//! `/metrics` endpoints. Traces go over OTLP when an endpoint is configured ([`otlp::plan`]);
//! [`context`] carries them from process to process.

pub mod context;
mod logfmt;
mod metrics;
pub mod otlp;
pub mod relay;
pub mod tasks;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::{Layer as _, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

use hermes_config::{LogFormat, TelemetryConfig};

pub use metrics::{metrics_handle, render_metrics};
pub use relay::init_through_socket;

/// Telemetry could not be initialised.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("invalid log filter {filter:?}: {source}")]
    Filter { filter: String, source: tracing_subscriber::filter::ParseError },
    #[error("cannot install the logger: {0}")]
    Install(String),
    #[error("cannot set up trace export: {0}")]
    Export(String),
}

/// What [`init`] installed; [`Telemetry::shutdown`] sends the spans still buffered.
#[must_use = "call shutdown() at exit, or the last spans are lost"]
pub struct Telemetry {
    traces: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Flushes and stops the exporter (call it outside the runtime's worker threads, with the
    /// runtime still alive: the exporter runs on it).
    pub fn shutdown(self) {
        if let Some(provider) = self.traces
            && let Err(e) = provider.shutdown_with_timeout(std::time::Duration::from_secs(5))
        {
            tracing::warn!(error = %e, "the last spans could not be exported");
        }
    }
}

/// Installs the global logger, the trace exporter (when configured) and the metrics
/// recorder; `service` is the default `service.name`. Once per process, inside a Tokio
/// runtime (the exporter batches on it).
pub fn init(cfg: &TelemetryConfig, service: &str) -> Result<Telemetry, TelemetryError> {
    let traces = match otlp::plan(cfg, |name| std::env::var(name).ok())? {
        Some(plan) => {
            relay::install(&plan);
            Some(otlp::provider(&plan, service)?)
        }
        None => None,
    };
    install(cfg, traces)
}

/// Installs the logger with `traces` (when exporting) and the metrics recorder.
fn install(cfg: &TelemetryConfig, traces: Option<SdkTracerProvider>) -> Result<Telemetry, TelemetryError> {
    let filter = match EnvFilter::try_from_default_env() {
        Ok(f) => f,
        Err(_) => EnvFilter::try_new(&cfg.log_filter)
            .map_err(|source| TelemetryError::Filter { filter: cfg.log_filter.clone(), source })?,
    };
    // Location and thread attributes and busy/idle timings cost per span and nobody reads them.
    // Spans are exported at `info` whatever the log filter (sandboxd logs only warnings, yet
    // its spans belong in the trace).
    let otel = traces.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("hermes"))
            .with_location(false)
            .with_threads(false)
            .with_tracked_inactivity(false)
            .with_filter(LevelFilter::INFO)
    });
    let registry = tracing_subscriber::registry().with(otel);
    let result = match cfg.log_format {
        LogFormat::Text => {
            registry.with(tracing_subscriber::fmt::layer().with_target(false).with_filter(filter)).try_init()
        }
        LogFormat::Json => {
            let json = tracing_subscriber::fmt::format()
                .json()
                .flatten_event(true)
                .with_current_span(false)
                .with_span_list(true)
                .with_target(true);
            registry
                .with(
                    tracing_subscriber::fmt::layer()
                        .json()
                        .flatten_event(true)
                        .with_current_span(false)
                        .with_span_list(true)
                        .event_format(logfmt::WithTraceIds(json))
                        .with_filter(filter),
                )
                .try_init()
        }
    };
    result.map_err(|e| TelemetryError::Install(e.to_string()))?;
    metrics_handle();
    Ok(Telemetry { traces })
}
