//! Where traces go: `telemetry.otlp_*` first, then the standard `OTEL_*` variables, as every
//! OpenTelemetry SDK reads them; off when neither names an endpoint.

use std::time::Duration;

use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor;

use hermes_config::{OtlpProtocol, TelemetryConfig};

use crate::TelemetryError;

/// How this process exports its spans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportPlan {
    pub protocol: OtlpProtocol,
    /// The URL given to the exporter; `None` lets the exporter read `OTEL_EXPORTER_OTLP_*`
    /// itself (it appends `/v1/traces` to a generic HTTP endpoint, as the specification says).
    pub endpoint: Option<String>,
}

/// Resolves the export from the configuration and the environment (`env` reads a variable).
pub fn plan(cfg: &TelemetryConfig, env: impl Fn(&str) -> Option<String>) -> Result<Option<ExportPlan>, TelemetryError> {
    let set = |name: &str| env(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
    if set("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
        || set("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"))
    {
        return Ok(None);
    }
    let protocol = match cfg.otlp_protocol {
        Some(p) => p,
        None => match set("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").or_else(|| set("OTEL_EXPORTER_OTLP_PROTOCOL")) {
            Some(name) => {
                name.parse().map_err(|e| TelemetryError::Export(format!("OTEL_EXPORTER_OTLP_PROTOCOL: {e}")))?
            }
            None => OtlpProtocol::default(),
        },
    };
    let endpoint = match cfg.otlp_endpoint.as_deref().map(str::trim).filter(|e| !e.is_empty()) {
        // A base URL like OTEL_EXPORTER_OTLP_ENDPOINT: HTTP gets the traces path.
        Some(base) => Some(match protocol {
            OtlpProtocol::HttpProtobuf if !base.ends_with("/v1/traces") => {
                format!("{}/v1/traces", base.trim_end_matches('/'))
            }
            _ => base.to_owned(),
        }),
        None if set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some() || set("OTEL_EXPORTER_OTLP_ENDPOINT").is_some() => {
            None
        }
        None => return Ok(None),
    };
    Ok(Some(ExportPlan { protocol, endpoint }))
}

/// The tracer provider for `plan`, batching on the Tokio runtime this is called in.
pub(crate) fn provider(plan: &ExportPlan, service: &str) -> Result<SdkTracerProvider, TelemetryError> {
    let failed = |e: &dyn std::fmt::Display| TelemetryError::Export(e.to_string());
    let exporter = match plan.protocol {
        OtlpProtocol::Grpc => {
            let builder = SpanExporter::builder().with_tonic();
            match &plan.endpoint {
                Some(url) => builder.with_endpoint(url.clone()).build(),
                None => builder.build(),
            }
        }
        OtlpProtocol::HttpProtobuf => {
            let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().map_err(|e| failed(&e))?;
            let builder =
                SpanExporter::builder().with_http().with_http_client(client).with_protocol(Protocol::HttpBinary);
            match &plan.endpoint {
                Some(url) => builder.with_endpoint(url.clone()).build(),
                None => builder.build(),
            }
        }
    }
    .map_err(|e| failed(&e))?;
    Ok(provider_for(exporter, service))
}

/// A provider batching `exporter`'s spans on the current Tokio runtime.
pub(crate) fn provider_for(exporter: SpanExporter, service: &str) -> SdkTracerProvider {
    let processor = BatchSpanProcessor::builder(exporter, opentelemetry_sdk::runtime::Tokio).build();
    SdkTracerProvider::builder().with_span_processor(processor).with_resource(resource(service)).build()
}

/// `service.name` is `OTEL_SERVICE_NAME` (or `service.name` in `OTEL_RESOURCE_ATTRIBUTES`)
/// when set, else `service`; the version is ours.
fn resource(service: &str) -> Resource {
    let named = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|v| !v.trim().is_empty())
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| v.contains("service.name="));
    let builder = Resource::builder()
        .with_attribute(opentelemetry::KeyValue::new("service.namespace", "hermes-cloud"))
        .with_attribute(opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    if named { builder.build() } else { builder.with_service_name(service.to_owned()).build() }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn plan_with(cfg: &TelemetryConfig, vars: &[(&str, &str)]) -> Result<Option<ExportPlan>, TelemetryError> {
        let vars: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        plan(cfg, |name| vars.get(name).cloned())
    }

    #[test]
    fn nothing_is_exported_without_an_endpoint() {
        assert_eq!(plan_with(&TelemetryConfig::default(), &[]).unwrap(), None);
        assert_eq!(plan_with(&TelemetryConfig::default(), &[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]).unwrap(), None);
    }

    #[test]
    fn the_configured_endpoint_is_a_base_url_like_the_standard_variable() {
        let cfg = TelemetryConfig { otlp_endpoint: Some("http://collector:4318/".into()), ..Default::default() };
        let plan = plan_with(&cfg, &[]).unwrap().unwrap();
        assert_eq!(plan.protocol, OtlpProtocol::HttpProtobuf);
        assert_eq!(plan.endpoint.as_deref(), Some("http://collector:4318/v1/traces"));
        let grpc = TelemetryConfig { otlp_protocol: Some(OtlpProtocol::Grpc), ..cfg };
        assert_eq!(plan_with(&grpc, &[]).unwrap().unwrap().endpoint.as_deref(), Some("http://collector:4318/"));
    }

    #[test]
    fn the_standard_variables_turn_export_on_and_choose_the_protocol() {
        let cfg = TelemetryConfig::default();
        let plan = plan_with(
            &cfg,
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://otel:4317"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")],
        )
        .unwrap()
        .unwrap();
        // The exporter reads the endpoint itself.
        assert_eq!(plan, ExportPlan { protocol: OtlpProtocol::Grpc, endpoint: None });
        let traces_only = plan_with(
            &cfg,
            &[
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://otel:4318/v1/traces"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"),
            ],
        )
        .unwrap()
        .unwrap();
        assert_eq!(traces_only.protocol, OtlpProtocol::HttpProtobuf);
    }

    #[test]
    fn an_unknown_protocol_fails_loudly_and_the_standard_off_switches_work() {
        let cfg = TelemetryConfig { otlp_endpoint: Some("http://collector:4318".into()), ..Default::default() };
        let err = plan_with(&cfg, &[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")]).unwrap_err().to_string();
        assert!(err.contains("http/json") && err.contains("grpc"), "{err}");
        assert_eq!(plan_with(&cfg, &[("OTEL_SDK_DISABLED", "true")]).unwrap(), None);
        assert_eq!(plan_with(&cfg, &[("OTEL_TRACES_EXPORTER", "none")]).unwrap(), None);
    }
}
