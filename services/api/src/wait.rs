//! Waiting for a turn: events from RabbitMQ, with Postgres as the fallback truth when an
//! event is lost (a broker restart, a worker killed between storing and publishing).

use std::time::Duration;

use hermes_core::{TenantId, TurnEventKind, TurnId, TurnOutcome};
use hermes_queue::EventSubscription;
use hermes_store::Store;

/// What the waiter saw next.
pub(crate) enum Next {
    Event(TurnEventKind),
    /// The turn ended and its outcome was read from Postgres (its final event never came).
    FinishedInStore(TurnOutcome),
    /// The event hub stopped.
    Closed,
}

/// The next thing to happen to `turn`: an event, or (after `recheck` of silence) the outcome
/// Postgres holds once the turn has ended.
pub(crate) async fn next(
    sub: &mut EventSubscription,
    store: &Store,
    tenant: TenantId,
    turn: TurnId,
    recheck: Duration,
) -> Next {
    loop {
        tokio::select! {
            event = sub.next() => {
                return match event {
                    Some(e) => Next::Event(e.kind),
                    None => Next::Closed,
                };
            }
            () = tokio::time::sleep(recheck) => {
                match store.turn_state(tenant, turn).await {
                    Ok((status, Some(outcome))) if status.is_final() => return Next::FinishedInStore(outcome),
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "cannot re-read the turn while waiting"),
                }
            }
        }
    }
}
