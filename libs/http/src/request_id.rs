//! Every request gets an id (the caller's `X-Request-Id` when it is sane, else a new UUIDv7),
//! a span carrying it, so every log line of the request names it, and the id on the response.
//! The span is the OpenTelemetry HTTP server span: it continues the caller's `traceparent`.

use axum::extract::{MatchedPath, Request};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

pub const REQUEST_ID_HEADER: &str = "x-request-id";

fn sane(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
}

/// axum middleware: `axum::middleware::from_fn(request_span)`.
pub async fn request_span(mut req: Request, next: Next) -> Response {
    let id = req
        .headers()
        .get(REQUEST_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| sane(v))
        .map(str::to_owned)
        .unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
    let route = req.extensions().get::<MatchedPath>().map(|p| p.as_str().to_owned());
    let name = match &route {
        Some(route) => format!("{} {route}", req.method()),
        None => req.method().to_string(),
    };
    let span = tracing::info_span!(
        "request",
        otel.name = %name,
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        request_id = %id,
        http.request.method = %req.method(),
        url.path = %req.uri().path(),
        http.route = route,
        http.response.status_code = tracing::field::Empty,
        tenant.id = tracing::field::Empty,
        session.id = tracing::field::Empty,
        turn.id = tracing::field::Empty,
    );
    hermes_telemetry::context::adopt(&span, hermes_telemetry::context::from_headers(req.headers()).as_ref());
    if let Ok(v) = HeaderValue::from_str(&id) {
        req.headers_mut().insert(REQUEST_ID_HEADER, v.clone());
        let started = std::time::Instant::now();
        let mut resp = next.run(req).instrument(span.clone()).await;
        let status = resp.status().as_u16();
        span.record("http.response.status_code", status);
        if resp.status().is_server_error() {
            span.record("otel.status_code", "ERROR");
        }
        span.in_scope(|| {
            tracing::info!(status, elapsed_ms = started.elapsed().as_secs_f64() * 1000.0, "request finished");
        });
        resp.headers_mut().insert(REQUEST_ID_HEADER, v);
        return resp;
    }
    next.run(req).instrument(span).await
}
