//! The turns running here and their one heartbeat. Every `worker.heartbeat_millis` the worker
//! extends the leases of all its turns in one statement and their session locks in one Redis
//! call (in batches of [`BATCH`]), instead of a statement and a call per turn: at 10,000 turns
//! waiting on their models that was 5,000 statements a second, which filled both cores.
//! A turn learns from here that it was asked to stop (`cancel`) or lost its lease (`lost`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use hermes_cache::LockGuard;
use hermes_core::{TenantId, TurnId};
use hermes_store::{HeldLease, LeaseState};

use crate::Runtime;
use crate::every::Every;

/// Leases and locks extended by one statement and one Redis call.
const BATCH: usize = 1_000;

/// Turns running here, by id: for the heartbeat, and so a cancellation reaches the one it names.
#[derive(Default)]
pub(crate) struct Running {
    turns: Mutex<HashMap<TurnId, Beating>>,
}

/// What the heartbeat keeps for a running turn.
#[derive(Clone)]
struct Beating {
    tenant: TenantId,
    owner: Arc<str>,
    lock: LockGuard,
    cancel: CancellationToken,
    lost: CancellationToken,
}

impl Running {
    /// Lists `turn` until [`Running::remove`]; the returned token is cancelled when its lease
    /// is lost.
    pub fn insert(
        &self,
        turn: TurnId,
        tenant: TenantId,
        owner: &str,
        lock: &LockGuard,
        cancel: &CancellationToken,
    ) -> CancellationToken {
        let lost = CancellationToken::new();
        let beating =
            Beating { tenant, owner: owner.into(), lock: lock.clone(), cancel: cancel.clone(), lost: lost.clone() };
        if let Ok(mut turns) = self.turns.lock() {
            turns.insert(turn, beating);
            gauge(turns.len());
        }
        lost
    }

    pub fn remove(&self, turn: TurnId) {
        if let Ok(mut turns) = self.turns.lock() {
            turns.remove(&turn);
            gauge(turns.len());
        }
    }

    /// Cancels `turn` if it runs here.
    pub fn cancel(&self, turn: TurnId) -> bool {
        let cancel = self.turns.lock().ok().and_then(|turns| turns.get(&turn).map(|b| b.cancel.clone()));
        cancel.map(|c| c.cancel()).is_some()
    }

    fn snapshot(&self) -> Vec<(TurnId, Beating)> {
        self.turns.lock().map(|turns| turns.iter().map(|(t, b)| (*t, b.clone())).collect()).unwrap_or_default()
    }
}

/// Turns this worker runs now (claimed, not yet ended): what an autoscaler or the load test
/// reads.
fn gauge(running: usize) {
    metrics::gauge!("hermes_worker_turns_running").set(running as f64);
}

/// Beats every `worker.heartbeat_millis` until `stop` (after the last turn has drained).
pub(crate) async fn keep_beating(rt: Arc<Runtime>, stop: CancellationToken) {
    let period = Duration::from_millis(rt.ctx.config.worker.heartbeat_millis);
    let lease = Duration::from_secs(rt.ctx.config.worker.lease_seconds);
    let mut rounds = Every::new(period, stop);
    while rounds.next().await {
        let running = rt.running.snapshot();
        // The batches side by side: a beat must end well within the lease even when the
        // database is slow.
        futures_util::future::join_all(running.chunks(BATCH).map(|batch| beat(&rt, batch, lease))).await;
    }
}

/// Extends one batch's leases and session locks together, and tells each turn what was found.
async fn beat(rt: &Runtime, batch: &[(TurnId, Beating)], lease: Duration) {
    let held: Vec<HeldLease<'_>> =
        batch.iter().map(|(turn, b)| HeldLease { tenant: b.tenant, turn: *turn, owner: &b.owner }).collect();
    let locks: Vec<LockGuard> = batch.iter().map(|(_, b)| b.lock.clone()).collect();
    let session_locks = rt.ctx.cache.session_locks();
    let (leases, locks) =
        tokio::join!(rt.ctx.store.system().extend_leases(&held, lease), session_locks.extend_all(&locks, lease));
    match leases {
        Ok(found) => {
            let by_turn: HashMap<TurnId, &Beating> = batch.iter().map(|(t, b)| (*t, b)).collect();
            for (turn, state) in found {
                let Some(beating) = by_turn.get(&turn) else { continue };
                match state {
                    LeaseState::Held | LeaseState::Ended | LeaseState::Busy => {}
                    LeaseState::CancelRequested => beating.cancel.cancel(),
                    LeaseState::Lost => {
                        tracing::warn!(turn.id = %turn, tenant.id = %beating.tenant, "turn lease lost; stopping");
                        beating.lost.cancel();
                    }
                }
            }
        }
        Err(e) => tracing::warn!(error = %e, turns = batch.len(), "cannot extend the turn leases"),
    }
    match locks {
        Ok(extended) => {
            for ((turn, b), _) in batch.iter().zip(extended).filter(|(_, ok)| !ok) {
                tracing::warn!(turn.id = %turn, session.id = %b.lock.session_id, "session lock lost; fenced writes will tell");
            }
        }
        Err(e) => tracing::warn!(error = %e, turns = batch.len(), "cannot extend the session locks"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_cancellation_reaches_only_a_turn_that_runs_here_and_only_while_it_runs() {
        let running = Running::default();
        let (turn, other) = (TurnId::new(), TurnId::new());
        let cancel = CancellationToken::new();
        let locks = hermes_cache::Cache::in_memory().session_locks();
        let lock =
            locks.try_acquire(hermes_core::SessionId::new(), "w", Duration::from_secs(9)).await.unwrap().unwrap();
        let lost = running.insert(turn, TenantId::mint(), "w/1", &lock, &cancel);
        assert!(!running.cancel(other), "not a turn of this worker");
        assert!(!cancel.is_cancelled());
        assert!(running.cancel(turn));
        assert!(cancel.is_cancelled() && !lost.is_cancelled(), "a stop is not a lost lease");
        running.remove(turn);
        assert!(!running.cancel(turn), "an ended turn is no longer listed");
        assert!(running.snapshot().is_empty(), "nor beaten for");
    }
}
