//! The Prometheus recorder behind every `/metrics` endpoint.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

static METRICS: OnceLock<PrometheusHandle> = OnceLock::new();

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
