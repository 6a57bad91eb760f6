//! Fair shares of a worker's slots: no tenant holds more than `worker.tenant_share` of them at
//! once. A delivery of a tenant at its share is not run here now: it is acknowledged and
//! published again after `worker.defer_millis`, behind the other tenants' work (its turn waits
//! in Postgres meanwhile; if this worker dies before republishing, the reaper does it). One
//! tenant's flood of chat, webhook or cron turns therefore runs at its share's pace while the
//! others still find free slots.

use std::sync::Arc;
use std::time::Duration;

use hermes_core::TenantId;
use hermes_queue::{Broker, WorkDelivery};

use crate::held::{Held, Place};

/// How many slots each tenant holds on this worker.
pub(crate) struct Shares {
    running: Held<TenantId>,
}

/// One slot held by a tenant; given back when dropped.
pub(crate) type Share = Place<TenantId>;

impl Shares {
    /// `share` of `slots`, at least one.
    pub fn new(slots: usize, share: f64) -> Arc<Self> {
        let cap = ((slots as f64) * share).ceil().max(1.0) as usize;
        Arc::new(Self { running: Held::new(cap) })
    }

    /// A slot for `tenant`, unless it holds its share already.
    pub fn take(&self, tenant: TenantId) -> Option<Share> {
        self.running.take(tenant)
    }
}

/// Sends a delivery whose tenant is at its share back to the queue after `pause`.
pub(crate) fn defer(broker: Broker, delivery: WorkDelivery, pause: Duration) {
    metrics::counter!("hermes_worker_deferred_total").increment(1);
    hermes_telemetry::tasks::spawn("worker_shares", async move {
        delivery.ack().await;
        tokio::time::sleep(pause).await;
        if let Err(e) = broker.publish_work(&delivery.work).await {
            tracing::warn!(error = %e, session.id = %delivery.work.session_id, "cannot republish deferred work; the reaper will");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_holds_at_most_its_share_and_gets_slots_back() {
        let shares = Shares::new(4, 0.5);
        #[expect(clippy::disallowed_methods, reason = "test fixture")]
        let (a, b) =
            (TenantId::from_authenticated(uuid::Uuid::now_v7()), TenantId::from_authenticated(uuid::Uuid::now_v7()));
        let first = shares.take(a).unwrap();
        let _second = shares.take(a).unwrap();
        assert!(shares.take(a).is_none(), "two of four slots is its share");
        assert!(shares.take(b).is_some(), "another tenant still gets one");
        drop(first);
        assert!(shares.take(a).is_some(), "a finished turn gives its slot back");
        assert_eq!(Shares::new(3, 0.1).running.cap(), 1, "at least one slot");
    }
}
