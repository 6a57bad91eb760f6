//! Workers that died: their turns are handed on as soon as two reaper passes in a row find
//! their presence lock free (`hermes_store::system::presence`), not when their leases run out.
//! The second look gives a worker whose lock's connection dropped (a Postgres restart) time to
//! take it again; a worker judged gone wrongly loses its turns to fencing, never to a second
//! writer. After the reaper's own database calls fail (a restart, a failover: every presence
//! lock went with the old server's connections), or when the server answering is another one
//! than on the last pass (a failover or restart the reaper's calls waited through without an
//! error), nobody is judged gone for [`SETTLE_AFTER_TROUBLE`], while the workers take their
//! locks again on the server now in use; a real death then waits for its lease, as before
//! presence.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use hermes_store::StoreError;

use crate::SchedulerContext;

/// How long after a failed database call nobody is judged gone.
pub const SETTLE_AFTER_TROUBLE: Duration = Duration::from_secs(10);

/// The lease prefixes found gone on the last pass.
#[derive(Default)]
pub struct GoneWorkers {
    suspected: HashSet<String>,
    /// No judging before this: the database was in trouble.
    quiet_until: Option<Instant>,
    /// The server the last pass asked.
    server: Option<String>,
}

impl GoneWorkers {
    /// The reaper's database calls failed: presence locks may be gone with their server.
    pub fn database_trouble(&mut self) {
        self.suspected.clear();
        self.quiet_until = Some(Instant::now() + SETTLE_AFTER_TROUBLE);
    }

    /// Whether `server` answered the last pass too; if not, the database was in trouble.
    fn same_server(&mut self, server: String) -> bool {
        let moved = self.server.as_ref().is_some_and(|last| *last != server);
        self.server = Some(server);
        if moved {
            tracing::warn!(
                "the database server changed; judging no worker gone while they take their presence locks again"
            );
            self.database_trouble();
        }
        !moved
    }

    /// One pass: hands on the running turns of workers found gone on this pass and the last
    /// (their session locks released, their work published); returns how many.
    pub async fn pass(&mut self, ctx: &SchedulerContext) -> Result<usize, StoreError> {
        if self.quiet_until.is_some_and(|until| Instant::now() < until) {
            return Ok(0);
        }
        let scan = ctx.store.system().gone_workers().await?;
        if !self.same_server(scan.server) {
            return Ok(0);
        }
        let gone: HashSet<String> = scan.workers.into_iter().collect();
        let confirmed: Vec<String> = gone.intersection(&self.suspected).cloned().collect();
        self.suspected = gone;
        if confirmed.is_empty() {
            return Ok(0);
        }
        let orphans = ctx.store.system().release_turns_of_gone_workers(&confirmed).await?;
        let locks = ctx.cache.session_locks();
        for orphan in &orphans {
            // Without this the next worker would find the session locked until the lock lapses.
            if let Err(e) = locks.break_abandoned(orphan.turn.session_id, &orphan.lease_owner).await {
                tracing::warn!(error = %e, session.id = %orphan.turn.session_id, "cannot release a gone worker's session lock; it lapses");
            }
        }
        let turns: Vec<_> = orphans.iter().map(|o| o.turn).collect();
        tracing::info!(workers = ?confirmed, turns = turns.len(), "workers gone; handing their turns on");
        // Also counted in `hermes_reaper_republished_total`, with every other turn handed out again.
        metrics::counter!("hermes_reaper_orphans_total").increment(turns.len() as u64);
        crate::republish(ctx, &turns).await;
        Ok(turns.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_server_answering_quiets_the_judging_as_a_failed_call_does() {
        let mut gone = GoneWorkers::default();
        assert!(gone.same_server("10.0.0.1 5432 2026-12-07 03:00:00+00".into()), "the first look");
        gone.suspected.insert("worker-a/1".into());
        assert!(gone.same_server("10.0.0.1 5432 2026-12-07 03:00:00+00".into()));
        assert!(gone.quiet_until.is_none());
        // The standby was promoted: every presence lock went with the old primary.
        assert!(!gone.same_server("10.0.0.2 5432 2026-12-01 09:00:00+00".into()));
        assert!(gone.suspected.is_empty(), "suspicions from the old server are dropped");
        assert!(gone.quiet_until.is_some_and(|until| until > Instant::now() + SETTLE_AFTER_TROUBLE / 2));
        assert!(gone.same_server("10.0.0.2 5432 2026-12-01 09:00:00+00".into()), "the new one, from then on");
    }
}
