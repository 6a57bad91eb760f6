//! `hermes-loadtest`: drives plain non-streaming turns through a running Hermes Cloud and
//! reports latency percentiles and throughput, first sequentially, then with N concurrent
//! clients. `loadtest/run.sh` sets up the server, the scripted model and the tenant.
#![allow(clippy::print_stdout, reason = "a report on stdout is the point")]

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use serde_json::json;

#[derive(Parser, Clone)]
#[command(about = "Measure turn latency and throughput of a Hermes Cloud API")]
struct Args {
    /// API base URL.
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    url: String,
    /// API key.
    #[arg(long, env = "HERMES_API_KEY")]
    key: String,
    /// Agent name (the `model`).
    #[arg(long)]
    model: String,
    /// Requests sent one after another.
    #[arg(long, default_value_t = 500)]
    sequential: usize,
    /// Concurrent clients in the second phase.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Duration of the concurrent phase.
    #[arg(long, default_value_t = 20)]
    seconds: u64,
    /// Warm-up requests before measuring.
    #[arg(long, default_value_t = 50)]
    warmup: usize,
}

async fn one_turn(client: &reqwest::Client, args: &Args, n: usize) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let resp = client
        .post(format!("{}/v1/chat/completions", args.url))
        .bearer_auth(&args.key)
        .json(&json!({"model": args.model, "messages": [{"role": "user", "content": format!("ping {n}")}]}))
        .send()
        .await?;
    let status = resp.status();
    let body = resp.bytes().await?;
    if !status.is_success() {
        bail!("HTTP {status}: {}", String::from_utf8_lossy(&body));
    }
    Ok(started.elapsed())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn report(name: &str, mut samples: Vec<Duration>, wall: Duration, errors: usize) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{name}: n={} errors={errors} median={:.2}ms p90={:.2}ms p99={:.2}ms max={:.2}ms throughput={:.1} turns/s",
        samples.len(),
        ms(percentile(&samples, 0.5)),
        ms(percentile(&samples, 0.9)),
        ms(percentile(&samples, 0.99)),
        ms(samples.last().copied().unwrap_or_default()),
        samples.len() as f64 / wall.as_secs_f64(),
    );
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = Args::parse();
    let client = reqwest::Client::builder().pool_max_idle_per_host(256).build()?;
    for n in 0..args.warmup {
        one_turn(&client, &args, n).await.context("warm-up request failed")?;
    }

    let mut samples = Vec::with_capacity(args.sequential);
    let mut errors = 0;
    let started = Instant::now();
    for n in 0..args.sequential {
        match one_turn(&client, &args, n).await {
            Ok(d) => samples.push(d),
            Err(e) => {
                errors += 1;
                eprintln!("error: {e}");
            }
        }
    }
    report("sequential", samples, started.elapsed(), errors);

    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..args.concurrency {
        let client = client.clone();
        let args = args.clone();
        tasks.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            let mut errors = 0usize;
            let mut n = c * 1_000_000;
            while Instant::now() < deadline {
                match one_turn(&client, &args, n).await {
                    Ok(d) => samples.push(d),
                    Err(e) => {
                        errors += 1;
                        eprintln!("error: {e}");
                    }
                }
                n += 1;
            }
            (samples, errors)
        }));
    }
    let mut all = Vec::new();
    let mut errors = 0;
    for t in tasks {
        let (s, e) = t.await?;
        all.extend(s);
        errors += e;
    }
    report(&format!("concurrent({})", args.concurrency), all, started.elapsed(), errors);
    Ok(())
}
