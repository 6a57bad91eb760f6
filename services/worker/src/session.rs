//! One delivery: take the session lock, run every claimable turn of the session, release.

use std::sync::Arc;
use std::time::Duration;

use hermes_queue::WorkDelivery;

use crate::Runtime;
use crate::turn::run_claimed_turn;

pub(crate) async fn handle_delivery(rt: Arc<Runtime>, delivery: WorkDelivery) {
    let work = delivery.work;
    let span =
        tracing::info_span!("session", tenant.id = %work.tenant_id, session.id = %work.session_id);
    let lease = Duration::from_secs(rt.ctx.config.worker.lease_seconds);
    let locks = rt.ctx.cache.session_locks();
    let mut acked = false;
    loop {
        let guard = match locks
            .try_acquire(work.session_id, &rt.worker_id, lease)
            .await
        {
            Ok(Some(g)) => g,
            Ok(None) => {
                // Another worker runs this session; it re-checks for new turns after releasing.
                if !acked {
                    delivery.ack().await;
                }
                return;
            }
            Err(e) => {
                tracing::warn!(parent: &span, error = %e, "cannot take the session lock; requeueing");
                tokio::time::sleep(Duration::from_secs(1)).await;
                if !acked {
                    delivery.requeue().await;
                }
                return;
            }
        };
        if !acked {
            delivery.ack().await;
            acked = true;
        }
        loop {
            let claimed = rt
                .ctx
                .store
                .claim_next_turn(
                    work.tenant_id,
                    work.session_id,
                    &rt.worker_id,
                    lease,
                    guard.token,
                )
                .await;
            match claimed {
                Ok(Some(turn)) => {
                    if !run_claimed_turn(&rt, work.tenant_id, turn, &guard, &span).await {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(parent: &span, error = %e, "cannot claim a turn");
                    break;
                }
            }
        }
        if let Err(e) = locks.release(&guard).await {
            tracing::warn!(parent: &span, error = %e, "cannot release the session lock (it will expire)");
        }
        if rt.abandon.is_cancelled() {
            return;
        }
        // A turn may have arrived between our last claim and the release, while its own
        // delivery found the lock taken: look once more.
        match rt
            .ctx
            .store
            .has_claimable_turn(work.tenant_id, work.session_id)
            .await
        {
            Ok(true) => continue,
            Ok(false) => return,
            Err(e) => {
                tracing::warn!(parent: &span, error = %e, "cannot re-check the session; the reaper will");
                return;
            }
        }
    }
}
