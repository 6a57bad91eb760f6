//! The `gateway` role: chat platforms in and out. Telegram bots arrive by webhook
//! (`POST /telegram/{channel}`) or by long-poll, Slack apps by the Events API
//! (`POST /slack/{channel}/events`, `/interactive`) or Socket Mode, WeCom apps by their
//! encrypted callback (`/wecom/{channel}`) and WeCom AI bots by their long connection; a bot
//! that is polled or reached through a socket is served by one pod at a time
//! ([`leased`]); each
//! message is authorised, stored with the turn it starts and signalled to the workers; the
//! turn's answer comes back through the outbox, which any gateway pod delivers.

pub mod access;
pub mod agent_commands;
pub mod attachments;
mod background_commands;
pub mod commands;
mod conversation_commands;
pub mod cron_commands;
pub mod error;
pub mod events;
pub mod files;
pub mod goal_commands;
pub mod hooks;
mod inbound_limit;
pub mod incoming;
pub mod ingest;
pub mod interact;
pub mod leased;
pub mod outbox;
pub mod pairing;
mod reasoning_commands;
mod reasoning_shown;
pub mod route;
pub mod slack;
pub mod stream;
pub mod telegram;
mod voice;
mod voice_commands;
mod voice_spend;
pub mod wecom;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use hermes_cache::Cache;
use hermes_config::HermesConfig;
use hermes_http::{ErrorCode, Readiness, probe_router};
use hermes_queue::Broker;
use hermes_store::{SecretBox, Store};

/// What the gateway role needs, built by the composition root.
#[derive(Clone)]
pub struct GatewayContext {
    pub config: Arc<HermesConfig>,
    pub store: Store,
    pub broker: Broker,
    pub cache: Cache,
    pub secrets: Option<SecretBox>,
    pub readiness: Readiness,
}

/// The running gateway, shared by its tasks and handlers.
pub struct Gateway {
    pub config: Arc<HermesConfig>,
    pub store: Store,
    pub broker: Broker,
    pub cache: Cache,
    pub secrets: Option<SecretBox>,
    pub http: reqwest::Client,
    /// Which addresses a URL from a platform payload may name.
    pub outbound: Arc<hermes_net_policy::outbound::Policy>,
    /// Names this pod in leases.
    pub owner: String,
    /// This pod's turn events, for answers shown as they are written (set by [`run`]).
    pub events: Option<hermes_queue::EventHub>,
    /// WeCom API clients by channel (each caches its access token).
    pub wecom_clients:
        std::sync::Mutex<std::collections::HashMap<hermes_core::ChannelId, hermes_chat::wecom::WecomApi>>,
    /// The WeCom AI-bot sockets this pod holds, by channel.
    pub bot_links: std::sync::Mutex<std::collections::HashMap<hermes_core::ChannelId, wecom::socket::BotLink>>,
    /// Where voice notes are transcribed (`None`: no service configured, or `stt.enabled` off).
    transcriber: Option<voice::Transcriber>,
}

impl Gateway {
    pub fn new(ctx: &GatewayContext) -> Result<Self, reqwest::Error> {
        // Platforms' APIs and files: public addresses (or the operator's trusted hosts) only,
        // re-checked on redirects, no proxy from the environment, two minutes at the most.
        let mut trusted = ctx.config.outbound.trusted(&ctx.config.platforms);
        let stt = &ctx.config.stt;
        let endpoint = stt.endpoint();
        // The operator's transcription server may be in the cluster.
        trusted.extend(endpoint.as_ref().and_then(|e| {
            let url = reqwest::Url::parse(&e.base_url).ok()?;
            Some(format!("{}:{}", url.host_str()?, url.port_or_known_default()?))
        }));
        let transcriber = endpoint.map(|endpoint| voice::Transcriber {
            endpoint,
            language: stt.language.clone(),
            max_bytes: stt.max_bytes,
        });
        let policy = std::sync::Arc::new(hermes_net_policy::outbound::Policy::trusting(trusted));
        let http =
            hermes_net_policy::outbound::client_for(policy.clone(), Duration::from_secs(10), Duration::from_secs(120))?;
        Ok(Self {
            config: ctx.config.clone(),
            store: ctx.store.clone(),
            broker: ctx.broker.clone(),
            cache: ctx.cache.clone(),
            secrets: ctx.secrets.clone(),
            http,
            outbound: policy,
            owner: format!("gateway-{}", uuid::Uuid::now_v7().simple()),
            wecom_clients: Default::default(),
            bot_links: Default::default(),
            events: None,
            transcriber,
        })
    }

    fn lease_ttl(&self) -> Duration {
        Duration::from_secs(self.config.gateway.lease_seconds.max(3))
    }
}

/// The gateway's HTTP routes (platform webhooks).
pub fn router(gw: Arc<Gateway>) -> Router {
    Router::new()
        .route("/hooks/{id}", post(hooks::receive))
        .route("/telegram/{channel}", post(telegram::webhook::receive))
        .route("/slack/{channel}/events", post(slack::http::events))
        .route("/slack/{channel}/interactive", post(slack::http::interactive))
        .route("/slack/{channel}/commands", post(slack::http::command))
        .route("/wecom/{channel}", get(wecom::http::verify).post(wecom::http::receive))
        .layer(axum::middleware::from_fn_with_state(gw.clone(), inbound_limit::limit))
        .with_state(gw)
}

/// The gateway's own work: long-polled bots, kept sockets and the outbox, until `shutdown`.
pub fn spawn_tasks(gw: &Arc<Gateway>, shutdown: &CancellationToken) -> [tokio::task::JoinHandle<()>; 5] {
    [
        hermes_telemetry::tasks::spawn("gateway_telegram_poller", telegram::poller::run(gw.clone(), shutdown.clone())),
        hermes_telemetry::tasks::spawn("gateway_slack_socket", slack::socket::run(gw.clone(), shutdown.clone())),
        hermes_telemetry::tasks::spawn("gateway_wecom_socket", wecom::socket::run(gw.clone(), shutdown.clone())),
        hermes_telemetry::tasks::spawn("gateway_outbox", outbox::run(gw.clone(), shutdown.clone())),
        hermes_telemetry::tasks::spawn("gateway_events", events::run(gw.clone(), shutdown.clone())),
    ]
}

/// Serves webhooks on `gateway.bind`, polls bots and delivers replies until `shutdown`.
pub async fn run(ctx: GatewayContext, shutdown: CancellationToken) -> std::io::Result<()> {
    let listener = TcpListener::bind(&ctx.config.gateway.bind).await?;
    tracing::info!(addr = %listener.local_addr()?, "gateway listening");
    let mut gw = Gateway::new(&ctx).map_err(std::io::Error::other)?;
    gw.events = Some(ctx.broker.event_hub().await.map_err(std::io::Error::other)?);
    let gw = Arc::new(gw);
    let tasks = spawn_tasks(&gw, &shutdown);
    let app = router(gw)
        .merge(probe_router(ctx.readiness))
        .fallback(|| async {
            hermes_http::ApiError::not_found(ErrorCode::NotFound, "no chat platform is bound to this path")
        })
        .layer(axum::middleware::from_fn(hermes_http::request_span));
    let served = hermes_http::serve(listener, app, shutdown).await;
    for task in tasks {
        let _ = task.await;
    }
    served
}
