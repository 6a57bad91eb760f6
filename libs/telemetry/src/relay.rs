//! Spans out of a sandbox. A sandbox has no network, so sandboxd exports OTLP/HTTP to a unix
//! socket the worker listens on in the sandbox's socket directory ([`init_through_socket`]);
//! the worker forwards what it receives to its own collector ([`SpanRelay`]).
//!
//! Programs in the sandbox can reach that socket too, so the relay forwards only spans of
//! traces the worker itself handed to a sandbox lately ([`remember_sent`]): a program can add
//! noise to its own tool call's trace, never to another tenant's, nor start traces.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig, WithHttpConfig};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use prost::Message;

use hermes_config::{OtlpProtocol, TelemetryConfig};

use crate::otlp::ExportPlan;
use crate::{Telemetry, TelemetryError};

/// The largest batch a sandbox may send (the OTLP exporter's default batch is far smaller).
const MAX_BATCH_BYTES: usize = 4 * 1024 * 1024;
/// How long a trace handed to a sandbox stays open to its spans (a command's longest run).
const TRACE_WINDOW: Duration = Duration::from_secs(30 * 60);
const MAX_REMEMBERED: usize = 100_000;

static RELAY: OnceLock<SpanRelay> = OnceLock::new();
static SENT: OnceLock<Mutex<HashMap<[u8; 16], Instant>>> = OnceLock::new();

/// This process's relay, when it exports traces.
pub fn relay() -> Option<&'static SpanRelay> {
    RELAY.get()
}

pub(crate) fn install(plan: &ExportPlan) {
    // Where the spans go is resolved once, as the exporter resolves it.
    let url = plan.endpoint.clone().unwrap_or_else(|| match plan.protocol {
        OtlpProtocol::Grpc => env_endpoint("", 4317),
        OtlpProtocol::HttpProtobuf => env_endpoint("/v1/traces", 4318),
    });
    let _ = RELAY.set(SpanRelay { protocol: plan.protocol, url, http: reqwest::Client::new(), grpc: OnceLock::new() });
}

/// Notes that a call in trace `trace_id` (32 hex digits) went to a sandbox.
pub fn remember_sent(trace_id: &str) {
    let Some(id) = decode_trace_id(trace_id) else { return };
    let sent = SENT.get_or_init(Mutex::default);
    if let Ok(mut sent) = sent.lock() {
        let now = Instant::now();
        if sent.len() >= MAX_REMEMBERED {
            sent.retain(|_, at| now.duration_since(*at) < TRACE_WINDOW);
        }
        sent.insert(id, now);
    }
}

fn was_sent(id: &[u8]) -> bool {
    let Ok(id) = <[u8; 16]>::try_from(id) else { return false };
    SENT.get()
        .and_then(|s| s.lock().ok())
        .is_some_and(|sent| sent.get(&id).is_some_and(|at| at.elapsed() < TRACE_WINDOW))
}

fn decode_trace_id(hex: &str) -> Option<[u8; 16]> {
    let mut id = [0u8; 16];
    for (i, byte) in id.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(id)
}

/// Forwards sandboxes' spans to this process's collector.
pub struct SpanRelay {
    protocol: OtlpProtocol,
    /// The collector's traces URL (gRPC: its base URL).
    url: String,
    http: reqwest::Client,
    grpc: OnceLock<TraceServiceClient<tonic::transport::Channel>>,
}

impl SpanRelay {
    /// Serves sandboxd's OTLP/HTTP exports on `listener` until the task is dropped.
    pub async fn serve(&'static self, listener: tokio::net::UnixListener) {
        while let Ok((stream, _)) = listener.accept().await {
            crate::tasks::spawn("telemetry_relay", async move {
                let service = hyper::service::service_fn(move |req| self.receive(req));
                let _ =
                    hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    }

    async fn receive(
        &self,
        req: hyper::Request<hyper::body::Incoming>,
    ) -> Result<hyper::Response<Full<Bytes>>, std::convert::Infallible> {
        let status = match Limited::new(req.into_body(), MAX_BATCH_BYTES).collect().await {
            Ok(body) => match ExportTraceServiceRequest::decode(body.to_bytes()) {
                Ok(batch) => {
                    self.forward(only_sent_traces(batch)).await;
                    http::StatusCode::OK
                }
                Err(_) => http::StatusCode::BAD_REQUEST,
            },
            Err(_) => http::StatusCode::PAYLOAD_TOO_LARGE,
        };
        let mut resp = hyper::Response::new(Full::new(Bytes::new()));
        *resp.status_mut() = status;
        resp.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/x-protobuf"));
        Ok(resp)
    }

    async fn forward(&self, batch: ExportTraceServiceRequest) {
        if batch.resource_spans.is_empty() {
            return;
        }
        let sent = match self.protocol {
            OtlpProtocol::Grpc => {
                let client = self.grpc.get_or_init(|| {
                    let channel = tonic::transport::Endpoint::from_shared(self.url.clone())
                        .unwrap_or_else(|_| tonic::transport::Endpoint::from_static("http://localhost:4317"))
                        .connect_lazy();
                    TraceServiceClient::new(channel)
                });
                client.clone().export(batch).await.map(|_| ()).map_err(|e| e.to_string())
            }
            OtlpProtocol::HttpProtobuf => self
                .http
                .post(&self.url)
                .header(http::header::CONTENT_TYPE, "application/x-protobuf")
                .timeout(Duration::from_secs(10))
                .body(batch.encode_to_vec())
                .send()
                .await
                .and_then(reqwest::Response::error_for_status)
                .map(|_| ())
                .map_err(|e| e.to_string()),
        };
        if let Err(e) = sent {
            tracing::debug!(error = %e, "cannot forward a sandbox's spans");
        }
    }
}

/// The traces endpoint from the standard variables, as the exporter resolves it: the traces
/// variable verbatim, else the generic base URL with `path`, else localhost.
fn env_endpoint(path: &str, port: u16) -> String {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .or_else(|| var("OTEL_EXPORTER_OTLP_ENDPOINT").map(|base| format!("{}{path}", base.trim_end_matches('/'))))
        .unwrap_or_else(|| format!("http://localhost:{port}{path}"))
}

/// The batch with only the spans of traces this worker handed to a sandbox.
fn only_sent_traces(mut batch: ExportTraceServiceRequest) -> ExportTraceServiceRequest {
    for resource in &mut batch.resource_spans {
        for scope in &mut resource.scope_spans {
            scope.spans.retain(|span| was_sent(&span.trace_id));
        }
        resource.scope_spans.retain(|scope| !scope.spans.is_empty());
    }
    batch.resource_spans.retain(|resource| !resource.scope_spans.is_empty());
    batch
}

/// sandboxd's exporter: OTLP/HTTP to the worker's relay socket.
#[derive(Debug)]
struct UnixSocketClient {
    path: PathBuf,
}

#[async_trait::async_trait]
impl HttpClient for UnixSocketClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let exchange = async {
            let stream = tokio::net::UnixStream::connect(&self.path).await?;
            let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
            crate::tasks::spawn("telemetry_relay_connection", conn);
            let (parts, body) = request.into_parts();
            let resp = sender.send_request(hyper::Request::from_parts(parts, Full::new(body))).await?;
            let (parts, body) = resp.into_parts();
            let body = Limited::new(body, 64 * 1024).collect().await?.to_bytes();
            Ok::<_, HttpError>(Response::from_parts(parts, body))
        };
        tokio::time::timeout(Duration::from_secs(10), exchange).await?
    }
}

/// [`crate::init`] for sandboxd: its spans go to the relay at `socket`.
pub fn init_through_socket(cfg: &TelemetryConfig, service: &str, socket: PathBuf) -> Result<Telemetry, TelemetryError> {
    let exporter = SpanExporter::builder()
        .with_http()
        .with_http_client(UnixSocketClient { path: socket })
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint("http://worker.local/v1/traces")
        .build()
        .map_err(|e| TelemetryError::Export(e.to_string()))?;
    crate::install(cfg, Some(crate::otlp::provider_for(exporter, service)))
}

#[cfg(test)]
mod tests {
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};

    use super::*;

    fn span(trace: [u8; 16], name: &str) -> Span {
        Span { trace_id: trace.to_vec(), span_id: vec![1; 8], name: name.into(), ..Default::default() }
    }

    fn hex(id: [u8; 16]) -> String {
        id.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn only_spans_of_traces_handed_to_a_sandbox_are_forwarded() {
        let (ours, forged) = ([7u8; 16], [9u8; 16]);
        remember_sent(&hex(ours));
        let batch = ExportTraceServiceRequest {
            resource_spans: vec![
                ResourceSpans {
                    scope_spans: vec![ScopeSpans {
                        spans: vec![span(ours, "exec"), span(forged, "injected")],
                        ..Default::default()
                    }],
                    ..Default::default()
                },
                // A program in the sandbox exporting a trace of its own: dropped whole.
                ResourceSpans {
                    scope_spans: vec![ScopeSpans { spans: vec![span(forged, "fake root")], ..Default::default() }],
                    ..Default::default()
                },
            ],
        };
        let kept = only_sent_traces(batch);
        let names: Vec<&str> = kept
            .resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .flat_map(|s| &s.spans)
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(names, ["exec"]);
        assert_eq!(kept.resource_spans.len(), 1, "a batch left empty is not forwarded");
    }

    #[test]
    fn a_malformed_trace_id_is_never_remembered() {
        assert_eq!(decode_trace_id("zz"), None);
        assert_eq!(decode_trace_id("0102"), None);
        assert_eq!(decode_trace_id(&"ab".repeat(16)), Some([0xab; 16]));
    }
}
