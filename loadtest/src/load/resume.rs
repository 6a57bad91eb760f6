//! Resume after SIGKILL: runs in flight on the slow model, `hermesd all` killed with SIGKILL
//! and started again, and the time until every run is answered. Nothing of a killed turn may
//! be lost: each run must complete with the scripted model's echo. The figure is the time
//! from the kill to the answer less one model call (the resumed attempt calls the model
//! again), so it is what the crash cost: the lease running out, the reaper, the restart.

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
    /// The process to kill.
    pub pid: u32,
    /// How long the slow model takes to answer.
    pub model_latency: Duration,
}

/// Longest wait for a run to start, and for all to be answered after the kill.
const START_WAIT: Duration = Duration::from_secs(60);
const ANSWER_WAIT: Duration = Duration::from_secs(180);

impl Bench {
    /// `runs` runs on the slow agent, the server killed while they wait on the model.
    pub async fn resume(&mut self, name: &str, runs: usize, restart: &Restart) {
        match self.try_resume(name, runs, restart).await {
            Ok(()) => {}
            Err(e) => self.errors.push(format!("{name}: {e:#}")),
        }
    }

    async fn try_resume(&mut self, name: &str, runs: usize, restart: &Restart) -> anyhow::Result<()> {
        let Some(agent) = self.slow_agent.clone() else { bail!("no slow agent (--slow-model)") };
        let first = self.numbers(runs);
        let mut started = Vec::with_capacity(runs);
        for n in first..first + runs as u64 {
            started.push((start_run(&self.target, &agent, n).await?, n));
        }
        wait_until_running(&self.target, &started).await?;
        let killed = Instant::now();
        kill(restart.pid)?;
        let new_pid = start_again(restart)?;
        let ready = wait_ready(&self.target.client, self.ops_url.as_deref()).await;
        let mut took = Vec::with_capacity(runs);
        for (id, n) in &started {
            let answered = wait_answered(&self.target, id, *n, killed).await?;
            took.push(answered.saturating_sub(restart.model_latency));
        }
        took.sort();
        let median = took[took.len() / 2];
        let max = took.last().copied().unwrap_or_default();
        self.figures.add(&format!("{name}.median_ms"), ms(median), Better::Lower);
        self.figures.add(&format!("{name}.max_ms"), ms(max), Better::Lower);
        println!(
            "{name}: n={} killed pid {} with SIGKILL, restarted as {new_pid} (ready after {:.1} s); \
             every run answered; kill to answer, less one model call: median {:.2} s, max {:.2} s",
            took.len(),
            restart.pid,
            ready.as_secs_f64(),
            median.as_secs_f64(),
            max.as_secs_f64(),
        );
        Ok(())
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

async fn run_state(target: &Target, id: &str) -> anyhow::Result<Value> {
    let resp = target.client.get(format!("{}/v1/runs/{id}", target.url)).bearer_auth(&target.key).send().await?;
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

/// Time until the restarted server says it is ready (its old ports freed by the kill).
async fn wait_ready(client: &reqwest::Client, ops_url: Option<&str>) -> Duration {
    let started = Instant::now();
    let Some(ops) = ops_url else { return Duration::ZERO };
    while started.elapsed() < START_WAIT {
        if client.get(format!("{ops}/readyz")).send().await.is_ok_and(|r| r.status().is_success()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    started.elapsed()
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

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
