//! The `gateway` role: chat-platform ingress and egress (Telegram, Slack, WeCom).
//!
//! This release serves only its HTTP listener with the ops endpoints; platform adapters,
//! channel bindings and pairing arrive with the chat-gateway issue. The role exists now so
//! deployments and probes have their final shape.

use std::sync::Arc;

use axum::Router;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use hermes_config::HermesConfig;
use hermes_http::{Readiness, ops_router};

/// What the gateway role needs.
#[derive(Clone)]
pub struct GatewayContext {
    pub config: Arc<HermesConfig>,
    pub readiness: Readiness,
}

/// Serves the gateway listener on `gateway.bind` until `shutdown`.
pub async fn run(ctx: GatewayContext, shutdown: CancellationToken) -> std::io::Result<()> {
    let listener = TcpListener::bind(&ctx.config.gateway.bind).await?;
    tracing::info!(addr = %listener.local_addr()?, "gateway listening (no chat platforms are bound yet)");
    let app = Router::new()
        .merge(ops_router(ctx.readiness))
        .fallback(|| async { hermes_http::ApiError::not_found("not_found", "no chat platform is bound to this path") })
        .layer(axum::middleware::from_fn(hermes_http::request_span));
    hermes_http::serve(listener, app, shutdown).await
}
