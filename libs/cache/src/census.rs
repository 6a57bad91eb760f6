//! The workers' sandbox reports ([`SandboxReport`]): each worker's latest one under its own key
//! with an expiry, and the workers indexed by when they last reported. A worker that stops
//! reporting drops out of the view once its report expires.

use std::time::Duration;

use redis::AsyncCommands;

use hermes_core::census::SandboxReport;

use crate::{Cache, Result};

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
        let mut conn = self.cache.conn();
        let _: () = redis::pipe()
            .set_ex(self.report_key(&report.worker), json, keep.as_secs().max(1))
            .zadd(self.index(), &report.worker, report.at.timestamp())
            .query_async(&mut conn)
            .await?;
        Ok(())
    }

    /// The reports not yet expired, by worker name.
    pub async fn reports(&self) -> Result<Vec<SandboxReport>> {
        let mut conn = self.cache.conn();
        let workers: Vec<String> = conn.zrange(self.index(), 0, -1).await?;
        if workers.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = workers.iter().map(|w| self.report_key(w)).collect();
        let found: Vec<Option<String>> = redis::cmd("MGET").arg(&keys).query_async(&mut conn).await?;
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
        reports.sort_by(|a, b| a.worker.cmp(&b.worker));
        Ok(reports)
    }
}
