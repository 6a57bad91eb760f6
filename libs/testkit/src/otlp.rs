//! An OpenTelemetry collector for tests: takes OTLP traces over gRPC and over HTTP/protobuf,
//! keeps every span with its service, and answers as a collector does. The load test uses it
//! as the sink that tracing's overhead is measured against.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{TraceService, TraceServiceServer};
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::common::v1::{AnyValue as Any, KeyValue};
use prost::Message;
use tokio::net::TcpListener;

/// One span as received.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceivedSpan {
    /// The `service.name` of the process that sent it.
    pub service: String,
    pub name: String,
    /// Lowercase hex, as in a `traceparent`.
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent_span_id: String,
    /// `server`, `client`, `producer`, `consumer` or `internal`.
    pub kind: &'static str,
    /// Attribute values as text (numbers and booleans printed).
    pub attributes: BTreeMap<String, String>,
    /// OTLP status code: 0 unset, 1 ok, 2 error.
    pub status: i32,
}

impl ReceivedSpan {
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }
}

#[derive(Default)]
struct Collected {
    /// Count spans without keeping them (a load test's sink).
    forget: bool,
    received: std::sync::atomic::AtomicU64,
    spans: Mutex<Vec<ReceivedSpan>>,
    /// Export requests received, by transport.
    grpc_requests: Mutex<u64>,
    http_requests: Mutex<u64>,
}

impl Collected {
    fn take(&self, batch: ExportTraceServiceRequest) {
        if self.forget {
            let n: usize = batch.resource_spans.iter().flat_map(|r| &r.scope_spans).map(|s| s.spans.len()).sum();
            self.received.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
            return;
        }
        let mut spans = Vec::new();
        for resource in batch.resource_spans {
            let service = resource
                .resource
                .iter()
                .flat_map(|r| r.attributes.iter())
                .find(|kv| kv.key == "service.name")
                .map(|kv| text(kv.value.as_ref()))
                .unwrap_or_default();
            for span in resource.scope_spans.into_iter().flat_map(|s| s.spans) {
                spans.push(ReceivedSpan {
                    service: service.clone(),
                    name: span.name,
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: hex(&span.parent_span_id),
                    kind: match span.kind {
                        1 => "internal",
                        2 => "server",
                        3 => "client",
                        4 => "producer",
                        5 => "consumer",
                        _ => "unspecified",
                    },
                    attributes: attributes(&span.attributes),
                    status: span.status.map(|s| s.code).unwrap_or_default(),
                });
            }
        }
        self.received.fetch_add(spans.len() as u64, std::sync::atomic::Ordering::Relaxed);
        if let Ok(mut all) = self.spans.lock() {
            all.extend(spans);
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text(value: Option<&Any>) -> String {
    match value.and_then(|v| v.value.as_ref()) {
        Some(AnyValue::StringValue(s)) => s.clone(),
        Some(AnyValue::IntValue(i)) => i.to_string(),
        Some(AnyValue::DoubleValue(d)) => d.to_string(),
        Some(AnyValue::BoolValue(b)) => b.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn attributes(kvs: &[KeyValue]) -> BTreeMap<String, String> {
    kvs.iter().map(|kv| (kv.key.clone(), text(kv.value.as_ref()))).collect()
}

struct Grpc(Arc<Collected>);

#[tonic::async_trait]
impl TraceService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        if let Ok(mut n) = self.0.grpc_requests.lock() {
            *n += 1;
        }
        self.0.take(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse { partial_success: None }))
    }
}

async fn http_export(State(collected): State<Arc<Collected>>, body: Bytes) -> (StatusCode, Vec<u8>) {
    match ExportTraceServiceRequest::decode(body) {
        Ok(batch) => {
            if let Ok(mut n) = collected.http_requests.lock() {
                *n += 1;
            }
            collected.take(batch);
            (StatusCode::OK, ExportTraceServiceResponse { partial_success: None }.encode_to_vec())
        }
        Err(_) => (StatusCode::BAD_REQUEST, Vec::new()),
    }
}

/// A running collector (gRPC on one port, HTTP on another); stops when dropped.
pub struct OtlpReceiver {
    grpc_addr: SocketAddr,
    http_addr: SocketAddr,
    collected: Arc<Collected>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl OtlpReceiver {
    /// Starts on loopback ports of the system's choosing (`addr` 127.0.0.1:0), or on the given
    /// ones.
    pub async fn start() -> std::io::Result<Self> {
        Self::start_on("127.0.0.1:0", "127.0.0.1:0").await
    }

    pub async fn start_on(grpc: &str, http: &str) -> std::io::Result<Self> {
        Self::start_with(grpc, http, false).await
    }

    /// A sink that counts spans and keeps none (`forget`), for load tests.
    pub async fn start_with(grpc: &str, http: &str, forget: bool) -> std::io::Result<Self> {
        let collected = Arc::new(Collected { forget, ..Collected::default() });
        let grpc_listener = TcpListener::bind(grpc).await?;
        let http_listener = TcpListener::bind(http).await?;
        let (grpc_addr, http_addr) = (grpc_listener.local_addr()?, http_listener.local_addr()?);
        let service = TraceServiceServer::new(Grpc(collected.clone()));
        let grpc_task = tokio::spawn(async move {
            let incoming = tokio_stream::wrappers::TcpListenerStream::new(grpc_listener);
            let _ = tonic::transport::Server::builder().add_service(service).serve_with_incoming(incoming).await;
        });
        let app = Router::new().route("/v1/traces", post(http_export)).with_state(collected.clone());
        let http_task = tokio::spawn(async move {
            let _ = axum::serve(http_listener, app).await;
        });
        Ok(Self { grpc_addr, http_addr, collected, tasks: vec![grpc_task, http_task] })
    }

    /// The base URL for `OTEL_EXPORTER_OTLP_ENDPOINT` with `grpc`.
    pub fn grpc_url(&self) -> String {
        format!("http://{}", self.grpc_addr)
    }

    /// The base URL for `OTEL_EXPORTER_OTLP_ENDPOINT` with `http/protobuf` (`/v1/traces` below it).
    pub fn http_url(&self) -> String {
        format!("http://{}", self.http_addr)
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.collected.spans.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The spans of one trace.
    pub fn trace(&self, trace_id: &str) -> Vec<ReceivedSpan> {
        self.spans().into_iter().filter(|s| s.trace_id == trace_id).collect()
    }

    /// Spans received so far (kept or not).
    pub fn received(&self) -> u64 {
        self.collected.received.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Export requests received over (gRPC, HTTP).
    pub fn requests(&self) -> (u64, u64) {
        let read = |m: &Mutex<u64>| m.lock().map(|n| *n).unwrap_or_default();
        (read(&self.collected.grpc_requests), read(&self.collected.http_requests))
    }

    /// Waits until the spans satisfy `done`, at most `timeout`; the spans either way.
    pub async fn wait_for(&self, timeout: Duration, done: impl Fn(&[ReceivedSpan]) -> bool) -> Vec<ReceivedSpan> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let spans = self.spans();
            if done(&spans) || tokio::time::Instant::now() >= deadline {
                return spans;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
