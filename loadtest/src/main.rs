//! `hermes-loadtest`: drives turns through a running Hermes Cloud and reports, for each
//! scenario, the median and p99, the worker's own split of a turn and the server's peak RSS.
//! Any failed request fails the run. `loadtest/run.sh` starts the server, the scripted models
//! and the tenant, and passes the right flags. With `--base` and `--head` it runs nothing and
//! compares paired runs of two builds instead (`run.sh --against`, [`load::pairs`]): a timing
//! fails only then, and only when asked (`--fail-on-regression`).
#![allow(clippy::print_stdout, clippy::print_stderr, reason = "a report on stdout is the point")]
#![allow(
    clippy::disallowed_methods,
    reason = "the load generator starts its clients freely; the rule is for the service's own tasks"
)]

mod load;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, ValueEnum};

use load::resume::Restart;
use load::scenarios::Bench;
use load::server::Rss;
use load::turns::{Kind, Target};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Scenario {
    /// Plain turns one after another, each a new conversation.
    Plain,
    /// One `terminal` call through the sandbox a turn.
    Tool,
    /// Plain turns streamed as SSE.
    Stream,
    /// Turns in one conversation that already holds `--history` messages.
    Continued,
    /// `--clients` concurrent clients for `--seconds` each.
    Clients,
    /// `--in-flight` turns at once against the slow model.
    InFlight,
    /// `--resume-runs` runs on the slow model, the server killed (SIGKILL) and restarted
    /// mid-turn (needs `--pid` and `--restart-bin`).
    Resume,
}

#[derive(Parser)]
#[command(about = "Measure turn latency and throughput of a Hermes Cloud API")]
struct Args {
    /// API base URL.
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    url: String,
    /// API key.
    #[arg(long, env = "HERMES_API_KEY", required_unless_present = "base")]
    key: Option<String>,
    /// Agent whose model answers at once (the request's `model`).
    #[arg(long, required_unless_present = "base")]
    model: Option<String>,
    /// Agent whose model takes its time (the in-flight scenario).
    #[arg(long)]
    slow_model: Option<String>,
    /// The server's ops address, for the worker's split (`/metrics`).
    #[arg(long)]
    ops_url: Option<String>,
    /// The server's process, for its resident memory.
    #[arg(long)]
    pid: Option<u32>,
    /// Scenarios to run, in order.
    #[arg(long, value_delimiter = ',', default_value = "plain,tool,stream,continued,clients,in-flight,resume")]
    scenarios: Vec<Scenario>,
    /// Turns of each sequential scenario.
    #[arg(long, default_value_t = 300)]
    turns: usize,
    /// Client counts of the concurrent scenario.
    #[arg(long, value_delimiter = ',', default_values_t = [16, 64])]
    clients: Vec<usize>,
    /// Length of each concurrent run.
    #[arg(long, default_value_t = 20)]
    seconds: u64,
    /// Messages already in the conversation of the continued scenario.
    #[arg(long, default_value_t = 200)]
    history: usize,
    /// Turns at once in the in-flight scenario.
    #[arg(long, default_value_t = 2000)]
    in_flight: usize,
    /// Seconds over which the in-flight scenario sends its turns (0: all at once). A burst of
    /// 10,000 connections overflows any listen backlog; a ramp shorter than the model's
    /// latency still has them all waiting together.
    #[arg(long, default_value_t = 0.0)]
    in_flight_ramp_seconds: f64,
    /// How long a request may take before it counts as failed.
    #[arg(long, default_value_t = 120)]
    request_timeout_seconds: u64,
    /// Runs in flight when the resume scenario kills the server.
    #[arg(long, default_value_t = 20)]
    resume_runs: usize,
    /// Times the resume scenario kills and restarts the server, one after another.
    #[arg(long, default_value_t = 1)]
    resume_kills: usize,
    /// The `hermesd` binary the resume scenario starts again (`all`) after the kill.
    #[arg(long)]
    restart_bin: Option<PathBuf>,
    /// Where the restarted server's output goes.
    #[arg(long, default_value = "/tmp/hermes-loadtest-hermesd.log")]
    restart_log: PathBuf,
    /// Where the restarted server's pid is written.
    #[arg(long, default_value = "/tmp/hermes-loadtest-hermesd.pid")]
    restart_pid_file: PathBuf,
    /// How long the slow model takes to answer (the resume figure leaves one call out).
    #[arg(long, default_value_t = 10_000)]
    slow_model_ms: u64,
    /// Warm-up turns (not measured) before the first scenario.
    #[arg(long, default_value_t = 50)]
    warmup: usize,
    /// Write this run's figures here (JSON), for a paired comparison.
    #[arg(long)]
    write_figures: Option<PathBuf>,
    /// Compare instead of running: the figures of the other build's runs, in pair order.
    #[arg(long, value_delimiter = ',', requires = "head")]
    base: Vec<PathBuf>,
    /// ... and of this build's runs, in the same order.
    #[arg(long, value_delimiter = ',')]
    head: Vec<PathBuf>,
    /// How far a figure may move in every pair before it is called better or regressed (0.05:
    /// 5 %; paired runs on one machine agree within a few percent).
    #[arg(long, default_value_t = 0.05)]
    tolerance: f64,
    /// Exit with status 3 when a figure regressed in the comparison.
    #[arg(long)]
    fail_on_regression: bool,
}

/// The comparison of paired runs (`--base`, `--head`).
fn compare_pairs(args: &Args) -> anyhow::Result<ExitCode> {
    let regressed = load::pairs::compare(&args.base, &args.head, args.tolerance)?;
    if regressed.is_empty() {
        println!("\nno figure is worse past the tolerance in every pair");
        return Ok(ExitCode::SUCCESS);
    }
    println!("\n{} figure(s) REGRESSED in every pair: {}", regressed.len(), regressed.join(", "));
    Ok(if args.fail_on_regression { ExitCode::from(3) } else { ExitCode::SUCCESS })
}

#[tokio::main]
async fn main() -> anyhow::Result<ExitCode> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = Args::parse();
    if !args.base.is_empty() {
        return compare_pairs(&args);
    }
    let (Some(key), Some(model)) = (&args.key, &args.model) else {
        anyhow::bail!("--key and --model are needed to run");
    };
    let target = Target::new(&args.url, key, Duration::from_secs(args.request_timeout_seconds))?;
    let mut bench =
        Bench::new(target, model.clone(), args.slow_model.clone(), args.ops_url.clone(), Rss::watch(args.pid));
    bench.warm_up(args.warmup).await;
    for scenario in &args.scenarios {
        match scenario {
            Scenario::Plain => bench.sequential("plain", Kind::Plain, args.turns).await,
            Scenario::Tool => bench.sequential("tool", Kind::Tool, args.turns).await,
            Scenario::Stream => bench.sequential("stream", Kind::Stream, args.turns).await,
            Scenario::Continued => bench.continued("continued", args.history, args.turns.min(100)).await,
            Scenario::Clients => {
                for &c in &args.clients {
                    bench.clients(&format!("clients{c}"), c, args.seconds).await;
                }
            }
            Scenario::InFlight => {
                let ramp = Duration::from_secs_f64(args.in_flight_ramp_seconds.max(0.0));
                bench.in_flight("in_flight", args.in_flight, ramp).await;
            }
            // Last, whatever its place in the list: it replaces the server.
            Scenario::Resume => {}
        }
    }
    if args.scenarios.contains(&Scenario::Resume) {
        match (args.pid, &args.restart_bin) {
            (Some(pid), Some(bin)) => {
                let mut restart = Restart {
                    bin: bin.clone(),
                    log: args.restart_log.clone(),
                    pid_file: args.restart_pid_file.clone(),
                    pid,
                    model_latency: Duration::from_millis(args.slow_model_ms),
                };
                bench.resume("resume", args.resume_runs, args.resume_kills, &mut restart).await;
            }
            _ => bench.errors.push("resume: needs --pid and --restart-bin".to_owned()),
        }
    }
    bench.figures.print();
    if let Some(path) = &args.write_figures {
        bench.figures.write(path)?;
    }
    if !bench.errors.is_empty() {
        eprintln!("\n{} request(s) FAILED; the first ones:", bench.errors.len());
        for e in bench.errors.iter().take(10) {
            eprintln!("  {e}");
        }
        return Ok(ExitCode::FAILURE);
    }
    println!("every request succeeded");
    Ok(ExitCode::SUCCESS)
}
