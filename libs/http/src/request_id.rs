//! Every request gets an id (the caller's `X-Request-Id` when it is sane, else a new UUIDv7),
//! a span carrying it, so every log line of the request names it, and the id on the response.

use axum::extract::Request;
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
    let span = tracing::info_span!(
        "request",
        request_id = %id,
        method = %req.method(),
        path = %req.uri().path(),
        tenant.id = tracing::field::Empty,
        session.id = tracing::field::Empty,
        turn.id = tracing::field::Empty,
    );
    if let Ok(v) = HeaderValue::from_str(&id) {
        req.headers_mut().insert(REQUEST_ID_HEADER, v.clone());
        let started = std::time::Instant::now();
        let mut resp = next.run(req).instrument(span.clone()).await;
        let status = resp.status().as_u16();
        span.in_scope(|| {
            tracing::info!(status, elapsed_ms = started.elapsed().as_secs_f64() * 1000.0, "request finished");
        });
        resp.headers_mut().insert(REQUEST_ID_HEADER, v);
        return resp;
    }
    next.run(req).instrument(span).await
}
