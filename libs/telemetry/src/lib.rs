//! Logging and metrics set-up shared by every binary.
//!
//! Logs are JSON lines (or text for a terminal) and carry the fields of every enclosing span,
//! so a line logged deep inside a turn still names its `request_id` / `turn_id`. Metrics go to
//! a Prometheus recorder rendered by the `/metrics` endpoints.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
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

/// Bucket bounds (seconds) of the latencies dashboards and alerts take fleet-wide percentiles
/// of (`histogram_quantile` over every pod's buckets): a turn, a model call, a tool call.
/// Every other histogram is rendered as a summary, each pod's own quantiles (the load test
/// reads the worker's phases that way).
const LATENCY_BUCKETS: [f64; 15] =
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

/// The process-wide Prometheus recorder, installed on first use.
pub fn metrics_handle() -> &'static PrometheusHandle {
    METRICS.get_or_init(|| {
        // Fails only on empty buckets, which these are not.
        let builder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Full("hermes_turn_seconds".to_owned()), &LATENCY_BUCKETS)
            .and_then(|b| {
                b.set_buckets_for_metric(Matcher::Full("hermes_llm_call_seconds".to_owned()), &LATENCY_BUCKETS)
            })
            .and_then(|b| b.set_buckets_for_metric(Matcher::Full("hermes_tool_seconds".to_owned()), &LATENCY_BUCKETS))
            .unwrap_or_else(|_| PrometheusBuilder::new());
        let recorder = builder.build_recorder();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_have_buckets_for_fleet_percentiles_and_other_histograms_stay_summaries() {
        metrics_handle();
        metrics::histogram!("hermes_turn_seconds", "status" => "completed").record(0.2);
        metrics::histogram!("hermes_llm_call_seconds", "outcome" => "ok", "provider" => "openai").record(1.5);
        metrics::histogram!("hermes_tool_seconds", "tool" => "terminal", "ok" => "true").record(0.03);
        metrics::histogram!("hermes_turn_phase_seconds", "phase" => "pickup").record(0.001);
        let page = render_metrics();
        assert!(page.contains(r#"hermes_turn_seconds_bucket{status="completed",le="0.25"} 1"#), "{page}");
        assert!(
            page.contains(r#"hermes_llm_call_seconds_bucket{outcome="ok",provider="openai",le="2.5"} 1"#),
            "{page}"
        );
        assert!(page.contains(r#"hermes_tool_seconds_bucket{tool="terminal",ok="true",le="0.05"} 1"#), "{page}");
        // The worker's phases stay per-pod quantiles, which the load test reads.
        assert!(page.contains(r#"hermes_turn_phase_seconds{phase="pickup",quantile="0.5"}"#), "{page}");
        assert!(!page.contains("hermes_turn_phase_seconds_bucket"), "{page}");
    }
}
