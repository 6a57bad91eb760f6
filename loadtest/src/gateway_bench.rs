//! Bots per gateway pod (issue 42, item 2): many Telegram bots, each long-polled by real
//! `hermesd gateway` processes against the Telegram emulator (or Slack apps in Socket Mode,
//! `--platform slack`, a socket each). Measures how long until every
//! bot is served, each pod's memory (per bot), sockets and CPU while the bots idle, pickup (an
//! update queued until the gateway stored it and confirmed it: Telegram's next `getUpdates`,
//! Slack's acknowledgement)
//! under a steady trickle of messages, and with `--kill`, the takeover when one of two pods is
//! killed: how long its bots' messages wait and when the survivor serves them all.
//!
//! Usage: hermes-gateway-bench --database-url URL --hermesd PATH [--platform telegram|slack]
//!        [--bots N] [--pods P] [--seconds S] [--rate R] [--kill]

#![allow(clippy::print_stdout, reason = "a report on stdout is the point")]

#[allow(dead_code, reason = "each benchmark uses its own part of the fixtures")]
mod fixtures;
mod gateway_fleet;
mod gateway_pods;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Parser;

use hermes_core::{AgentId, DmPolicy, GroupPolicy, Platform, TenantId};
use hermes_store::channels::NewChannel;
use hermes_store::{SecretBox, Store};

use gateway_fleet::Fleet;
use gateway_pods::Pod;

#[derive(Parser)]
pub struct Args {
    /// `telegram` (long poll) or `slack` (Socket Mode).
    #[arg(long, default_value = "telegram")]
    platform: Platform,
    #[arg(long, default_value_t = 10_000)]
    bots: usize,
    /// Gateway pods sharing the bots.
    #[arg(long, default_value_t = 1)]
    pods: usize,
    /// How long the steady trickle of messages runs.
    #[arg(long, default_value_t = 30)]
    seconds: u64,
    /// Messages a second in the trickle, each to a random bot.
    #[arg(long, default_value_t = 20)]
    rate: u32,
    /// Kill the first pod (SIGKILL) once the bots are shared, and time the takeover.
    #[arg(long)]
    kill: bool,
    /// Bots written to right after the kill (their messages time the takeover).
    #[arg(long, default_value_t = 200)]
    takeover_sample: usize,
    /// The first pod's ops port (its metrics); the others follow.
    #[arg(long, default_value_t = 19290)]
    ops_port: u16,
    #[arg(long)]
    database_url: String,
    #[arg(long)]
    hermesd: String,
}

/// A fixed key: the bench's channels live in a scratch database.
const MASTER_KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

/// Binds the bots to one tenant's agent, eight writers at once.
async fn bind_bots(store: &Store, owner: (TenantId, AgentId), fleet: &Arc<Fleet>, bots: usize) -> Result<()> {
    let secrets = SecretBox::from_base64(MASTER_KEY)?;
    let next = Arc::new(AtomicUsize::new(0));
    let mut writers = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let (store, secrets, next, fleet) = (store.clone(), secrets.clone(), next.clone(), fleet.clone());
        writers.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= bots {
                    return Ok::<_, hermes_store::StoreError>(());
                }
                let (api_base, credentials) = fleet.binding(i);
                let new = NewChannel {
                    agent_id: owner.1,
                    platform: fleet.platform(),
                    mode: fleet.mode(),
                    api_base,
                    credentials,
                    bot_identity: format!("T{i}:UBOT{i}"),
                    dm_policy: DmPolicy::Open,
                    group_policy: GroupPolicy::Mention,
                    allow_users: vec![],
                    allow_chats: vec![],
                    admins: vec![],
                };
                store.chat().create_channel(owner.0, new, Some(&secrets)).await?;
            }
        });
    }
    while let Some(done) = writers.join_next().await {
        done??;
    }
    Ok(())
}

/// Waits until `done` holds, up to `limit`; how long it took.
async fn until(limit: Duration, mut done: impl AsyncFnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if done().await {
            return Some(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

fn summary(mut pickups: Vec<Duration>) -> String {
    pickups.sort();
    format!(
        "{} messages: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        pickups.len(),
        fixtures::ms_at(&pickups, 0.5),
        fixtures::ms_at(&pickups, 0.99),
        fixtures::ms_at(&pickups, 1.0)
    )
}

/// A trickle of `rate` messages a second to random bots for `seconds`.
async fn trickle(fleet: &Fleet, args: &Args) -> Vec<Duration> {
    let mut rng = fixtures::Rng::new(7);
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(args.rate.max(1))));
    let end = Instant::now() + Duration::from_secs(args.seconds);
    let mut sent = 0;
    while Instant::now() < end {
        tick.tick().await;
        fleet.say(rng.below(args.bots), 1_000 + sent);
        sent += 1;
    }
    let mut pickups = Vec::new();
    until(Duration::from_secs(30), async || {
        pickups.extend(fleet.take_pickups());
        pickups.len() as u64 >= sent
    })
    .await;
    pickups
}

/// Waits until the pods serve an even share of the bots each (a pod that started first takes
/// them all, and gives half back on its next pass).
async fn wait_shared(pods: &[Pod], bots: usize) -> Result<()> {
    let share = bots / pods.len();
    let shared = until(Duration::from_secs(120), async || {
        let mut served = Vec::new();
        for pod in pods {
            served.push(pod.bots_served().await.unwrap_or_default());
        }
        served.iter().sum::<usize>() == bots && served.iter().all(|n| *n + 1 >= share)
    })
    .await
    .context("the pods never shared the bots")?;
    println!("shared between {} pods {:.1} s after all were served", pods.len(), shared.as_secs_f64());
    Ok(())
}

/// Kills the first pod, writes to `takeover_sample` bots at once, and reports how long their
/// messages waited and when the survivors served every bot.
async fn takeover(fleet: &Fleet, pods: &mut [Pod], args: &Args) -> Result<()> {
    let (dead, alive) = pods.split_first_mut().context("no pod")?;
    let held = dead.bots_served().await?;
    dead.kill().await;
    let killed = Instant::now();
    let mut rng = fixtures::Rng::new(11);
    for n in 0..args.takeover_sample {
        fleet.say(rng.below(args.bots), 2_000_000 + n as u64);
    }
    let mut pickups = Vec::new();
    until(Duration::from_secs(180), async || {
        pickups.extend(fleet.take_pickups());
        pickups.len() >= args.takeover_sample
    })
    .await;
    let all_served = until(Duration::from_secs(180), async || {
        let mut total = 0;
        for pod in alive.iter() {
            total += pod.bots_served().await.unwrap_or_default();
        }
        total == args.bots
    })
    .await;
    println!("killed a pod serving {held} bots (lease {} s)", gateway_pods::LEASE_SECONDS);
    let waited_out = pickups.iter().filter(|p| p.as_secs() >= 1).count();
    println!("  messages written at the kill: {}; {waited_out} waited over a second", summary(pickups));
    match all_served {
        Some(t) => println!("  every bot served again {:.1} s after the kill", (killed.elapsed() - t).as_secs_f64()),
        None => println!("  NOT every bot was served again within 180 s"),
    }
    for pod in alive.iter() {
        println!("  survivor: {}", pod.report(args.bots).await?);
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let store = Store::connect(&args.database_url, 8).await?;
    store.migrate().await?;
    let tenant = store.tenancy().create_tenant("bots").await?;
    let agent = store.agents().create_agent(tenant.id, fixtures::agent(), None).await?;
    let fleet = Arc::new(Fleet::start(args.platform, args.bots).await?);
    let settings = gateway_pods::Settings {
        database_url: &args.database_url,
        platform: args.platform,
        reach: fleet.pod_settings(),
        master_key: MASTER_KEY,
    };
    let mut pods = Vec::new();
    for i in 0..args.pods {
        pods.push(Pod::start(&args.hermesd, &settings, args.ops_port + u16::try_from(i)?).await?);
    }
    for pod in &mut pods {
        pod.mark_idle_rss()?;
    }
    let written = Instant::now();
    bind_bots(&store, (tenant.id, agent.id), &fleet, args.bots).await?;
    println!("{} bots bound in {:.1} s", args.bots, written.elapsed().as_secs_f64());
    let served = until(Duration::from_secs(300), async || fleet.served(written) == args.bots)
        .await
        .with_context(|| format!("only {} of {} bots were served", fleet.served(written), args.bots))?;
    println!("every bot served {:.1} s after the first was bound", served.as_secs_f64());
    if pods.len() > 1 {
        wait_shared(&pods, args.bots).await?;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    for pod in &mut pods {
        pod.mark_cpu()?;
    }
    let pickups = trickle(&fleet, &args).await;
    println!("pickup under a trickle of {} a second for {} s: {}", args.rate, args.seconds, summary(pickups));
    for pod in &pods {
        println!("  pod: {}", pod.report(args.bots / args.pods).await?);
    }
    if args.kill && pods.len() > 1 {
        takeover(&fleet, &mut pods, &args).await?;
    }
    for pod in &mut pods {
        pod.kill().await;
    }
    Ok(())
}
