//! The scenarios: each sends its turns, keeps every latency and every error, and reports its
//! figures with the worker's split and the server's peak memory over its run.

use std::time::{Duration, Instant};

use crate::load::report::{Better, Figures};
use crate::load::server::{PeakGauge, Rss, Scrape};
use crate::load::turns::{Kind, Target};

/// What every scenario needs.
pub struct Bench {
    pub target: Target,
    /// The agent answered at once, and the one whose model takes its time.
    pub agent: String,
    pub slow_agent: Option<String>,
    pub ops_url: Option<String>,
    pub rss: Rss,
    pub figures: Figures,
    /// Every failed request, as "scenario: error".
    pub errors: Vec<String>,
    next: u64,
}

/// Latencies of one scenario.
struct Samples {
    took: Vec<Duration>,
    wall: Duration,
}

impl Bench {
    pub fn new(target: Target, agent: String, slow_agent: Option<String>, ops_url: Option<String>, rss: Rss) -> Self {
        Self { target, agent, slow_agent, ops_url, rss, figures: Figures::default(), errors: Vec::new(), next: 0 }
    }

    pub(crate) fn numbers(&mut self, n: usize) -> u64 {
        let first = self.next;
        self.next += n as u64;
        first
    }

    async fn scrape(&self) -> Scrape {
        Scrape::take(&self.target.client, self.ops_url.as_deref()).await
    }

    /// Turns not measured: connections opened, the sandbox started, caches filled.
    pub async fn warm_up(&mut self, turns: usize) {
        let first = self.numbers(turns);
        for n in first..first + turns as u64 {
            let kind = if n == first { Kind::Tool } else { Kind::Plain };
            if let Err(e) = self.target.turn(&self.agent, kind, n, None).await {
                self.errors.push(format!("warm-up: {e:#}"));
            }
        }
    }

    /// Turns one after another, each in a new session.
    pub async fn sequential(&mut self, name: &str, kind: Kind, turns: usize) {
        let first = self.numbers(turns);
        let before = self.scrape().await;
        self.rss.take_peak_mib();
        let started = Instant::now();
        let mut took = Vec::with_capacity(turns);
        for n in first..first + turns as u64 {
            match self.target.turn(&self.agent, kind, n, None).await {
                Ok(done) => took.push(done.took),
                Err(e) => self.errors.push(format!("{name}: {e:#}")),
            }
        }
        let samples = Samples { took, wall: started.elapsed() };
        self.report(name, samples, &before).await;
    }

    /// `clients` clients, each sending turns one after another for `seconds`.
    pub async fn clients(&mut self, name: &str, clients: usize, seconds: u64) {
        let before = self.scrape().await;
        self.rss.take_peak_mib();
        let deadline = Instant::now() + Duration::from_secs(seconds);
        let started = Instant::now();
        let mut tasks = Vec::new();
        for c in 0..clients {
            let target = self.target.clone();
            let agent = self.agent.clone();
            let mut n = self.next + (c as u64) * 10_000_000;
            tasks.push(tokio::spawn(async move {
                let (mut took, mut errors) = (Vec::new(), Vec::new());
                while Instant::now() < deadline {
                    match target.turn(&agent, Kind::Plain, n, None).await {
                        Ok(done) => took.push(done.took),
                        Err(e) => errors.push(format!("{e:#}")),
                    }
                    n += 1;
                }
                (took, errors)
            }));
        }
        self.next += (clients as u64) * 10_000_000;
        let mut took = Vec::new();
        for task in tasks {
            match task.await {
                Ok((t, errors)) => {
                    took.extend(t);
                    self.errors.extend(errors.into_iter().map(|e| format!("{name}: {e}")));
                }
                Err(e) => self.errors.push(format!("{name}: a client panicked: {e}")),
            }
        }
        let samples = Samples { took, wall: started.elapsed() };
        self.figures.add(
            &format!("{name}.turns_per_s"),
            samples.took.len() as f64 / samples.wall.as_secs_f64(),
            Better::Higher,
        );
        self.report(name, samples, &before).await;
    }

    /// One session grown to `history` messages (two a turn), then `turns` more turns in it;
    /// its median against a fresh session's (`fresh_median_ms`, the `plain` scenario's).
    pub async fn continued(&mut self, name: &str, history: usize, turns: usize) {
        let grow = history / 2;
        let first = self.numbers(grow + turns);
        let mut session: Option<String> = None;
        for n in first..first + grow as u64 {
            match self.target.turn(&self.agent, Kind::Plain, n, session.as_deref()).await {
                Ok(done) => session = session.or(done.session),
                Err(e) => {
                    self.errors.push(format!("{name} (growing the session): {e:#}"));
                    return;
                }
            }
        }
        let Some(session) = session else {
            self.errors.push(format!("{name}: the API named no session (X-Hermes-Session-Id)"));
            return;
        };
        let before = self.scrape().await;
        self.rss.take_peak_mib();
        let started = Instant::now();
        let mut took = Vec::with_capacity(turns);
        for n in first + grow as u64..first + (grow + turns) as u64 {
            match self.target.turn(&self.agent, Kind::Plain, n, Some(&session)).await {
                Ok(done) => took.push(done.took),
                Err(e) => self.errors.push(format!("{name}: {e:#}")),
            }
        }
        took.sort();
        let median = percentile(&took, 0.5);
        let samples = Samples { took, wall: started.elapsed() };
        self.report(name, samples, &before).await;
        if let (Some(fresh), Some(median)) = (self.figures.get("plain.median_ms"), median) {
            self.figures.add(&format!("{name}.vs_fresh"), ms(median) / fresh, Better::Lower);
        }
    }

    /// `turns` turns at once against the slow agent, sent evenly over `ramp`: all must be in
    /// flight together, so the wall time stays near one model call plus the ramp. The worker's
    /// peak of running turns (`hermes_worker_turns_running`) says whether they were.
    pub async fn in_flight(&mut self, name: &str, turns: usize, ramp: Duration) {
        let Some(agent) = self.slow_agent.clone() else {
            self.errors.push(format!("{name}: no slow agent (--slow-model)"));
            return;
        };
        let first = self.numbers(turns);
        let before = self.scrape().await;
        self.rss.take_peak_mib();
        let peak = PeakGauge::watch(&self.target.client, self.ops_url.as_deref(), "hermes_worker_turns_running");
        let started = Instant::now();
        let tasks: Vec<_> = (0..turns as u64)
            .map(|i| {
                let (target, agent) = (self.target.clone(), agent.clone());
                let at = tokio::time::Instant::now() + ramp.mul_f64(i as f64 / turns as f64);
                tokio::spawn(async move {
                    tokio::time::sleep_until(at).await;
                    target.turn(&agent, Kind::Plain, first + i, None).await
                })
            })
            .collect();
        let mut took = Vec::with_capacity(turns);
        for task in tasks {
            match task.await {
                Ok(Ok(done)) => took.push(done.took),
                Ok(Err(e)) => self.errors.push(format!("{name}: {e:#}")),
                Err(e) => self.errors.push(format!("{name}: a request panicked: {e}")),
            }
        }
        let wall = started.elapsed();
        if let Some(peak) = peak.stop() {
            println!("{name}: the worker ran at most {peak:.0} turns at once");
            self.figures.add(&format!("{name}.peak_running"), peak, Better::Higher);
        }
        self.figures.add(&format!("{name}.completed"), took.len() as f64, Better::Higher);
        self.figures.add(&format!("{name}.wall_s"), wall.as_secs_f64(), Better::Lower);
        self.report(name, Samples { took, wall }, &before).await;
    }

    /// Median and p99, the worker's split per turn, the queue pickup's median, peak RSS.
    async fn report(&mut self, name: &str, mut samples: Samples, before: &Scrape) {
        samples.took.sort();
        let after = self.scrape().await;
        let (Some(median), Some(p99)) = (percentile(&samples.took, 0.5), percentile(&samples.took, 0.99)) else {
            return;
        };
        self.figures.add(&format!("{name}.median_ms"), ms(median), Better::Lower);
        self.figures.add(&format!("{name}.p99_ms"), ms(p99), Better::Lower);
        let split = after.split_since(before, samples.took.len());
        let split_text: Vec<String> = split
            .iter()
            .map(|(phase, v)| match v {
                Some(v) => format!("{phase} {v:.2}"),
                None => format!("{phase} -"),
            })
            .collect();
        if let Some(p) = after.pickup_median {
            self.figures.add(&format!("{name}.pickup_p50_ms"), p * 1000.0, Better::Lower);
        }
        let rss = self.rss.take_peak_mib();
        if let Some(rss) = rss {
            self.figures.add(&format!("{name}.rss_mib"), rss, Better::Lower);
        }
        println!(
            "{name}: n={} median={:.2}ms p99={:.2}ms max={:.2}ms {:.1} turns/s | worker ms/turn: {} | rss peak {}",
            samples.took.len(),
            ms(median),
            ms(p99),
            samples.took.last().map(|d| ms(*d)).unwrap_or_default(),
            samples.took.len() as f64 / samples.wall.as_secs_f64(),
            split_text.join(", "),
            rss.map_or("-".to_owned(), |r| format!("{r:.0} MiB")),
        );
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The `p` quantile of sorted samples (nearest rank); `None` when there are none.
fn percentile(sorted: &[Duration], p: f64) -> Option<Duration> {
    let last = sorted.len().checked_sub(1)?;
    let idx = ((last as f64) * p).round() as usize;
    sorted.get(idx.min(last)).copied()
}
