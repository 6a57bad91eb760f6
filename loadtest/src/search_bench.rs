//! `session_search` latency on a realistic history: builds a scratch database with many
//! conversations for one agent and end user (plus another tenant's, as noise) through the real
//! write path, so the search vectors are exactly what production stores, then times each
//! query shape and prints medians.
//!
//! Usage: hermes-search-bench --database-url URL [--sessions N] [--messages M] [--runs R]

#![allow(clippy::print_stdout, reason = "a report on stdout is the point")]

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Parser;

use hermes_core::ChatMessage;
use hermes_store::{NewAgent, NewTurn, SearchOrder, SearchScope, Store, TurnTarget};

#[derive(Parser)]
struct Args {
    /// Conversations of the searched user.
    #[arg(long, default_value_t = 2_000)]
    sessions: usize,
    /// Messages per conversation.
    #[arg(long, default_value_t = 50)]
    messages: usize,
    /// Timed runs per query.
    #[arg(long, default_value_t = 30)]
    runs: usize,
    /// An empty scratch database (search.sh creates and drops one).
    #[arg(long)]
    database_url: String,
}

const WORDS: &[&str] = &[
    "deploy",
    "staging",
    "release",
    "database",
    "migration",
    "rollback",
    "latency",
    "cache",
    "redis",
    "queue",
    "postgres",
    "index",
    "query",
    "customer",
    "invoice",
    "budget",
    "meeting",
    "agenda",
    "incident",
    "alert",
    "kubernetes",
    "docker",
    "build",
    "test",
    "review",
    "branch",
    "merge",
    "credentials",
    "rotate",
    "vault",
];
const CHINESE: &[&str] =
    &["数据库迁移失败了", "请帮我回滚版本", "明天的会议议程", "客户发票有问题", "部署到预发环境", "缓存延迟太高"];

/// A deterministic pseudo-random sentence.
fn sentence(seed: usize) -> String {
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(12_345);
    let mut words = Vec::new();
    for _ in 0..12 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        words.push(WORDS[x % WORDS.len()]);
    }
    if seed.is_multiple_of(7) {
        words.push(CHINESE[seed % CHINESE.len()]);
    }
    words.join(" ")
}

fn agent(base_url: &str) -> NewAgent {
    NewAgent {
        name: "ops".into(),
        model: "m".into(),
        provider_base_url: base_url.into(),
        provider_key: None,
        soul: None,
        system_message: None,
        toolsets: vec!["session_search".into()],
        provider_key_hosts: vec![],
        fallbacks: vec![],
        api_mode: None,
        auxiliary: None,
        context_window: None,
    }
}

async fn fill(store: &Store, tenant_name: &str, user: &str, sessions: usize, messages: usize) -> Result<SearchScope> {
    let tenant = store.tenancy().create_tenant(tenant_name).await?;
    let agent = store.agents().create_agent(tenant.id, agent("http://127.0.0.1:9/v1"), None).await?;
    for s in 0..sessions {
        let history: Vec<ChatMessage> = (0..messages)
            .map(|m| {
                let text = sentence(s * messages + m);
                if m.is_multiple_of(2) { ChatMessage::user(text) } else { ChatMessage::assistant(text) }
            })
            .collect();
        let target = TurnTarget::New { source: hermes_core::SessionSource::Api, user_key: user.into(), history };
        let turn = NewTurn::new(agent.id, target, ChatMessage::user(sentence(s)));
        store.turns().enqueue_turn(tenant.id, turn).await?;
    }
    Ok(SearchScope { tenant: tenant.id, agent: agent.id, user_key: user.into(), current: None })
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    run(&args, &args.database_url).await
}

async fn run(args: &Args, url: &str) -> Result<()> {
    let store = Store::connect(url, 8).await?;
    store.migrate().await?;
    let started = Instant::now();
    let scope = fill(&store, "searched", "alice", args.sessions, args.messages).await?;
    fill(&store, "noise", "bob", args.sessions / 2, args.messages).await?;
    let total = (args.sessions + args.sessions / 2) * (args.messages + 1);
    println!("{total} messages written in {:.1} s", started.elapsed().as_secs_f64());
    store.analyze().await?;
    let roles = vec!["user".to_owned(), "assistant".to_owned()];
    let queries = [
        "invoice",
        "\"database migration\"",
        "vault OR credentials",
        "deploy -staging",
        "rollb*",
        "数据库",
        "回滚",
        "nonexistentword",
    ];
    for q in queries {
        let tsquery = hermes_store::search_text::parse_query(q).context("query")?;
        let mut samples = Vec::with_capacity(args.runs);
        let mut found = 0;
        for _ in 0..args.runs {
            let t = Instant::now();
            found = store
                .conversations()
                .search_sessions(&scope, &tsquery, &roles, SearchOrder::Relevance, 3, 0)
                .await?
                .len();
            samples.push(t.elapsed());
        }
        samples.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let at = |q: f64| ms(samples[((samples.len() - 1) as f64 * q).round() as usize]);
        println!("{q:<24} median {:>7.1} ms   p90 {:>7.1} ms   ({found} conversations)", at(0.5), at(0.9));
    }
    let mut samples = Vec::new();
    for _ in 0..args.runs {
        let t = Instant::now();
        store.conversations().recent_sessions(&scope, 10, 0).await?;
        samples.push(t.elapsed());
    }
    samples.sort();
    println!("{:<24} median {:>7.1} ms", "browse (recent 10)", samples[samples.len() / 2].as_secs_f64() * 1000.0);
    Ok(())
}
