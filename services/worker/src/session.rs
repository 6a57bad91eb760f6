//! One delivery: take the session lock, run the session's next turn, release, and look again
//! (a turn that arrived meanwhile found the lock taken and relies on this second look).

use std::sync::Arc;
use std::time::{Duration, Instant};

use hermes_cache::{LockGuard, SessionLocks};
use hermes_queue::{SessionWork, WorkDelivery};
use hermes_store::turn_inputs::ClaimedWithInputs;

use crate::Runtime;
use crate::phases::Phase;
use crate::turn::run_claimed_turn;

pub(crate) async fn handle_delivery(rt: Arc<Runtime>, delivery: WorkDelivery) {
    let work = delivery.work;
    if let Some(sent) = delivery.sent_at {
        Phase::Pickup.record_since(sent);
    }
    // The messaging consumer span, in the publisher's trace; each turn it runs joins its own
    // (stored) trace.
    let span = tracing::info_span!(
        "session",
        otel.name = "process work",
        otel.kind = "consumer",
        messaging.system = "rabbitmq",
        messaging.operation.type = "process",
        tenant.id = %work.tenant_id,
        session.id = %work.session_id,
    );
    hermes_telemetry::context::adopt(&span, delivery.trace.as_ref());
    let lease = Duration::from_secs(rt.ctx.config.worker.lease_seconds);
    let locks = rt.ctx.cache.session_locks();
    // A lease owner unique to this task: two tasks of one process never mistake each other's
    // lease for their own.
    let nonce = uuid::Uuid::now_v7().simple().to_string();
    let owner = format!("{}/{}", rt.lease_prefix, &nonce[nonce.len() - 8..]);
    let mut delivery = Some(delivery);
    loop {
        let claiming = Instant::now();
        // A turn starts (lock, claim) only with a start slot: see `Runtime::starts`.
        let start = rt.starts.acquire().await.ok();
        if rt.draining.is_cancelled() {
            // Shutting down (maybe while waiting for the slot): leave the work to another worker.
            if let Some(d) = delivery.take() {
                d.requeue().await;
            }
            return;
        }
        // The brief I/O around the turn runs boxed (see `turn::execute`).
        let locked = Box::pin(lock_session(&locks, &work, &owner, lease, &mut delivery, &span)).await;
        let Some(guard) = locked else { return };
        if let Some(d) = delivery.take() {
            // The work itself is in Postgres; the message has done its job. Ack off the
            // critical path.
            hermes_telemetry::tasks::spawn("worker_ack", async move { d.ack().await });
        }
        let keep_going = run_next_turn(&rt, &work, &owner, &guard, (claiming, start), &span).await;
        if let Err(e) = Box::pin(locks.release(&guard)).await {
            tracing::warn!(parent: &span, error = %e, "cannot release the session lock (it will expire)");
        }
        if !keep_going || rt.abandon.is_cancelled() {
            return;
        }
        match Box::pin(rt.ctx.store.turns().has_claimable_turn(work.tenant_id, work.session_id)).await {
            Ok(true) => continue,
            Ok(false) => return,
            Err(e) => {
                tracing::warn!(parent: &span, error = %e, "cannot re-check the session; the reaper will");
                return;
            }
        }
    }
}

/// Takes the session lock. Without it the delivery (if not settled yet) is settled here:
/// acked when another worker runs the session (it looks for new turns after releasing),
/// requeued after a pause when Redis failed.
async fn lock_session(
    locks: &SessionLocks,
    work: &SessionWork,
    owner: &str,
    lease: Duration,
    delivery: &mut Option<WorkDelivery>,
    span: &tracing::Span,
) -> Option<LockGuard> {
    match locks.try_acquire(work.session_id, owner, lease).await {
        Ok(Some(guard)) => Some(guard),
        Ok(None) => {
            if let Some(d) = delivery.take() {
                d.ack().await;
            }
            None
        }
        Err(e) => {
            tracing::warn!(parent: span, error = %e, "cannot take the session lock; requeueing");
            tokio::time::sleep(Duration::from_secs(1)).await;
            if let Some(d) = delivery.take() {
                d.requeue().await;
            }
            None
        }
    }
}

/// Claims the session's next turn and runs it; `false` when the worker should stop working on
/// this session.
async fn run_next_turn(
    rt: &Arc<Runtime>,
    work: &SessionWork,
    owner: &str,
    guard: &LockGuard,
    (claiming, start): (Instant, Option<tokio::sync::SemaphorePermit<'_>>),
    span: &tracing::Span,
) -> bool {
    let lease = Duration::from_secs(rt.ctx.config.worker.lease_seconds);
    // The turn's inputs come on the claim's connection (one checkout, not two).
    let claimed =
        Box::pin(rt.ctx.store.turns().claim_with_inputs(work.tenant_id, work.session_id, owner, lease, guard.token))
            .await;
    drop(start);
    match claimed {
        Ok(Some(ClaimedWithInputs { turn, inputs })) => {
            Phase::Claim.record(claiming.elapsed());
            run_claimed_turn(rt, work.tenant_id, owner, turn, inputs.map(Box::new), guard, span).await
        }
        Ok(None) => true,
        Err(e) => {
            tracing::warn!(parent: span, error = %e, "cannot claim a turn");
            false
        }
    }
}
