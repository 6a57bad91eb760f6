//! The turns running here and their one heartbeat. Every `worker.heartbeat_millis` the worker
//! extends the leases of all its turns in one statement and their session locks in one Redis
//! call (in batches of [`BATCH`]), instead of a statement and a call per turn: at 10,000 turns
//! waiting on their models that was 5,000 statements a second, which filled both cores.
//! A turn learns from here that it was asked to stop (`cancel`) or lost its lease (`lost`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use hermes_cache::LockGuard;
use hermes_core::{TenantId, TurnId};
use hermes_store::{HeldLease, LeaseState};

use crate::Runtime;
use crate::every::Every;

/// Leases and locks extended by one statement and one Redis call.
const BATCH: usize = 1_000;
/// Batches under way at once: the system pool has a quarter of the connections.
const BATCHES_AT_ONCE: usize = 4;

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
    /// Lists `turn` under `owner` until [`Running::remove`]; the returned token is cancelled
    /// when its lease is lost. An earlier attempt of the same turn still listed here lost its
    /// lease to this one (its lease ran out and the turn was claimed again): it is told so.
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
            if let Some(earlier) = turns.insert(turn, beating) {
                earlier.lost.cancel();
            }
            gauge(turns.len());
        }
        lost
    }

    /// Unlists `turn`, if `owner`'s attempt is the one listed (a later attempt stays).
    pub fn remove(&self, turn: TurnId, owner: &str) {
        if let Ok(mut turns) = self.turns.lock() {
            if turns.get(&turn).is_some_and(|b| &*b.owner == owner) {
                turns.remove(&turn);
            }
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
        // A few batches side by side (the system pool is small and shared), each given one
        // period: a slow one is tried again next beat, well within the lease, and never holds
        // the others' next beat back.
        let beats = futures_util::stream::iter(running.chunks(BATCH)).for_each_concurrent(BATCHES_AT_ONCE, |batch| {
            let rt = &rt;
            async move {
                if tokio::time::timeout(period, beat(rt, batch, lease)).await.is_err() {
                    tracing::warn!(turns = batch.len(), "a heartbeat batch took longer than its period");
                }
            }
        });
        beats.await;
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
        running.remove(turn, "w/1");
        assert!(!running.cancel(turn), "an ended turn is no longer listed");
        assert!(running.snapshot().is_empty(), "nor beaten for");
    }

    #[tokio::test]
    async fn a_turn_claimed_again_here_stops_its_earlier_attempt_and_keeps_its_own_listing() {
        let running = Running::default();
        let (turn, tenant) = (TurnId::new(), TenantId::mint());
        let locks = hermes_cache::Cache::in_memory().session_locks();
        let lock =
            locks.try_acquire(hermes_core::SessionId::new(), "w", Duration::from_secs(9)).await.unwrap().unwrap();
        let (first_cancel, second_cancel) = (CancellationToken::new(), CancellationToken::new());
        let first = running.insert(turn, tenant, "w/first", &lock, &first_cancel);
        let second = running.insert(turn, tenant, "w/second", &lock, &second_cancel);
        assert!(first.is_cancelled(), "the earlier attempt lost its lease to the later one");
        assert!(!second.is_cancelled());
        running.remove(turn, "w/first");
        assert!(running.cancel(turn), "the earlier attempt's end leaves the later one listed");
        assert!(second_cancel.is_cancelled() && !first_cancel.is_cancelled());
        assert_eq!(running.snapshot().len(), 1, "and beaten for");
    }
}
