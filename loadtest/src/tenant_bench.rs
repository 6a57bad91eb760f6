//! A tenant's export and deletion at size (a benchmark, not a test): a scratch database with
//! one tenant of many conversations and a smaller one beside it, both written through the real
//! store; then the first tenant's archive is written (to a counter) and the tenant deleted,
//! while the other tenant's turns are being queued every few milliseconds, each timed. Prints
//! the rates, and the other tenant's enqueue latency before and during the deletion; checks
//! that the other tenant kept every row.
//!
//! Usage: hermes-tenant-bench --database-url URL [--sessions N] [--messages M]

#![allow(clippy::print_stdout, reason = "a report on stdout is the point")]

#[allow(dead_code, reason = "each benchmark uses its own part of the fixtures")]
mod fixtures;

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Parser;

use hermes_core::{AgentId, ChatMessage, SessionSource, TenantId};
use hermes_store::admin::{Actor, ActorKind, Audit};
use hermes_store::{NewTurn, Store, TurnTarget};

#[derive(Parser)]
struct Args {
    /// Conversations of the tenant that is exported and deleted.
    #[arg(long, default_value_t = 10_000)]
    sessions: usize,
    /// Messages per conversation.
    #[arg(long, default_value_t = 50)]
    messages: usize,
    /// Conversations written at once.
    #[arg(long, default_value_t = 8)]
    writers: usize,
    /// An empty scratch database (tenant.sh creates and drops one).
    #[arg(long)]
    database_url: String,
}

/// A conversation of `messages` lines, queued as a turn (so a session, its messages and a turn).
fn conversation(agent: AgentId, seed: usize, messages: usize) -> NewTurn {
    let history: Vec<ChatMessage> = (0..messages)
        .map(|m| {
            let text = format!("line {m} of conversation {seed}: the deploy of release {} went out", seed * 31 + m);
            if m % 2 == 0 { ChatMessage::user(text) } else { ChatMessage::assistant(text) }
        })
        .collect();
    let target = TurnTarget::New { source: SessionSource::Api, user_key: format!("user-{}", seed % 97), history };
    NewTurn::new(agent, target, ChatMessage::user(format!("question {seed}")))
}

async fn fill(store: &Store, name: &str, args: &Args, sessions: usize) -> Result<(TenantId, AgentId)> {
    let tenant = store.tenancy().create_tenant(name).await?;
    let agent = store.agents().create_agent(tenant.id, fixtures::agent(), None).await?.id;
    let next = Arc::new(AtomicU64::new(0));
    let mut writers = tokio::task::JoinSet::new();
    for _ in 0..args.writers {
        let (store, next, messages) = (store.clone(), next.clone(), args.messages);
        writers.spawn(async move {
            loop {
                let seed = usize::try_from(next.fetch_add(1, Ordering::Relaxed)).unwrap_or(usize::MAX);
                if seed >= sessions {
                    return Ok::<_, hermes_store::StoreError>(());
                }
                store.turns().enqueue_turn(tenant.id, conversation(agent, seed, messages)).await?;
            }
        });
    }
    while let Some(done) = writers.join_next().await {
        done??;
    }
    Ok((tenant.id, agent))
}

/// An archive's bytes, counted and dropped.
#[derive(Default)]
struct Counter(u64);

impl tokio::io::AsyncWrite for Counter {
    fn poll_write(mut self: Pin<&mut Self>, _: &mut TaskContext<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.0 += buf.len() as u64;
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut TaskContext<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut TaskContext<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Queues one short turn of `tenant` every 20 ms until `stop`; each enqueue's latency.
async fn probe(store: Store, tenant: TenantId, agent: AgentId, stop: Arc<AtomicBool>) -> Result<Vec<Duration>> {
    let mut taken = Vec::new();
    let mut seed = 1_000_000;
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        store.turns().enqueue_turn(tenant, conversation(agent, seed, 2)).await?;
        taken.push(started.elapsed());
        seed += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(taken)
}

fn summary(mut taken: Vec<Duration>) -> String {
    taken.sort();
    let at = |q: f64| taken.get(((taken.len() as f64 - 1.0) * q) as usize).copied().unwrap_or_default();
    format!(
        "{} enqueues, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        taken.len(),
        at(0.5).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        taken.last().copied().unwrap_or_default().as_secs_f64() * 1e3
    )
}

/// `tenant`'s messages, counted through the row policies.
async fn messages(store: &Store, tenant: TenantId) -> Result<i64> {
    let rows = store.tenancy().tenant_rows(tenant).await?;
    Ok(rows.into_iter().find(|(table, _)| table == "messages").map_or(0, |(_, n)| n))
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let url = args.database_url.clone();
    let store = Store::connect(&url, 16).await?;
    store.migrate().await?;
    let started = Instant::now();
    let (doomed, _) = fill(&store, "doomed", &args, args.sessions).await?;
    let (kept, kept_agent) = fill(&store, "kept", &args, args.sessions / 10).await?;
    let rows = messages(&store, doomed).await?;
    println!("wrote {rows} messages of the tenant to delete in {:.1} s", started.elapsed().as_secs_f64());
    store.analyze().await?;

    let tenant = hermes_store::Tenant { id: doomed, name: "doomed".into(), created_at: chrono::Utc::now() };
    let started = Instant::now();
    let mut counter = Counter::default();
    let exported = hermes_ops::tenant_data::export(&store, &tenant, &mut counter).await.context("export")?;
    let secs = started.elapsed().as_secs_f64();
    let exported_rows: u64 = exported.tables.values().sum();
    println!(
        "export: {exported_rows} rows, {:.1} MB compressed in {secs:.1} s ({:.0} rows/s)",
        exported.bytes as f64 / 1e6,
        exported_rows as f64 / secs
    );

    let kept_before = messages(&store, kept).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let five_seconds = async {
        tokio::time::sleep(Duration::from_secs(5)).await;
        stop.store(true, Ordering::Relaxed);
    };
    let (baseline, ()) = tokio::join!(probe(store.clone(), kept, kept_agent, stop.clone()), five_seconds);
    let baseline = baseline?;
    let kept_probed = messages(&store, kept).await?;
    // What one probe writes, so the count after the deletion can be checked exactly.
    let per_probe = (kept_probed - kept_before) / i64::try_from(baseline.len().max(1))?;

    let stop = Arc::new(AtomicBool::new(false));
    let by = Audit {
        actor: Actor { kind: ActorKind::Cli, id: "bench".into(), label: "tenant bench".into() },
        request_id: None,
        source_address: None,
    };
    let started = Instant::now();
    let deletion = async {
        let deleted = hermes_ops::tenant_data::delete(&store, &by, doomed).await;
        stop.store(true, Ordering::Relaxed);
        (deleted, started.elapsed().as_secs_f64())
    };
    let ((deleted, secs), during) = tokio::join!(deletion, probe(store.clone(), kept, kept_agent, stop.clone()));
    let (deleted, during) = (deleted.context("delete")?, during?);
    let removed: u64 = deleted.removed.values().sum();
    println!("delete: {removed} rows in {secs:.1} s ({:.0} rows/s)", removed as f64 / secs);
    println!("the other tenant's enqueues before: {}", summary(baseline));
    let probes_during = during.len();
    println!("the other tenant's enqueues during the deletion: {}", summary(during));

    let kept_after = messages(&store, kept).await?;
    let expected = kept_probed + per_probe * i64::try_from(probes_during)?;
    anyhow::ensure!(
        kept_before > 0 && kept_after == expected,
        "the other tenant had {kept_probed} messages when the deletion began and wrote {expected}; it has {kept_after}"
    );
    let left = messages(&store, doomed).await?;
    anyhow::ensure!(left == 0, "{left} messages of the deleted tenant left");
    println!("the other tenant kept all its {kept_after} messages; none of the deleted tenant's is left");
    Ok(())
}
