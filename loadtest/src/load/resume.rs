//! Resume after SIGKILL: runs in flight on the slow model, `hermesd all` killed with SIGKILL
//! and started again, and the time until every run is answered; `--resume-kills` rounds of it
//! in a row. Nothing of a killed turn may be lost: each run must complete with the scripted
//! model's echo. The figure is the time from the kill to the answer less one model call (the
//! resumed attempt calls the model again), so it is what the crash cost: noticing the dead
//! worker, the reaper, the restart.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use serde_json::{Value, json};

use crate::load::report::Better;
use crate::load::scenarios::Bench;
use crate::load::turns::Target;

/// How to start `hermesd all` again after the kill.
pub struct Restart {
    /// The `hermesd` binary (it inherits this process's environment, as `run.sh` set it).
    pub bin: PathBuf,
    /// Where the new process's output goes (appended).
    pub log: PathBuf,
    /// Where its pid is written, for whoever stops it afterwards.
    pub pid_file: PathBuf,
    /// The process to kill; each round replaces it with the one it started.
    pub pid: u32,
    /// How long the slow model takes to answer.
    pub model_latency: Duration,
}

/// Longest wait for a run to start, and for all to be answered after the kill.
const START_WAIT: Duration = Duration::from_secs(60);
const ANSWER_WAIT: Duration = Duration::from_secs(180);
/// An answer this long after the kill is reported on its own, with when the kill was.
const SLOW_ANSWER: Duration = Duration::from_secs(15);
/// Longest wait for the killed process to be gone (its ports freed).
const EXIT_WAIT: Duration = Duration::from_secs(10);

/// What the rounds measured.
#[derive(Default)]
struct Rounds {
    /// Kill to answer, less one model call, of every answered run.
    took: Vec<Duration>,
    /// Kill to the restarted server's readiness, per round.
    ready: Vec<Duration>,
    unanswered: usize,
}

impl Bench {
    /// `kills` rounds of `runs` runs on the slow agent, the server killed while they wait on
    /// the model and started again. A run not answered is counted and the rounds go on.
    pub async fn resume(&mut self, name: &str, runs: usize, kills: usize, restart: &mut Restart) {
        let mut rounds = Rounds::default();
        for round in 0..kills.max(1) {
            if let Err(e) = self.resume_round(runs, restart, &mut rounds).await {
                self.errors.push(format!("{name} round {}: {e:#}", round + 1));
                if !process_alive(restart.pid) {
                    break;
                }
            }
        }
        self.report_resume(name, runs, &rounds, restart);
    }

    async fn resume_round(&mut self, runs: usize, restart: &mut Restart, rounds: &mut Rounds) -> anyhow::Result<()> {
        let Some(agent) = self.slow_agent.clone() else { bail!("no slow agent (--slow-model)") };
        let first = self.numbers(runs);
        let mut started = Vec::with_capacity(runs);
        for n in first..first + runs as u64 {
            started.push((start_run(&self.target, &agent, n).await?, n));
        }
        wait_until_running(&self.target, &started).await?;
        let killed = Instant::now();
        let killed_at = chrono::Utc::now();
        kill(restart.pid)?;
        let ports = [self.target.url.as_str(), self.ops_url.as_deref().unwrap_or_default()];
        wait_gone(restart.pid, &ports).await?;
        restart.pid = start_again(restart)?;
        wait_ready(&self.target.client, self.ops_url.as_deref()).await;
        rounds.ready.push(killed.elapsed());
        let mut missed = Vec::new();
        for (id, n) in &started {
            match wait_answered(&self.target, id, *n, killed).await {
                Ok(answered) => {
                    if answered > SLOW_ANSWER {
                        eprintln!(
                            "run {id} killed at {} answered {:.1} s later",
                            killed_at.to_rfc3339(),
                            answered.as_secs_f64()
                        );
                    }
                    rounds.took.push(answered.saturating_sub(restart.model_latency));
                }
                Err(e) => missed.push(format!("{e:#}")),
            }
        }
        rounds.unanswered += missed.len();
        ensure!(missed.is_empty(), "{} of {runs} runs unanswered: {}", missed.len(), missed.join("; "));
        Ok(())
    }

    fn report_resume(&mut self, name: &str, runs: usize, rounds: &Rounds, restart: &Restart) {
        let mut took = rounds.took.clone();
        took.sort();
        let mut ready = rounds.ready.clone();
        ready.sort();
        let Some(max) = took.last().copied() else { return };
        let median = took[took.len() / 2];
        let p90 = took[(took.len() * 9 / 10).min(took.len() - 1)];
        self.figures.add(&format!("{name}.median_ms"), ms(median), Better::Lower);
        self.figures.add(&format!("{name}.max_ms"), ms(max), Better::Lower);
        println!(
            "{name}: {} kill(s) with SIGKILL of {runs} run(s) each, now pid {}; {} answered, {} unanswered; \
             kill to ready: median {:.2} s; kill to answer, less one model call ({:.1} s): \
             median {:.2} s, p90 {:.2} s, max {:.2} s",
            ready.len(),
            restart.pid,
            took.len(),
            rounds.unanswered,
            ready[ready.len() / 2].as_secs_f64(),
            restart.model_latency.as_secs_f64(),
            median.as_secs_f64(),
            p90.as_secs_f64(),
            max.as_secs_f64(),
        );
    }
}

async fn start_run(target: &Target, agent: &str, n: u64) -> anyhow::Result<String> {
    let resp = target
        .client
        .post(format!("{}/v1/runs", target.url))
        .bearer_auth(&target.key)
        .json(&json!({"model": agent, "input": format!("ping-{n}")}))
        .send()
        .await
        .context("starting a run")?;
    let status = resp.status();
    let body: Value = resp.json().await.context("reading the started run")?;
    ensure!(status.is_success(), "starting a run: HTTP {status}: {body}");
    body["run_id"].as_str().map(str::to_owned).context("no run_id")
}

/// Longest a poll may take: a poll that hangs is reported, and does not pass for a slow resume.
const POLL_TIMEOUT: Duration = Duration::from_secs(5);

async fn run_state(target: &Target, id: &str) -> anyhow::Result<Value> {
    let url = format!("{}/v1/runs/{id}", target.url);
    let sent = target.client.get(&url).bearer_auth(&target.key).timeout(POLL_TIMEOUT).send().await;
    let resp = sent.inspect_err(|e| report_hung(&url, e))?;
    let status = resp.status();
    let body: Value = resp.json().await?;
    ensure!(status.is_success(), "reading run {id}: HTTP {status}: {body}");
    Ok(body)
}

/// Every run is running (its model call under way), so the kill lands mid-turn.
async fn wait_until_running(target: &Target, runs: &[(String, u64)]) -> anyhow::Result<()> {
    let deadline = Instant::now() + START_WAIT;
    for (id, _) in runs {
        loop {
            let state = run_state(target, id).await?;
            match state["status"].as_str() {
                Some("running") => break,
                Some("queued") if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(20)).await,
                other => bail!("run {id} did not start running: {other:?}"),
            }
        }
    }
    // The worker has the turn; give its model request a moment to leave.
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok(())
}

fn kill(pid: u32) -> anyhow::Result<()> {
    let status = Command::new("kill").args(["-KILL", &pid.to_string()]).status().context("running kill")?;
    ensure!(status.success(), "kill -KILL {pid} failed");
    Ok(())
}

/// Whether `pid` still runs (a zombie has already closed its sockets: it counts as gone).
/// Whether any thread of `pid` is still alive. The group's first thread turns zombie as soon
/// as it exits, while the others, and the sockets they share, may outlive it.
fn process_alive(pid: u32) -> bool {
    let Ok(threads) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return false };
    threads.flatten().any(|thread| {
        std::fs::read_to_string(thread.path().join("stat"))
            .ok()
            .and_then(|stat| stat.rsplit_once(") ").map(|(_, rest)| !rest.starts_with(['Z', 'X'])))
            .unwrap_or(false)
    })
}

/// SIGKILL is delivered asynchronously: until the process is gone its listening sockets hold
/// the ports, and a server started at once fails to bind them. So: every thread gone, and each
/// of `urls`' ports free to bind again (as the server binds, with SO_REUSEADDR).
async fn wait_gone(pid: u32, urls: &[&str]) -> anyhow::Result<()> {
    let started = Instant::now();
    while process_alive(pid) {
        ensure!(started.elapsed() < EXIT_WAIT, "pid {pid} still alive {} s after SIGKILL", EXIT_WAIT.as_secs());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for url in urls {
        let Some(addr) = reqwest::Url::parse(url).ok().and_then(|u| u.socket_addrs(|| None).ok()?.into_iter().next())
        else {
            continue;
        };
        while !port_free(addr) {
            ensure!(started.elapsed() < EXIT_WAIT, "{addr} still bound {} s after SIGKILL", EXIT_WAIT.as_secs());
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    Ok(())
}

fn port_free(addr: std::net::SocketAddr) -> bool {
    let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4() } else { tokio::net::TcpSocket::new_v6() };
    socket.and_then(|s| s.set_reuseaddr(true).and_then(|()| s.bind(addr))).is_ok()
}

fn start_again(restart: &Restart) -> anyhow::Result<u32> {
    let log = std::fs::OpenOptions::new().create(true).append(true).open(&restart.log)?;
    let child = Command::new(&restart.bin)
        .arg("all")
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {} all", restart.bin.display()))?;
    std::fs::write(&restart.pid_file, child.id().to_string())?;
    Ok(child.id())
}

/// Waits until the restarted server says it is ready.
async fn wait_ready(client: &reqwest::Client, ops_url: Option<&str>) {
    let started = Instant::now();
    let Some(ops) = ops_url else { return };
    while started.elapsed() < START_WAIT {
        let url = format!("{ops}/readyz");
        match client.get(&url).timeout(POLL_TIMEOUT).send().await {
            Ok(r) if r.status().is_success() => break,
            Ok(_) => {}
            Err(e) => report_hung(&url, &e),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Time from the kill until run `id` completed with turn `n`'s echo.
async fn wait_answered(target: &Target, id: &str, n: u64, killed: Instant) -> anyhow::Result<Duration> {
    let word = format!("ping-{n}");
    loop {
        // The API restarts with the worker: a refused connection is waited out.
        if let Ok(state) = run_state(target, id).await {
            match state["status"].as_str() {
                Some("completed") => {
                    let output = state["output"].as_str().unwrap_or_default();
                    ensure!(output.contains(&word), "run {id} answered without {word:?}: {output}");
                    return Ok(killed.elapsed());
                }
                Some("failed" | "cancelled") => bail!("run {id} ended {}: {}", state["status"], state["error"]),
                _ => {}
            }
        }
        if killed.elapsed() > ANSWER_WAIT {
            bail!("run {id} not answered {} s after the kill", ANSWER_WAIT.as_secs());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Says when a poll timed out (to match with the server's log).
fn report_hung(url: &str, e: &reqwest::Error) {
    if e.is_timeout() {
        eprintln!("{}: GET {url} got no answer within {} s", chrono::Utc::now().to_rfc3339(), POLL_TIMEOUT.as_secs());
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
