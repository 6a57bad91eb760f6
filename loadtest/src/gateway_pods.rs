//! The gateway pods of `hermes-gateway-bench`: `hermesd gateway` processes on this machine,
//! and what /proc and their metrics say of them.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio::process::{Child, Command};

/// `gateway.lease_seconds` of the bench's pods (the default).
pub const LEASE_SECONDS: u64 = 15;

/// What every pod is started with.
pub struct Settings<'a> {
    pub database_url: &'a str,
    /// The platform whose bots are counted.
    pub platform: hermes_core::Platform,
    /// What lets the pods reach the emulators on loopback.
    pub reach: Vec<(&'static str, String)>,
    pub master_key: &'a str,
}

pub struct Pod {
    child: Child,
    pid: u32,
    metrics: String,
    /// `hermes_gateway_bots_served{platform="…"}`.
    gauge: String,
    http: reqwest::Client,
    idle_rss_kb: u64,
    /// CPU ticks and when they were read, from [`Pod::mark_cpu`].
    cpu_mark: (u64, Instant),
}

fn proc_status_kb(pid: u32, field: &str) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status.lines().find(|l| l.starts_with(field)).context("no such field")?;
    Ok(line.split_whitespace().nth(1).context("no value")?.parse()?)
}

/// User and system CPU ticks (1/100 s) the process has used.
fn cpu_ticks(pid: u32) -> Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The fields after the command name (which may hold spaces) end at its ')'.
    let rest = stat.rsplit_once(')').context("no command")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Ok(fields.get(11).context("no utime")?.parse::<u64>()? + fields.get(12).context("no stime")?.parse::<u64>()?)
}

impl Pod {
    pub async fn start(hermesd: &str, s: &Settings<'_>, ops_port: u16) -> Result<Self> {
        let log = std::fs::File::create(std::env::temp_dir().join(format!("gateway-bench-{ops_port}.log")))?;
        let prefix = format!("hermes-gateway-bench-{}", std::process::id());
        let child = Command::new(hermesd)
            .arg("gateway")
            .env("HERMES__DATABASE__URL", s.database_url)
            .env("HERMES__GATEWAY__BIND", "127.0.0.1:0")
            .env("HERMES__OPS__BIND", format!("127.0.0.1:{ops_port}"))
            .env("HERMES__GATEWAY__LEASE_SECONDS", LEASE_SECONDS.to_string())
            .envs(s.reach.iter().map(|(k, v)| (*k, v.as_str())))
            .env("HERMES__SECRETS__MASTER_KEY", s.master_key)
            .env("HERMES__RABBITMQ__PREFIX", &prefix)
            .env("HERMES__RABBITMQ__QUEUE_EXPIRES_SECONDS", "60")
            .env("HERMES__REDIS__KEY_PREFIX", &prefix)
            .env("HERMES__TELEMETRY__LOG_FILTER", std::env::var("GATEWAY_BENCH_LOG").as_deref().unwrap_or("warn"))
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("cannot start {hermesd}"))?;
        let pid = child.id().context("the pod exited at once")?;
        let pod = Self {
            child,
            pid,
            metrics: format!("http://127.0.0.1:{ops_port}/metrics"),
            gauge: format!("hermes_gateway_bots_served{{platform=\"{}\"}} ", s.platform),
            http: reqwest::Client::new(),
            idle_rss_kb: 0,
            cpu_mark: (0, Instant::now()),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while pod.http.get(&pod.metrics).send().await.is_err() {
            anyhow::ensure!(Instant::now() < deadline, "the pod on ops port {ops_port} never came up");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Ok(pod)
    }

    /// Records the pod's memory before it serves any bot.
    pub fn mark_idle_rss(&mut self) -> Result<()> {
        self.idle_rss_kb = proc_status_kb(self.pid, "VmRSS:")?;
        Ok(())
    }

    /// Starts the window [`Pod::report`] gives the CPU of.
    pub fn mark_cpu(&mut self) -> Result<()> {
        self.cpu_mark = (cpu_ticks(self.pid)?, Instant::now());
        Ok(())
    }

    /// The pod's `hermes_gateway_bots_served` for the platform.
    pub async fn bots_served(&self) -> Result<usize> {
        let text = self.http.get(&self.metrics).send().await?.text().await?;
        let line = text.lines().find(|l| l.starts_with(&self.gauge)).context("no bots_served gauge yet")?;
        Ok(line.rsplit(' ').next().context("no value")?.parse::<f64>()? as usize)
    }

    /// Bots served, memory (and per bot over its idle start), open descriptors and CPU.
    /// `assumed` stands for the bots served where the pod has no gauge of them (an older
    /// build measured for comparison).
    pub async fn report(&self, assumed: usize) -> Result<String> {
        let served = self.bots_served().await.unwrap_or(assumed);
        let rss = proc_status_kb(self.pid, "VmRSS:")?;
        let hwm = proc_status_kb(self.pid, "VmHWM:")?;
        let fds = std::fs::read_dir(format!("/proc/{}/fd", self.pid))?.count();
        let (ticks, since) = self.cpu_mark;
        let cpu = (cpu_ticks(self.pid)? - ticks) as f64 / 100.0 / since.elapsed().as_secs_f64() * 100.0;
        let per_bot = (rss.saturating_sub(self.idle_rss_kb)) as f64 * 1024.0 / served.max(1) as f64;
        Ok(format!(
            "{served} bots, RSS {} MiB (peak {} MiB; idle before the bots {} MiB; {:.1} KB a bot), {fds} descriptors, CPU {cpu:.1} % of a core",
            rss / 1024,
            hwm / 1024,
            self.idle_rss_kb / 1024,
            per_bot / 1000.0
        ))
    }

    pub async fn kill(&mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}
