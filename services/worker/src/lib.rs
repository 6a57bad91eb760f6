//! The `worker` role: consumes "session has work", takes the session lock, claims the turn's
//! lease and runs the agent loop, checkpointing every message to Postgres and publishing
//! events. Any worker may die at any point: the lease expires, the reaper republishes, and
//! the next worker resumes from the last checkpoint.

mod aside;
mod attachments;
mod background;
mod budget;
mod children;
mod commands;
mod cron_script;
mod deleted_tenants;
mod egress;
mod events;
mod every;
mod goals;
mod heartbeat;
mod held;
mod inbox;
mod journal;
mod judge;
mod keys;
mod media_meter;
mod models;
mod phases;
mod presence;
mod review;
mod sandbox_secrets;
mod sandbox_specs;
mod session;
mod shares;
mod skills;
mod titles;
mod tools;
mod turn;
mod watches;
mod workspace;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use hermes_cache::Cache;
use hermes_config::HermesConfig;
use hermes_queue::{Broker, QueueError, WorkConsumer};
use hermes_sandbox::Sandboxes;
use hermes_store::{SecretBox, Store};

pub use deleted_tenants::DeletedInStore;

/// What the worker role needs, built by the composition root.
#[derive(Clone)]
pub struct WorkerContext {
    pub config: Arc<HermesConfig>,
    pub store: Store,
    pub cache: Cache,
    pub broker: Broker,
    pub sandboxes: Arc<dyn Sandboxes>,
    pub secrets: Option<SecretBox>,
    pub http: reqwest::Client,
}

/// The worker could not start or lost its work queue.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("cannot consume work: {0}")]
    Queue(#[from] QueueError),
    /// The broker connection is gone for good: the process should exit and be restarted.
    #[error("the work consumer closed (RabbitMQ connection lost)")]
    ConsumerClosed,
}

/// Shared by every turn this worker runs.
pub(crate) struct Runtime {
    pub ctx: WorkerContext,
    pub worker_id: String,
    /// What every lease owner of this process starts with (`{worker_id}/{incarnation}`): the
    /// key of its presence lock. A restarted worker with a configured id gets a new one, so its
    /// predecessor's turns are seen to be orphaned.
    pub lease_prefix: String,
    /// Cancelled on shutdown: sessions stop claiming further turns.
    pub draining: CancellationToken,
    /// Cancelled when draining took too long: running turns hand their lease back.
    pub abandon: CancellationToken,
    /// Turns running here, by id: the heartbeat keeps their leases, a cancellation reaches the
    /// one it names.
    pub running: heartbeat::Running,
    /// Turns taking their session lock and claim at once: as many as the database pool has
    /// connections. Under a burst (10,000 deliveries at once) the rest wait here, cheaply,
    /// instead of all queueing for the pool until its timeout: then claims failed, turns were
    /// handed back and tried again, and session locks ran out before their claims. (Planning
    /// is not held here: it may wait on a cron script or an MCP server.)
    pub starts: tokio::sync::Semaphore,
    /// What the models of every turn here are built with.
    pub models: Arc<models::ModelDeps>,
    /// What the tools of every turn here are made from.
    pub toolkit: tools::Toolkit,
}

/// A name for this worker process in leases and logs.
pub fn default_worker_id() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "worker".into());
    let nonce = uuid::Uuid::now_v7().simple().to_string();
    format!("{host}-{}-{}", std::process::id(), &nonce[nonce.len() - 6..])
}

/// Runs the worker until `shutdown`, then drains: running turns get `worker.drain_seconds` to
/// finish; after that they are handed back (resumable) and the worker returns.
pub async fn run(ctx: WorkerContext, shutdown: CancellationToken) -> Result<(), WorkerError> {
    let cfg = ctx.config.clone();
    let worker_id = cfg.worker.id.clone().unwrap_or_else(default_worker_id);
    let toolkit = tools::build::toolkit(&ctx, &shutdown);
    let sandbox_secrets = toolkit.sandbox_secrets.clone();
    let proxy = egress::EgressProxy::new(ctx.store.clone(), &cfg.sandbox, sandbox_secrets.clone());
    ctx.sandboxes.set_egress(Arc::new(proxy));
    ctx.sandboxes.set_specs(sandbox_specs::AgentSpecs::new(ctx.store.clone(), &cfg.sandbox, sandbox_secrets));
    sync_bundled_skills(&ctx.store).await;
    let incarnation = uuid::Uuid::now_v7().simple().to_string();
    let lease_prefix = format!("{worker_id}/{}", &incarnation[incarnation.len() - 8..]);
    let mut consumer = ctx.broker.consume_work(cfg.worker.max_concurrent_turns, &worker_id).await?;
    let presence = presence::keep_presence(ctx.store.clone(), lease_prefix.clone()).await;
    let rt = Arc::new(Runtime {
        models: Arc::new(model_deps(&ctx)),
        ctx,
        worker_id: worker_id.clone(),
        lease_prefix,
        draining: shutdown.clone(),
        abandon: CancellationToken::new(),
        running: Default::default(),
        starts: tokio::sync::Semaphore::new(cfg.database.max_connections as usize),
        toolkit,
    });
    listen_for_cancellations(&rt, &shutdown);
    // One heartbeat for all the turns, until the last has drained.
    let beats = CancellationToken::new();
    hermes_telemetry::tasks::spawn("worker_heartbeat", heartbeat::keep_beating(rt.clone(), beats.clone()));
    // Background reviews, one at a time beside the turns.
    hermes_telemetry::tasks::spawn("worker_reviews", review::run_reviews(rt.clone(), shutdown.clone()));
    // Watched background processes, polled beside the turns.
    hermes_telemetry::tasks::spawn("worker_process_watches", watches::run(rt.clone(), shutdown.clone()));
    let census = rt.ctx.cache.sandbox_census();
    hermes_telemetry::tasks::spawn(
        "worker_sandbox_report",
        report_sandboxes(rt.ctx.sandboxes.clone(), census, worker_id.clone(), shutdown.clone()),
    );
    tracing::info!(worker.id = %worker_id, slots = cfg.worker.max_concurrent_turns, "worker consuming");
    let mut tasks = JoinSet::new();
    let outcome = consume(&rt, &mut consumer, &shutdown, &mut tasks).await;
    consumer.cancel().await;
    drain(&rt, tasks).await;
    // Only now: a draining worker's turns are still its own.
    beats.cancel();
    presence.cancel();
    tracing::info!("worker stopped");
    outcome
}

/// Tells the operators' view which sandboxes this worker's reaper last kept (every 30 seconds;
/// a report outlives a missed round or two, not a gone worker).
async fn report_sandboxes(
    sandboxes: Arc<dyn Sandboxes>,
    census: hermes_cache::SandboxCensus,
    worker: String,
    shutdown: CancellationToken,
) {
    let mut rounds = every::Every::new(Duration::from_secs(30), shutdown);
    while rounds.next().await {
        let sandboxes = sandboxes.census();
        let report = hermes_core::census::SandboxReport { worker: worker.clone(), at: chrono::Utc::now(), sandboxes };
        if let Err(e) = census.publish(&report, Duration::from_secs(150)).await {
            tracing::debug!(error = %e, "cannot report sandboxes");
        }
    }
}

/// What every model this worker builds is made with.
fn model_deps(ctx: &WorkerContext) -> models::ModelDeps {
    models::ModelDeps {
        http: ctx.http.clone(),
        store: ctx.store.clone(),
        key_pools: ctx.cache.key_pools(),
        secrets: ctx.secrets.clone(),
        llm: ctx.config.llm.clone(),
        cache_gateways: ctx.config.llm.prompt_cache_gateways.iter().map(|h| h.to_ascii_lowercase()).collect(),
        aux_failed_at: Default::default(),
    }
}

/// Cancels the turn a cancellation names, when it runs here, until `shutdown`.
fn listen_for_cancellations(rt: &Arc<Runtime>, shutdown: &CancellationToken) {
    let mut cancels = rt.ctx.cache.cancel_bus().subscribe(shutdown.clone());
    let listener = rt.clone();
    hermes_telemetry::tasks::spawn("worker_turn", async move {
        while let Some(turn) = cancels.recv().await {
            if listener.running.cancel(turn) {
                tracing::info!(turn.id = %turn, "cancellation received");
            }
        }
    });
}

/// Takes deliveries into `tasks`, one per free slot, until `shutdown` or the consumer closes
/// (then the worker stops with an error, to be restarted).
async fn consume(
    rt: &Arc<Runtime>,
    consumer: &mut WorkConsumer,
    shutdown: &CancellationToken,
    tasks: &mut JoinSet<()>,
) -> Result<(), WorkerError> {
    // Deliveries are acked as soon as the session lock is taken, so RabbitMQ's prefetch does
    // not bound the work in progress: this semaphore does, and no tenant holds more than its
    // share of it.
    let cfg = &rt.ctx.config.worker;
    let slots = Arc::new(Semaphore::new(usize::from(cfg.max_concurrent_turns)));
    let shares = shares::Shares::new(usize::from(cfg.max_concurrent_turns), cfg.tenant_share);
    let pause = Duration::from_millis(cfg.defer_millis);
    loop {
        while tasks.try_join_next().is_some() {}
        let permit = tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            permit = slots.clone().acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => return Ok(()),
            },
        };
        let delivery = tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            delivery = consumer.next() => delivery,
        };
        match delivery {
            Some(delivery) => {
                let Some(share) = shares.take(delivery.work.tenant_id) else {
                    drop(permit);
                    shares::defer(rt.ctx.broker.clone(), delivery, pause);
                    continue;
                };
                let rt = rt.clone();
                tasks.spawn(async move {
                    session::handle_delivery(rt, delivery).await;
                    drop((share, permit));
                });
            }
            None => {
                // Only when the broker was closed: a lost connection is ridden out inside.
                tracing::error!("work consumer closed; stopping the worker");
                shutdown.cancel();
                return Err(WorkerError::ConsumerClosed);
            }
        }
    }
}

/// Gives running turns `worker.drain_seconds` to finish, then has them hand their leases back
/// and waits for that.
async fn drain(rt: &Runtime, mut tasks: JoinSet<()>) {
    let drain = Duration::from_secs(rt.ctx.config.worker.drain_seconds);
    tracing::info!(running = tasks.len(), drain_seconds = drain.as_secs(), "worker draining");
    let drained = tokio::time::timeout(drain, async { while tasks.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        tracing::warn!(running = tasks.len(), "drain timeout: handing running turns back");
        rt.abandon.cancel();
        while tasks.join_next().await.is_some() {}
    }
}

/// Brings the bundled skills compiled into this binary into Postgres (every worker may; one
/// does the work at a time). A failure is logged: the previous catalogue stays in use.
async fn sync_bundled_skills(store: &hermes_store::Store) {
    let catalogue = match hermes_skills::bundled::catalogue() {
        Ok(c) => c,
        Err((path, e)) => {
            tracing::error!(path, error = %e, "a bundled skill is invalid; the catalogue is not synced");
            return;
        }
    };
    // The same check as every other way in (the catalogue test keeps it passing).
    let mut skills = Vec::with_capacity(catalogue.len());
    for bundled in catalogue {
        let category = bundled.skill.category.clone();
        match hermes_skills::check(&bundled.skill_md, bundled.files, Some(&category)) {
            Ok(checked) => skills.push(skills::new_skill(checked)),
            Err(e) => {
                tracing::error!(skill = %bundled.skill.name, error = %e, "a bundled skill fails its check; the catalogue is not synced");
                return;
            }
        }
    }
    match store.agents().sync_bundled_skills(&skills).await {
        Ok(report) if report != hermes_store::SyncReport::default() => {
            tracing::info!(
                added = report.added,
                updated = report.updated,
                removed = report.removed,
                "bundled skills synced"
            );
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "cannot sync the bundled skills"),
    }
}
