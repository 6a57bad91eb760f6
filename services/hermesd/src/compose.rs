//! The composition root: connect the shared infrastructure once, hand it to the selected
//! roles, run them as tasks under one shutdown token.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use hermes_cache::Cache;
use hermes_config::{HermesConfig, SandboxBackend, SandboxConfig};
use hermes_http::{Readiness, ReadinessCheck};
use hermes_queue::Broker;
use hermes_store::{SecretBox, Store};

use crate::cli::Roles;

/// The one place `sandbox.backend` is dispatched: this crate links every backend.
async fn sandbox_backend(cfg: &SandboxConfig) -> anyhow::Result<Arc<dyn hermes_sandbox::Sandboxes>> {
    Ok(match cfg.backend {
        SandboxBackend::Docker => Arc::new(hermes_sandbox::docker::DockerSandboxes::connect(cfg).await?),
        SandboxBackend::Local => Arc::new(hermes_sandbox::local::LocalSandboxes::new(cfg)?),
        SandboxBackend::Kubernetes => Arc::new(hermes_sandbox_kube::KubeSandboxes::connect(cfg).await?),
    })
}

/// Retries `connect` for up to a minute: in a cluster, dependencies may start after us.
async fn with_retry<T, E: std::fmt::Display, F, Fut>(what: &str, mut connect: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut delay = Duration::from_millis(200);
    loop {
        match connect().await {
            Ok(v) => return Ok(v),
            Err(e) if tokio::time::Instant::now() < deadline => {
                tracing::warn!(error = %e, "cannot connect to {what} yet; retrying");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(5));
            }
            Err(e) => anyhow::bail!("cannot connect to {what}: {e}"),
        }
    }
}

/// What every role shares: connected once, cloned into each role's context.
#[derive(Clone)]
struct Shared {
    config: Arc<HermesConfig>,
    store: Store,
    cache: Cache,
    broker: Broker,
    secrets: Option<SecretBox>,
    readiness: Readiness,
}

pub async fn run(config: HermesConfig, roles: Roles, shutdown: CancellationToken) -> anyhow::Result<()> {
    let config = Arc::new(config);
    let store =
        with_retry("postgres", || Store::connect(&config.database.url, config.database.max_connections)).await?;
    if roles.migrate_only {
        store.migrate().await.context("migration failed")?;
        tracing::info!("migrations applied");
        return Ok(());
    }
    if config.database.migrate_on_start {
        store.migrate().await.context("migration failed")?;
    }
    let cache = with_retry("redis", || Cache::connect(&config.redis.url, &config.redis.key_prefix)).await?;
    let name = format!("hermesd-{}", std::process::id());
    let broker = with_retry("rabbitmq", || Broker::connect(&config.rabbitmq, &name)).await?;
    let secrets = SecretBox::from_config(config.secrets.master_key.as_deref())?;
    let readiness = readiness(&store, &cache, &broker);
    let shared = Shared { config, store, cache, broker, secrets, readiness };

    let mut tasks: JoinSet<anyhow::Result<()>> = JoinSet::new();
    spawn_roles(&shared, &roles, &shutdown, &mut tasks).await?;
    tracing::info!(?roles, "hermesd started");
    let result = until_all_end(tasks, &shutdown).await;
    shared.broker.close().await;
    tracing::info!("hermesd stopped");
    result
}

/// Starts the ops listener (when bound) and each selected role as a task of `tasks`.
async fn spawn_roles(
    shared: &Shared,
    roles: &Roles,
    shutdown: &CancellationToken,
    tasks: &mut JoinSet<anyhow::Result<()>>,
) -> anyhow::Result<()> {
    let ops_bind = &shared.config.ops.bind;
    if !ops_bind.is_empty() {
        let listener = tokio::net::TcpListener::bind(ops_bind).await.context("cannot bind ops.bind")?;
        tracing::info!(addr = %listener.local_addr()?, "ops listener (healthz, readyz, metrics)");
        let app = hermes_http::ops_router(shared.readiness.clone());
        spawn_role(tasks, shutdown, |token| hermes_http::serve(listener, app, token));
    }
    if roles.api {
        let Shared { config, store, cache, broker, secrets, readiness } = shared.clone();
        let ctx = hermes_api::ApiContext { config, store, broker, cache, readiness, secrets };
        spawn_role(tasks, shutdown, |token| hermes_api::run(ctx, token));
    }
    if roles.worker {
        let ctx = worker_context(shared, shutdown).await?;
        spawn_role(tasks, shutdown, |token| hermes_worker::run(ctx, token));
    }
    if roles.gateway {
        let Shared { config, store, cache, broker, secrets, readiness } = shared.clone();
        let ctx = hermes_gateway::GatewayContext { config, store, broker, cache, secrets, readiness };
        spawn_role(tasks, shutdown, |token| hermes_gateway::run(ctx, token));
    }
    if roles.scheduler {
        let Shared { config, store, broker, cache, .. } = shared.clone();
        let ctx = hermes_scheduler::SchedulerContext { config, store, broker, cache };
        spawn_role(tasks, shutdown, |token| async move {
            hermes_scheduler::run(ctx, token).await;
            anyhow::Ok(())
        });
    }
    Ok(())
}

/// Runs a role as a task of `tasks`, handing it its own clone of the shutdown token.
fn spawn_role<F, E>(
    tasks: &mut JoinSet<anyhow::Result<()>>,
    shutdown: &CancellationToken,
    run: impl FnOnce(CancellationToken) -> F,
) where
    F: std::future::Future<Output = Result<(), E>> + Send + 'static,
    anyhow::Error: From<E>,
{
    let role = run(shutdown.clone());
    tasks.spawn(async move { Ok(role.await?) });
}

/// The worker's context: the sandbox backend (its reaper started) and the model HTTP client.
async fn worker_context(shared: &Shared, shutdown: &CancellationToken) -> anyhow::Result<hermes_worker::WorkerContext> {
    let config = &shared.config;
    let sandboxes = sandbox_backend(&config.sandbox).await?;
    tracing::info!(backend = ?config.sandbox.backend, "sandbox backend ready");
    let reaper_token = shutdown.clone();
    hermes_telemetry::tasks::spawn(
        "sandbox_reaper",
        hermes_sandbox::run_reaper(
            sandboxes.clone(),
            std::sync::Arc::new(hermes_worker::DeletedInStore(shared.store.clone())),
            Duration::from_secs(60),
            reaper_token,
        ),
    );
    let trusted = config.outbound.trusted(&config.platforms);
    let http = hermes_llm::http_client(
        Duration::from_secs(config.llm.connect_timeout_seconds),
        Duration::from_secs(config.llm.request_timeout_seconds),
        std::sync::Arc::new(hermes_net_policy::outbound::Policy::trusting(trusted)),
    )?;
    Ok(hermes_worker::WorkerContext {
        config: config.clone(),
        store: shared.store.clone(),
        cache: shared.cache.clone(),
        broker: shared.broker.clone(),
        sandboxes,
        secrets: shared.secrets.clone(),
        http,
    })
}

/// Waits for every task to end; the first to fail shuts the others down, and its error
/// (the last one, if several fail) is the result.
async fn until_all_end(mut tasks: JoinSet<anyhow::Result<()>>, shutdown: &CancellationToken) -> anyhow::Result<()> {
    let mut result = Ok(());
    while let Some(joined) = tasks.join_next().await {
        let outcome = joined.map_err(anyhow::Error::from).and_then(|r| r);
        if let Err(e) = outcome {
            tracing::error!(error = %e, "a role failed; shutting down");
            shutdown.cancel();
            result = Err(e);
        }
    }
    result
}

fn readiness(store: &Store, cache: &Cache, broker: &Broker) -> Readiness {
    let (store, cache, broker) = (store.clone(), cache.clone(), broker.clone());
    let schema_store = store.clone();
    let pg: ReadinessCheck = Arc::new(move || {
        let store = store.clone();
        Box::pin(async move {
            match store.is_primary().await {
                Ok(true) => Ok(()),
                Ok(false) => Err("a standby (read-only): waiting for a primary".to_owned()),
                Err(e) => Err(e.to_string()),
            }
        })
    });
    // A role never serves on a schema older than it needs (the chart's GitOps mode migrates
    // in a Job of its own, which may not have run yet).
    let schema: ReadinessCheck = Arc::new(move || {
        let store = schema_store.clone();
        Box::pin(async move {
            match store.schema_lag().await {
                Ok(None) => Ok(()),
                Ok(Some((applied, needed))) => {
                    Err(format!("behind: migration {applied} applied, this build needs {needed} (run hermesd migrate)"))
                }
                Err(e) => Err(format!("cannot read the schema version ({e}); run hermesd migrate")),
            }
        })
    });
    let redis: ReadinessCheck = Arc::new(move || {
        let cache = cache.clone();
        Box::pin(async move { cache.ping().await.map_err(|e| e.to_string()) })
    });
    let amqp: ReadinessCheck = Arc::new(move || {
        let connected = broker.is_connected();
        Box::pin(async move { if connected { Ok(()) } else { Err("disconnected".to_owned()) } })
    });
    Readiness::new().with("postgres", pg).with("schema", schema).with("redis", redis).with("rabbitmq", amqp)
}
