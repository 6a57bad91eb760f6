//! The worker's chores on a timer, beside its turns: reporting its sandboxes, closing idle MCP
//! sessions and browsers.

use std::time::Duration;

use tokio::time::Interval;
use tokio_util::sync::CancellationToken;

/// The rounds of a chore done every `period` (the first at once) until `shutdown`:
/// `while rounds.next().await { ... }`. A round under way when `shutdown` comes is finished.
pub(crate) struct Every {
    tick: Interval,
    shutdown: CancellationToken,
}

impl Every {
    pub fn new(period: Duration, shutdown: CancellationToken) -> Self {
        let mut tick = tokio::time::interval(period);
        // A late round is not made up for with a burst of them.
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Self { tick, shutdown }
    }

    /// Waits for the next round: `false` once the worker shuts down.
    pub async fn next(&mut self) -> bool {
        tokio::select! {
            () = self.shutdown.cancelled() => false,
            _ = self.tick.tick() => true,
        }
    }
}
