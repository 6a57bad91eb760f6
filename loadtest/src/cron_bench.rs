//! Cron at scale (issue 42, item 4): many tenants' jobs all due in a window, claimed and started
//! by several schedulers at once (the scheduler role's own pass, `cron_once`, each with its
//! own connections) while a stand-in worker ends each run's turn after `--turn-ms`. Prints
//! the claim rate second by second; `cron.sh` then reads the ledger: every slot run once,
//! one turn per run, and lateness (the turn's creation less the slot) p50/p99.
//!
//! Usage: hermes-cron-bench --database-url URL [--tenants T] [--jobs J] [--schedulers S]
//!        [--spread-secs W] [--turn-ms D]

#![allow(clippy::print_stdout, reason = "a report on stdout is the point")]

#[allow(dead_code, reason = "each benchmark uses its own part of the fixtures")]
mod fixtures;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use clap::Parser;

use hermes_config::HermesConfig;
use hermes_core::{AgentId, FinishReason, TenantId, TurnOutcome, TurnStatus, Usage};
use hermes_scheduler::SchedulerContext;
use hermes_store::Store;
use hermes_store::cron::{JobTiming, NewJob};

#[derive(Parser)]
struct Args {
    #[arg(long, default_value_t = 1_000)]
    tenants: usize,
    /// Jobs per tenant.
    #[arg(long, default_value_t = 100)]
    jobs: usize,
    /// Scheduler replicas, each passing every `--interval-ms`.
    #[arg(long, default_value_t = 3)]
    schedulers: usize,
    /// The jobs' slots are spread evenly over this many seconds (0: all due at one instant).
    #[arg(long, default_value_t = 0)]
    spread_secs: u64,
    /// How long the stand-in worker takes over each run's turn.
    #[arg(long, default_value_t = 1_000)]
    turn_ms: u64,
    /// `scheduler.cron_interval_millis`.
    #[arg(long, default_value_t = 1_000)]
    interval_ms: u64,
    /// `scheduler.cron_max_parallel` (runs open across the installation).
    #[arg(long, default_value_t = 5_000)]
    max_parallel: u32,
    /// `scheduler.cron_max_parallel_per_tenant`.
    #[arg(long, default_value_t = 8)]
    per_tenant: u32,
    #[arg(long)]
    database_url: String,
}

fn job(agent: AgentId, i: usize, due: DateTime<Utc>) -> NewJob {
    NewJob {
        agent_id: agent,
        name: format!("report {i}"),
        prompt: "summarise yesterday's alerts".into(),
        skills: vec![],
        model: None,
        toolsets: None,
        timing: JobTiming {
            schedule: "every 1h".into(),
            schedule_kind: "interval".into(),
            schedule_display: "every 1h".into(),
            timezone: "UTC".into(),
            repeat_times: None,
            next_run_at: due,
        },
        deliver: "local".into(),
        origin: None,
        script: Default::default(),
    }
}

/// Writes every tenant's jobs, slots from `first` spread over the window, eight writers at once.
async fn write_jobs(store: &Store, args: &Args, first: DateTime<Utc>) -> Result<()> {
    let mut owners = Vec::with_capacity(args.tenants);
    for i in 0..args.tenants {
        let tenant = store.tenancy().create_tenant(&format!("team-{i}")).await?;
        let agent = store.agents().create_agent(tenant.id, fixtures::agent(), None).await?;
        owners.push((tenant.id, agent.id));
    }
    let owners: Arc<Vec<(TenantId, AgentId)>> = Arc::new(owners);
    let total = args.tenants * args.jobs;
    let step = Duration::from_secs(args.spread_secs).as_secs_f64() / total.max(1) as f64;
    let next = Arc::new(AtomicUsize::new(0));
    let mut writers = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let (store, owners, next) = (store.clone(), owners.clone(), next.clone());
        writers.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    return Ok::<_, hermes_store::StoreError>(());
                }
                let (tenant, agent) = owners[i % owners.len()];
                let due = first + chrono::Duration::microseconds((step * i as f64 * 1e6) as i64);
                store.automation().create_job(tenant, &job(agent, i, due)).await?;
            }
        });
    }
    while let Some(done) = writers.join_next().await {
        done??;
    }
    Ok(())
}

/// The worker's part, reduced to its ledger: takes each run's turn off the queue, holds it
/// `turn_ms`, and ends it completed.
async fn stand_in_worker(ctx: Arc<SchedulerContext>, turn: Duration) -> Result<()> {
    let mut consumer = ctx.broker.consume_work(500, "cron-bench-worker").await?;
    let mut running = tokio::task::JoinSet::new();
    while let Some(delivery) = consumer.next().await {
        let ctx = ctx.clone();
        running.spawn(async move {
            tokio::time::sleep(turn).await;
            let (tenant, session) = (delivery.work.tenant_id, delivery.work.session_id);
            let turns = ctx.store.turns();
            if let Some(claimed) =
                turns.claim_next_turn(tenant, session, "bench-worker", Duration::from_secs(60), 0).await?
            {
                let outcome = TurnOutcome {
                    content: "[SILENT]".into(),
                    finish_reason: FinishReason::Stop,
                    usage: Usage::default(),
                    error: None,
                    error_code: None,
                    session_id: None,
                };
                turns
                    .finish_turn(
                        tenant,
                        session,
                        claimed.turn_id,
                        "bench-worker",
                        claimed.fence,
                        TurnStatus::Completed,
                        &outcome,
                        None,
                        &[],
                    )
                    .await?;
            }
            delivery.ack().await;
            Ok::<_, anyhow::Error>(())
        });
        while let Some(done) = running.try_join_next() {
            done??;
        }
    }
    Ok(())
}

/// One scheduler replica's cron passes, as the role runs them, adding what each pass started.
async fn scheduler(ctx: Arc<SchedulerContext>, name: String, started: Arc<AtomicUsize>, total: usize) -> Result<()> {
    let mut tick = tokio::time::interval(Duration::from_millis(ctx.config.scheduler.cron_interval_millis));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while started.load(Ordering::Relaxed) < total {
        tick.tick().await;
        let n = hermes_scheduler::cron::cron_once(&ctx, &name, Utc::now()).await?;
        started.fetch_add(n, Ordering::Relaxed);
    }
    Ok(())
}

async fn context(args: &Args, prefix: &str) -> Result<SchedulerContext> {
    let mut config = HermesConfig::default();
    config.database.url = args.database_url.clone();
    config.rabbitmq.prefix = prefix.into();
    // The queues go a minute after the run whatever becomes of it (a consumer still closing
    // could declare them again after `delete_topology`).
    config.rabbitmq.queue_expires_seconds = 60;
    config.scheduler.cron_interval_millis = args.interval_ms;
    config.scheduler.cron_max_parallel = args.max_parallel;
    config.scheduler.cron_max_parallel_per_tenant = args.per_tenant;
    let store = Store::connect(&args.database_url, 8).await?;
    let broker = hermes_queue::Broker::connect(&config.rabbitmq, "cron-bench").await.context("RabbitMQ")?;
    let cache = hermes_cache::Cache::connect(&config.redis.url, prefix).await.context("Redis")?;
    Ok(SchedulerContext { config: Arc::new(config), store, broker, cache })
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let prefix = format!("hermes-cron-bench-{}", std::process::id());
    let setup = context(&args, &prefix).await?;
    setup.store.migrate().await?;
    let total = args.tenants * args.jobs;
    let written = Instant::now();
    // Slots start after the writing is done (about 1 ms a job here), so none is late at birth.
    let first = Utc::now() + chrono::Duration::milliseconds(i64::try_from(total)? / 2 + 5_000);
    write_jobs(&setup.store, &args, first).await?;
    println!("{total} jobs of {} tenants written in {:.0} s", args.tenants, written.elapsed().as_secs_f64());
    setup.store.analyze().await?;
    let wait = (first - Utc::now()).to_std().unwrap_or_default();
    println!("the first slot is in {:.1} s", wait.as_secs_f64());

    let worker = Arc::new(context(&args, &prefix).await?);
    let worker_task =
        tokio::task::JoinSet::from_iter([stand_in_worker(worker.clone(), Duration::from_millis(args.turn_ms))]);
    let started = Arc::new(AtomicUsize::new(0));
    let mut replicas = tokio::task::JoinSet::new();
    for i in 0..args.schedulers {
        let ctx = Arc::new(context(&args, &prefix).await?);
        replicas.spawn(scheduler(ctx, format!("scheduler-{i}"), started.clone(), total));
    }
    tokio::time::sleep(wait).await;
    let clock = Instant::now();
    let mut last = 0;
    while !replicas.is_empty() {
        tokio::select! {
            done = replicas.join_next() => { if let Some(done) = done { done??; } }
            () = tokio::time::sleep(Duration::from_secs(5)) => {
                let now = started.load(Ordering::Relaxed);
                println!("  {:>4.0} s: {now} runs started ({:.0} a second over the last 5 s)",
                         clock.elapsed().as_secs_f64(), (now - last) as f64 / 5.0);
                last = now;
            }
        }
    }
    let secs = clock.elapsed().as_secs_f64();
    let started = started.load(Ordering::Relaxed);
    println!(
        "{started} runs started by {} schedulers in {secs:.1} s from the first slot ({:.0} a second)",
        args.schedulers,
        started as f64 / secs
    );
    anyhow::ensure!(started == total, "{started} runs started for {total} slots");
    // Let the last turns end and a pass settle them, then leave the ledger to cron.sh.
    tokio::time::sleep(Duration::from_millis(args.turn_ms + 2_000)).await;
    hermes_scheduler::cron::cron_once(&setup, "settler", Utc::now()).await?;
    drop(worker_task);
    setup.broker.delete_topology().await?;
    Ok(())
}
