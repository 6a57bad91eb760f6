//! The workers' sandbox reports ([`SandboxReport`]): each worker's latest one under its own key
//! with an expiry, and the workers indexed by when they last reported. A worker that stops
//! reporting drops out of the view once its report expires.

use std::time::Duration;

use redis::AsyncCommands;

use hermes_core::census::SandboxReport;

use crate::{Cache, Engine, Result};

#[derive(Clone)]
pub struct SandboxCensus {
    cache: Cache,
}

impl SandboxCensus {
    pub(crate) fn new(cache: Cache) -> Self {
        Self { cache }
    }

    fn index(&self) -> String {
        self.cache.key(&["sandbox-census"])
    }

    fn report_key(&self, worker: &str) -> String {
        self.cache.key(&["sandbox-census", worker])
    }

    /// Replaces `report.worker`'s report; it is shown for `keep`, unless replaced sooner.
    pub async fn publish(&self, report: &SandboxReport, keep: Duration) -> Result<()> {
        let json = serde_json::to_string(report).unwrap_or_default();
        let (key, index, secs) = (self.report_key(&report.worker), self.index(), keep.as_secs().max(1));
        match self.cache.engine() {
            Engine::Redis(redis) => {
                let _: () = redis::pipe()
                    .set_ex(key, json, secs)
                    .zadd(index, &report.worker, report.at.timestamp())
                    .query_async(&mut redis.conn())
                    .await?;
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => store.run(|d| {
                d.set(&key, &json, Some(secs.saturating_mul(1000)), false);
                // A Redis score is a double too.
                d.zadd(&index, report.at.timestamp() as f64, &report.worker);
            }),
        }
        Ok(())
    }

    /// The reports not yet expired, by worker name.
    pub async fn reports(&self) -> Result<Vec<SandboxReport>> {
        let mut reports = match self.cache.engine() {
            Engine::Redis(redis) => self.redis_reports(&mut redis.conn()).await?,
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => store.run(|d| {
                let mut reports = Vec::new();
                for worker in d.zrange(&self.index()) {
                    let json = d.get(&self.report_key(&worker));
                    match json.and_then(|j| serde_json::from_str::<SandboxReport>(&j).ok()) {
                        Some(report) => reports.push(report),
                        None => {
                            d.zrem(&self.index(), &worker);
                        }
                    }
                }
                reports
            }),
        };
        reports.sort_by(|a, b| a.worker.cmp(&b.worker));
        Ok(reports)
    }

    async fn redis_reports(&self, conn: &mut redis::aio::ConnectionManager) -> Result<Vec<SandboxReport>> {
        let workers: Vec<String> = conn.zrange(self.index(), 0, -1).await?;
        if workers.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = workers.iter().map(|w| self.report_key(w)).collect();
        let found: Vec<Option<String>> = redis::cmd("MGET").arg(&keys).query_async(conn).await?;
        let mut reports = Vec::new();
        for (worker, json) in workers.iter().zip(found) {
            match json.and_then(|j| serde_json::from_str::<SandboxReport>(&j).ok()) {
                Some(report) => reports.push(report),
                // Expired (or unreadable): the worker left; forget it.
                None => {
                    let _: () = conn.zrem(self.index(), worker).await?;
                }
            }
        }
        Ok(reports)
    }
}
