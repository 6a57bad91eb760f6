//! `/healthz` (the process runs), `/readyz` (its dependencies answer) and `/metrics`.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};

/// One dependency check: `Ok` when it answers.
pub type ReadinessCheck = Arc<dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync>;

/// The checks behind `/readyz`.
#[derive(Clone, Default)]
pub struct Readiness {
    checks: Vec<(&'static str, ReadinessCheck)>,
}

impl Readiness {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a named check.
    pub fn with(mut self, name: &'static str, check: ReadinessCheck) -> Self {
        self.checks.push((name, check));
        self
    }

    /// Runs every check (2 s each, concurrently); `true` when all pass.
    pub async fn run(&self) -> (bool, Map<String, Value>) {
        let futures = self.checks.iter().map(|(name, check)| {
            let fut = check();
            async move {
                let result = match tokio::time::timeout(Duration::from_secs(2), fut).await {
                    Ok(r) => r,
                    Err(_) => Err("timed out".to_owned()),
                };
                (*name, result)
            }
        });
        let results = futures_util::future::join_all(futures).await;
        let mut all_ok = true;
        let mut map = Map::new();
        for (name, result) in results {
            match result {
                Ok(()) => {
                    map.insert(name.to_owned(), json!("ok"));
                }
                Err(e) => {
                    all_ok = false;
                    map.insert(name.to_owned(), json!(e));
                }
            }
        }
        (all_ok, map)
    }
}

/// The ops routes, served on `ops.bind` (never on a public port: metrics name tenants' load).
pub fn ops_router(readiness: Readiness) -> Router {
    probe_router(readiness.clone()).merge(Router::new().route("/metrics", get(metrics)).with_state(readiness))
}

/// `/healthz` and `/readyz` alone, for a role's public listener (load balancers probe it).
pub fn probe_router(readiness: Readiness) -> Router {
    Router::new()
        .route("/healthz", get(|| async { axum::Json(json!({"status": "ok"})) }))
        .route("/readyz", get(ready))
        .with_state(readiness)
}

async fn ready(State(readiness): State<Readiness>) -> Response {
    let (ok, checks) = readiness.run().await;
    let status = if ok { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    let body = json!({"status": if ok { "ready" } else { "not_ready" }, "checks": checks});
    (status, axum::Json(body)).into_response()
}

async fn metrics() -> Response {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], hermes_telemetry::render_metrics()).into_response()
}
