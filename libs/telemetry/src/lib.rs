//! Logging and metrics set-up shared by every binary.
//!
//! Logs are JSON lines (or text for a terminal) and carry the fields of every enclosing span,
//! so a line logged deep inside a turn still names its `request_id` / `turn_id`. Metrics go to
//! a Prometheus recorder rendered by the `/metrics` endpoints.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use hermes_config::{LogFormat, TelemetryConfig};

/// Telemetry could not be initialised.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("invalid log filter {filter:?}: {source}")]
    Filter { filter: String, source: tracing_subscriber::filter::ParseError },
    #[error("cannot install the logger: {0}")]
    Install(String),
}

static METRICS: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the global logger and metrics recorder. Safe to call once per process.
pub fn init(cfg: &TelemetryConfig) -> Result<(), TelemetryError> {
    let filter = match EnvFilter::try_from_default_env() {
        Ok(f) => f,
        Err(_) => EnvFilter::try_new(&cfg.log_filter)
            .map_err(|source| TelemetryError::Filter { filter: cfg.log_filter.clone(), source })?,
    };
    let registry = tracing_subscriber::registry().with(filter);
    let result = match cfg.log_format {
        LogFormat::Text => registry.with(tracing_subscriber::fmt::layer().with_target(false)).try_init(),
        LogFormat::Json => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .flatten_event(true)
                    .with_current_span(false)
                    .with_span_list(true)
                    .with_target(true),
            )
            .try_init(),
    };
    result.map_err(|e| TelemetryError::Install(e.to_string()))?;
    metrics_handle();
    Ok(())
}

/// The process-wide Prometheus recorder, installed on first use.
pub fn metrics_handle() -> &'static PrometheusHandle {
    METRICS.get_or_init(|| {
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        // Fails only if another recorder is installed already (a test harness); then our
        // handle renders an empty page, which is harmless.
        let _ = metrics::set_global_recorder(recorder);
        handle
    })
}

/// Renders all metrics in Prometheus text format.
pub fn render_metrics() -> String {
    metrics_handle().render()
}
