//! The `api` role: the per-tenant, OpenAI-compatible HTTP API. It never runs an agent: it
//! authenticates, writes the turn to Postgres, signals a worker over RabbitMQ and relays the
//! worker's events back to the client.

// The admin plane (`/admin/v1` and the console), served here beside `/v1`.
pub mod admin;

// Handlers: each one is routed below and imports none of the others.
mod api_jobs;
mod channels;
mod chat;
mod cron;
mod discovery;
mod event_hooks;
mod files;
mod goals;
mod interactions;
mod models;
mod openapi;
mod responses;
mod run_events;
mod runs;
mod sessions;
mod usage;
mod webhooks;

// What the handlers share.
mod agents;
mod answers;
mod auth;
mod completion;
mod documented;
mod errors;
mod headers;
mod idempotency;
mod limits;
mod responses_object;
mod responses_stream;
mod responses_wire;
mod runs_object;
mod shown;
mod state;
mod submit;
mod targets;
mod visible;
mod wait;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use hermes_cache::Cache;
use hermes_config::HermesConfig;
use hermes_http::{ErrorCode, Readiness, probe_router};
use hermes_queue::{Broker, EventHub};
use hermes_store::Store;

use crate::state::{AppState, RoleState};

/// What the API role needs, built by the composition root.
#[derive(Clone)]
pub struct ApiContext {
    pub config: Arc<HermesConfig>,
    pub store: Store,
    pub broker: Broker,
    pub cache: Cache,
    pub readiness: Readiness,
    /// Seals bot credentials (`None` without `secrets.master_key`: binding bots is refused).
    pub secrets: Option<hermes_store::SecretBox>,
}

/// Why the API cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Queue(#[from] hermes_queue::QueueError),
    #[error("cannot build the outbound HTTP client: {0}")]
    Http(#[from] reqwest::Error),
    #[error(transparent)]
    Admin(#[from] crate::admin::StartError),
}

/// The API's router (also used by tests that drive it in-process).
pub async fn router(ctx: ApiContext) -> Result<Router, StartError> {
    let events = ctx.broker.event_hub().await?;
    router_with(ctx, events)
}

/// `/v1` and `/admin/v1` with the role's one state, beside the probes.
fn router_with(ctx: ApiContext, events: EventHub) -> Result<Router, StartError> {
    let admin = admin::state(admin::AdminContext {
        config: ctx.config.clone(),
        store: ctx.store.clone(),
        cache: ctx.cache.clone(),
        events: Some(events.clone()),
        broker: Some(ctx.broker.clone()),
        secrets: ctx.secrets.clone(),
    })?;
    let admin_routes = admin::routes(&admin);
    let v1 = AppState::new(state::Shared {
        http: admin::platform_client(&ctx.config)?,
        config: ctx.config.clone(),
        store: ctx.store,
        broker: ctx.broker,
        cancels: ctx.cache.cancel_bus(),
        events,
        limiter: ctx.cache.rate_limiter(),
        turn_slots: ctx.cache.turn_slots(),
        secrets: ctx.secrets,
    });
    // The body limit layers `/v1` alone, as it always has: the admin routes keep axum's default.
    let routes = v1_routes()
        .fallback(|| async { hermes_http::ApiError::not_found(ErrorCode::NotFound, "no such endpoint") })
        .method_not_allowed_fallback(|| async {
            hermes_http::ApiError::new(
                axum::http::StatusCode::METHOD_NOT_ALLOWED,
                "invalid_request_error",
                Some(ErrorCode::MethodNotAllowed),
                "this endpoint does not accept that HTTP method",
            )
        })
        .layer(DefaultBodyLimit::max(ctx.config.http.max_body_bytes))
        .merge(admin_routes)
        .with_state(RoleState { v1, admin });
    Ok(routes.merge(probe_router(ctx.readiness)).layer(axum::middleware::from_fn(hermes_http::request_span)))
}

/// The tenant API's routes.
fn v1_routes() -> Router<RoleState> {
    Router::new()
        .route("/openapi.json", get(openapi::document))
        .route("/v1/chat/completions", post(chat::chat_completions))
        .route("/v1/responses", post(responses::create))
        .route("/v1/responses/{id}", get(responses::get).delete(responses::delete))
        .route("/v1/runs", post(runs::create))
        .route("/v1/runs/{id}", get(runs::get))
        .route("/v1/runs/{id}/events", get(run_events::events))
        .route("/v1/runs/{id}/approval", post(runs::approval))
        .route("/v1/runs/{id}/stop", post(runs::stop))
        .route("/v1/models", get(models::list_models))
        .route("/v1/capabilities", get(discovery::capabilities))
        .route("/v1/toolsets", get(discovery::toolsets))
        .route("/v1/skills", get(discovery::skills))
        .route("/v1/usage", get(usage::usage))
        .route("/v1/files/{id}", get(files::get))
        .route("/v1/files/{id}/content", get(files::content))
        .route("/v1/interactions/{id}", post(interactions::answer_interaction))
        .route("/v1/channels", get(channels::list).post(channels::create))
        .route("/v1/channels/{id}", get(channels::get).patch(channels::update).delete(channels::delete))
        .route("/v1/channels/{id}/pairings", get(channels::pairings))
        .route("/v1/channels/{id}/pairings/approve", post(channels::approve))
        .route("/v1/cron/jobs", get(cron::list).post(cron::create))
        .route("/v1/cron/jobs/{id}", get(cron::get).delete(cron::delete))
        .route("/v1/cron/jobs/{id}/pause", post(cron::pause))
        .route("/v1/cron/jobs/{id}/resume", post(cron::resume))
        .route("/v1/cron/jobs/{id}/run", post(cron::run))
        .route("/v1/cron/jobs/{id}/runs", get(cron::runs))
        .route("/v1/webhooks", get(webhooks::list).post(webhooks::create))
        .route("/v1/webhooks/{id}", get(webhooks::get).patch(webhooks::update).delete(webhooks::delete))
        .route("/v1/webhooks/{id}/rotate-secret", post(webhooks::rotate_secret))
        .route("/v1/event-hooks", get(event_hooks::list).post(event_hooks::create))
        .route("/v1/event-hooks/{id}", get(event_hooks::get).patch(event_hooks::update).delete(event_hooks::delete))
        .route("/v1/event-hooks/{id}/ping", post(event_hooks::ping))
        .route("/v1/event-hooks/{id}/deliveries", get(event_hooks::deliveries))
        .route("/api/jobs", get(api_jobs::list).post(api_jobs::create))
        .route("/api/jobs/{id}", get(api_jobs::get).patch(api_jobs::update).delete(api_jobs::delete))
        .route("/api/jobs/{id}/pause", post(api_jobs::pause))
        .route("/api/jobs/{id}/resume", post(api_jobs::resume_job))
        .route("/api/jobs/{id}/run", post(api_jobs::run))
        .route("/api/sessions", get(sessions::list).post(sessions::create))
        .route("/api/sessions/{id}", get(sessions::get).patch(sessions::rename).delete(sessions::delete))
        .route("/api/sessions/{id}/messages", get(sessions::messages))
        .route("/api/sessions/{id}/goal", get(goals::get).put(goals::set).patch(goals::change).delete(goals::delete))
        .route("/api/sessions/{id}/fork", post(sessions::fork))
        .route("/api/sessions/{id}/export", get(sessions::export))
}

/// Serves the API on `http.bind` until `shutdown`.
pub async fn run(ctx: ApiContext, shutdown: CancellationToken) -> std::io::Result<()> {
    let listener = TcpListener::bind(&ctx.config.http.bind).await?;
    tracing::info!(addr = %listener.local_addr()?, "api listening");
    let events = ctx.broker.event_hub().await.map_err(std::io::Error::other)?;
    let app = router_with(ctx, events.clone()).map_err(std::io::Error::other)?;
    // RabbitMQ restarts are ridden out by the connection's own recovery. Should the hub stop for
    // good, requests still get their answers from Postgres (see `wait.rs`), and `/readyz`
    // reports the broker, so the API keeps serving rather than dropping every open request.
    hermes_telemetry::tasks::spawn("api_background", async move {
        events.ended().await;
        tracing::error!("the API's event hub stopped (RabbitMQ connection lost); turns are followed in Postgres");
    });
    hermes_http::serve(listener, app, shutdown).await
}
