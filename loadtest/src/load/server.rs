//! What the server says about itself during a scenario: the worker's turn split from the ops
//! port's `/metrics` (sums and counts of `hermes_turn_phase_seconds`, so a scenario's split is
//! the difference of two scrapes), and the resident memory of the `hermesd` process.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The phases the worker reports, in the order of a turn.
pub const PHASES: [&str; 6] = ["pickup", "claim", "prompt", "model", "tools", "finish"];

/// Sums (seconds) and counts of each phase, and the queue pickup's median.
#[derive(Debug, Clone, Default)]
pub struct Scrape {
    sums: BTreeMap<String, f64>,
    counts: BTreeMap<String, f64>,
    pub pickup_median: Option<f64>,
}

impl Scrape {
    /// Reads `/metrics`; an unreachable ops port gives an empty scrape (the figures say n/a).
    pub async fn take(client: &reqwest::Client, ops_url: Option<&str>) -> Self {
        let Some(url) = ops_url else { return Self::default() };
        let Ok(resp) = client.get(format!("{url}/metrics")).send().await else { return Self::default() };
        let Ok(text) = resp.text().await else { return Self::default() };
        Self::parse(&text)
    }

    fn parse(text: &str) -> Self {
        let mut scrape = Self::default();
        for line in text.lines().filter(|l| l.starts_with("hermes_turn_phase_seconds")) {
            let Some((name, value)) = line.rsplit_once(' ') else { continue };
            let Ok(value) = value.parse::<f64>() else { continue };
            let Some(phase) = label(name, "phase") else { continue };
            if name.starts_with("hermes_turn_phase_seconds_sum") {
                scrape.sums.insert(phase.to_owned(), value);
            } else if name.starts_with("hermes_turn_phase_seconds_count") {
                scrape.counts.insert(phase.to_owned(), value);
            } else if phase == "pickup" && label(name, "quantile") == Some("0.5") {
                scrape.pickup_median = Some(value);
            }
        }
        scrape
    }

    /// Milliseconds per turn spent in each phase between `earlier` and `self`, over `turns`
    /// turns (a phase that happens twice a turn, like two model calls, counts both).
    pub fn split_since(&self, earlier: &Scrape, turns: usize) -> Vec<(&'static str, Option<f64>)> {
        PHASES
            .iter()
            .map(|&phase| {
                let sum =
                    self.sums.get(phase).copied().unwrap_or(0.0) - earlier.sums.get(phase).copied().unwrap_or(0.0);
                let seen =
                    self.counts.get(phase).copied().unwrap_or(0.0) > earlier.counts.get(phase).copied().unwrap_or(0.0);
                let per_turn = (seen && turns > 0).then(|| sum * 1000.0 / turns as f64);
                (phase, per_turn)
            })
            .collect()
    }
}

fn label<'a>(name: &'a str, key: &str) -> Option<&'a str> {
    let start = name.find(&format!("{key}=\""))? + key.len() + 2;
    let len = name[start..].find('"')?;
    Some(&name[start..start + len])
}

/// The largest value a gauge on the ops port's `/metrics` showed, sampled every 500 ms until
/// [`PeakGauge::stop`].
pub struct PeakGauge {
    peak: Arc<AtomicU64>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl PeakGauge {
    pub fn watch(client: &reqwest::Client, ops_url: Option<&str>, name: &'static str) -> Self {
        let peak = Arc::new(AtomicU64::new(0));
        let task = ops_url.map(|url| {
            let (client, url, seen) = (client.clone(), format!("{url}/metrics"), peak.clone());
            tokio::spawn(async move {
                loop {
                    if let Ok(resp) = client.get(&url).send().await
                        && let Ok(text) = resp.text().await
                        && let Some(value) = gauge_value(&text, name)
                    {
                        seen.fetch_max(value.max(0.0).round() as u64, Ordering::Relaxed);
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            })
        });
        Self { peak, task }
    }

    /// The peak, `None` when the gauge was never seen.
    pub fn stop(self) -> Option<f64> {
        let task = self.task?;
        task.abort();
        let peak = self.peak.load(Ordering::Relaxed);
        (peak > 0).then_some(peak as f64)
    }
}

fn gauge_value(text: &str, name: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// Samples a process's resident memory every 100 ms while alive; `peak` is the largest seen
/// since the last `reset`.
#[derive(Clone, Default)]
pub struct Rss {
    peak_kib: Arc<AtomicU64>,
}

impl Rss {
    pub fn watch(pid: Option<u32>) -> Self {
        let rss = Self::default();
        if let Some(pid) = pid {
            let peak = rss.peak_kib.clone();
            tokio::spawn(async move {
                loop {
                    let Some(kib) = vm_rss_kib(pid) else { return };
                    peak.fetch_max(kib, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            });
        }
        rss
    }

    /// The peak since the last reset, in MiB (`None` without a process to watch).
    pub fn take_peak_mib(&self) -> Option<f64> {
        let kib = self.peak_kib.swap(0, Ordering::Relaxed);
        (kib > 0).then(|| kib as f64 / 1024.0)
    }
}

fn vm_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gauge_is_read_by_its_exact_name() {
        let text = "hermes_worker_turns_running_total 9\nhermes_worker_turns_running 4212\n";
        assert_eq!(gauge_value(text, "hermes_worker_turns_running"), Some(4212.0));
        assert_eq!(gauge_value("other 1\n", "hermes_worker_turns_running"), None);
    }

    #[test]
    fn a_scenario_split_is_the_difference_of_two_scrapes_per_turn() {
        let before = Scrape::parse(
            "hermes_turn_phase_seconds_sum{phase=\"model\"} 1.0\nhermes_turn_phase_seconds_count{phase=\"model\"} 10\n",
        );
        let after = Scrape::parse(
            "hermes_turn_phase_seconds{phase=\"pickup\",quantile=\"0.5\"} 0.002\n\
             hermes_turn_phase_seconds_sum{phase=\"model\"} 1.5\nhermes_turn_phase_seconds_count{phase=\"model\"} 110\n",
        );
        let split = after.split_since(&before, 100);
        let model = split.iter().find(|(p, _)| *p == "model").and_then(|(_, v)| *v);
        assert!((model.unwrap() - 5.0).abs() < 1e-9, "0.5 s over 100 turns is 5 ms a turn: {model:?}");
        assert_eq!(split.iter().find(|(p, _)| *p == "tools").unwrap().1, None, "a phase not seen is n/a, not 0");
        assert_eq!(after.pickup_median, Some(0.002));
    }
}
