//! History at scale (issue 42, item 3): many tenants' conversations written through the real
//! store (so search vectors, rollups and indexes are exactly what production keeps), then
//! `session_search`, the session list and the usage report timed against random tenants and
//! users, and one large tenant's heavy user on their own. Sizes on disk are printed by
//! `search.sh` afterwards.
//!
//! Usage: hermes-search-bench --database-url URL [--tenants T] [--sessions N] [--messages M]
//!        [--users U] [--calls C] [--large L] [--samples S]

#![allow(clippy::print_stdout, reason = "a report on stdout is the point")]

mod fixtures;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Parser;

use fixtures::{Rng, conversation, ms_at};
use hermes_core::{AgentId, CallPurpose, ModelCall, TenantId, Usage};
use hermes_store::admin::RollupGroup;
use hermes_store::{SearchOrder, SearchScope, Store};

#[derive(Parser)]
struct Args {
    /// Tenants, each with one agent.
    #[arg(long, default_value_t = 1_000)]
    tenants: usize,
    /// Conversations per tenant.
    #[arg(long, default_value_t = 100)]
    sessions: usize,
    /// Messages per conversation (the turn's own message comes on top).
    #[arg(long, default_value_t = 100)]
    messages: usize,
    /// End users per tenant, who share its conversations round-robin.
    #[arg(long, default_value_t = 10)]
    users: usize,
    /// Model calls recorded per conversation (usage detail; the daily rollups follow).
    #[arg(long, default_value_t = 10)]
    calls: usize,
    /// Conversations of one user in one more tenant (0: none), searched on their own.
    #[arg(long, default_value_t = 2_000)]
    large: usize,
    /// Conversations written at once.
    #[arg(long, default_value_t = 8)]
    writers: usize,
    /// Timed calls per measured operation.
    #[arg(long, default_value_t = 400)]
    samples: usize,
    /// An empty scratch database (search.sh creates and drops one).
    #[arg(long)]
    database_url: String,
}

const QUERIES: &[&str] = &[
    "invoice",
    "\"database migration\"",
    "vault OR credentials",
    "deploy -staging",
    "rollb*",
    "数据库",
    "回滚",
    "nonexistentword",
];

fn calls(n: usize) -> Vec<ModelCall> {
    let usage = Usage { prompt_tokens: 1_200, completion_tokens: 150, total_tokens: 1_350, ..Usage::default() };
    (0..n)
        .map(|_| ModelCall {
            purpose: CallPurpose::Main,
            provider: "openai".into(),
            model: "m".into(),
            key_id: None,
            usage,
            latency_ms: 900,
        })
        .collect()
}

/// Writes `sessions` conversations spread over `owners` (tenant, agent, user count), eight at a
/// time, each with its model calls. Prints progress every tenth.
async fn write(
    store: &Store,
    owners: Arc<Vec<(TenantId, AgentId)>>,
    args: &Args,
    sessions: usize,
    users: usize,
) -> Result<()> {
    let next = Arc::new(AtomicUsize::new(0));
    let mut writers = tokio::task::JoinSet::new();
    let (messages, per_call) = (args.messages, args.calls);
    for _ in 0..args.writers {
        let (store, next, owners) = (store.clone(), next.clone(), owners.clone());
        writers.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= sessions {
                    return Ok::<_, hermes_store::StoreError>(());
                }
                // Tenants take turns, so each tenant's rows are spread over the table as in life.
                let (tenant, agent) = owners[i % owners.len()];
                let user = format!("user-{}", (i / owners.len()) % users);
                let (session, turn) =
                    store.turns().enqueue_turn(tenant, conversation(agent, &user, i, messages)).await?;
                store.tenancy().record_model_calls(tenant, session, turn, &calls(per_call)).await?;
                if (i + 1) % (sessions / 10).max(1) == 0 {
                    println!("  {} of {sessions} conversations", i + 1);
                }
            }
        });
    }
    while let Some(done) = writers.join_next().await {
        done??;
    }
    Ok(())
}

async fn tenants(store: &Store, prefix: &str, n: usize) -> Result<Vec<(TenantId, AgentId)>> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let tenant = store.tenancy().create_tenant(&format!("{prefix}-{i}")).await?;
        let agent = store.agents().create_agent(tenant.id, fixtures::agent(), None).await?;
        out.push((tenant.id, agent.id));
    }
    Ok(out)
}

/// Sorted latencies of `samples` calls of `op` (given the sample's index).
async fn timed<F, Fut>(samples: usize, mut op: F) -> Result<Vec<Duration>>
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = Result<()>>,
{
    let mut taken = Vec::with_capacity(samples);
    for i in 0..samples {
        let started = Instant::now();
        op(i).await?;
        taken.push(started.elapsed());
    }
    taken.sort();
    Ok(taken)
}

fn line(what: &str, sorted: &[Duration]) {
    println!("{what:<40} p50 {:>7.1} ms   p99 {:>7.1} ms", ms_at(sorted, 0.5), ms_at(sorted, 0.99));
}

async fn search(store: &Store, scope: &SearchScope, query: &str) -> Result<usize> {
    let tsquery = hermes_store::search_text::parse_query(query).context("query")?;
    let roles = ["user".to_owned(), "assistant".to_owned()];
    let found = store.conversations().search_sessions(scope, &tsquery, &roles, SearchOrder::Relevance, 3, 0).await?;
    Ok(found.len())
}

fn scope(owner: (TenantId, AgentId), user: String) -> SearchScope {
    SearchScope { tenant: owner.0, agent: owner.1, user_key: user, current: None }
}

/// Random tenants and users: search (every query shape in turn), the session list, the usage page.
async fn across_tenants(store: &Store, owners: &[(TenantId, AgentId)], args: &Args) -> Result<()> {
    let mut rng = Rng::new(7);
    let picks: Vec<SearchScope> = (0..args.samples)
        .map(|_| scope(owners[rng.below(owners.len())], format!("user-{}", rng.below(args.users))))
        .collect();
    let picks = &picks;
    let mut by_query = vec![Vec::new(); QUERIES.len()];
    let mut all = Vec::with_capacity(args.samples);
    for (i, scope) in picks.iter().enumerate() {
        let started = Instant::now();
        search(store, scope, QUERIES[i % QUERIES.len()]).await?;
        all.push(started.elapsed());
        by_query[i % QUERIES.len()].push(started.elapsed());
    }
    all.sort();
    println!("\n{} tenants, a random tenant and user per call:", owners.len());
    line("session_search, every query shape", &all);
    for (query, mut taken) in QUERIES.iter().zip(by_query) {
        taken.sort();
        line(&format!("  {query}"), &taken);
    }
    let browse = timed(args.samples, |i| async move {
        store.conversations().recent_sessions(&picks[i], 10, 0).await?;
        Ok(())
    })
    .await?;
    line("session_search without a query (recent 10)", &browse);
    let list = timed(args.samples, |i| async move {
        store.conversations().list_sessions(picks[i].tenant, None, 20, 0).await?;
        Ok(())
    })
    .await?;
    line("session list, first 20 (/api/sessions)", &list);
    let to = chrono::Utc::now().date_naive();
    for (group, name) in [(RollupGroup::Day, "day"), (RollupGroup::Model, "model")] {
        let usage = timed(args.samples, |i| async move {
            store.admin().usage_rollup(picks[i].tenant, to - chrono::Duration::days(29), to, group).await?;
            Ok(())
        })
        .await?;
        line(&format!("usage report, 30 days by {name}"), &usage);
    }
    Ok(())
}

/// One user with every conversation of a large tenant: each query shape on its own.
async fn large_user(store: &Store, owner: (TenantId, AgentId), args: &Args) -> Result<()> {
    let scope = scope(owner, "user-0".into());
    println!("\none user with {} conversations of {} messages:", args.large, args.messages + 1);
    let runs = (args.samples / QUERIES.len()).max(10);
    for query in QUERIES {
        let found = search(store, &scope, query).await?;
        let scope = &scope;
        let taken = timed(runs, |_| async move {
            search(store, scope, query).await?;
            Ok(())
        })
        .await?;
        line(&format!("  {query} ({found} found)"), &taken);
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let store = Store::connect(&args.database_url, 16).await?;
    store.migrate().await?;
    let started = Instant::now();
    let owners = Arc::new(tenants(&store, "team", args.tenants).await?);
    write(&store, owners.clone(), &args, args.tenants * args.sessions, args.users).await?;
    let large = tenants(&store, "large", usize::from(args.large > 0)).await?;
    if args.large > 0 {
        write(&store, Arc::new(large.clone()), &args, args.large, 1).await?;
    }
    let messages = (args.tenants * args.sessions + args.large) * (args.messages + 1);
    let secs = started.elapsed().as_secs_f64();
    println!("{messages} messages written in {secs:.0} s ({:.0} a second)", messages as f64 / secs);
    store.analyze().await?;
    across_tenants(&store, &owners, &args).await?;
    if let Some(owner) = large.first() {
        large_user(&store, *owner, &args).await?;
    }
    Ok(())
}
