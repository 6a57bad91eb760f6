//! This worker's presence lock (`hermes_store::system::presence`), held from before its first
//! claim until its last turn is drained: while it stands, the reaper leaves this worker's turns
//! to their leases; once the process dies, Postgres drops it and the reaper hands them on at
//! once.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use hermes_store::{Presence, Store};

/// How often the held lock's connection is proven.
const CHECK_EVERY: Duration = Duration::from_millis(500);
/// How soon a lost lock is tried again (the reaper waits two passes before it acts).
const RETRY_LOST: Duration = Duration::from_millis(250);
/// How soon a lock held by another connection is tried again.
const RETRY_HELD_ELSEWHERE: Duration = Duration::from_secs(5);

/// Takes the lock (waiting for the first attempt, so no turn is claimed without it) and keeps
/// it in the background until the returned token is cancelled.
pub(crate) async fn keep_presence(store: Store, prefix: String) -> CancellationToken {
    let stop = CancellationToken::new();
    let held = take(&store, &prefix).await;
    hermes_telemetry::tasks::spawn("worker_presence", keep(store, prefix, held, stop.clone()));
    stop
}

async fn keep(store: Store, prefix: String, mut held: Taken, stop: CancellationToken) {
    loop {
        let pause = match held {
            Taken::Held(_) => CHECK_EVERY,
            Taken::Lost => RETRY_LOST,
            Taken::HeldElsewhere => RETRY_HELD_ELSEWHERE,
        };
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(pause) => {}
        }
        if let Taken::Held(presence) = &mut held {
            match presence.check().await {
                Ok(()) => continue,
                Err(e) => tracing::warn!(error = %e, "the presence lock's connection is lost; taking it again"),
            }
        }
        held = take(&store, &prefix).await;
    }
}

enum Taken {
    Held(Presence),
    Lost,
    HeldElsewhere,
}

async fn take(store: &Store, prefix: &str) -> Taken {
    let taken = match store.hold_presence(prefix).await {
        Ok(Some(presence)) => Taken::Held(presence),
        Ok(None) => {
            tracing::warn!(
                worker.lease_prefix = prefix,
                "another connection holds this worker's presence lock; if this worker dies, its turns \
                 resume only when their leases run out"
            );
            Taken::HeldElsewhere
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot take the presence lock; retrying");
            Taken::Lost
        }
    };
    metrics::gauge!("hermes_worker_presence_held").set(if matches!(taken, Taken::Held(_)) { 1.0 } else { 0.0 });
    taken
}
