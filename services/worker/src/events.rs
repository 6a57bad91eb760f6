//! A turn's events: published in order from a background task, and watched for signs of life
//! (an unattended run ends after too long without one).

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use hermes_agent::EventSink;
use hermes_core::{TenantId, TurnEvent, TurnEventKind};
use hermes_queue::Broker;
use hermes_store::ClaimedTurn;

/// Publishes a turn's events in order from a background task, so the loop never waits on
/// the broker.
pub(crate) struct EventPublisher {
    tx: mpsc::UnboundedSender<TurnEventKind>,
    task: JoinHandle<()>,
    activity: Activity,
}

/// When a turn last showed a sign of life: a streamed token, a tool starting or ending.
/// While a tool runs the turn counts as active (each tool has its own time limit, and a
/// delegated child works out of sight); unattended runs end after too long without a sign
/// of life otherwise (see [`until_inactive`]): a model call that hangs.
pub(crate) struct Activity {
    since: Instant,
    last_ms: AtomicU64,
    tools_running: AtomicI64,
}

impl Activity {
    fn new() -> Self {
        Self { since: Instant::now(), last_ms: AtomicU64::new(0), tools_running: AtomicI64::new(0) }
    }

    fn touch(&self, event: &TurnEventKind) {
        let now = u64::try_from(self.since.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(now, Ordering::Relaxed);
        match event {
            TurnEventKind::ToolStarted { .. } => {
                self.tools_running.fetch_add(1, Ordering::Relaxed);
            }
            TurnEventKind::ToolCompleted { .. } => {
                let _ = self.tools_running.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| Some((n - 1).max(0)));
            }
            _ => {}
        }
    }

    fn idle(&self) -> Duration {
        if self.tools_running.load(Ordering::Relaxed) > 0 {
            return Duration::ZERO;
        }
        self.since.elapsed().saturating_sub(Duration::from_millis(self.last_ms.load(Ordering::Relaxed)))
    }
}

/// Resolves once the turn has shown no activity for `limit`.
pub(crate) async fn until_inactive(events: &EventPublisher, limit: Duration) {
    loop {
        let idle = events.activity.idle();
        if idle >= limit {
            return;
        }
        // Looked at again at least every second (a tool may end, and the wait start, meanwhile).
        tokio::time::sleep((limit - idle).min(Duration::from_secs(1))).await;
    }
}

impl EventPublisher {
    /// Starts publishing `turn`'s events (under its claimed session, even after a compaction).
    pub fn for_turn(broker: Broker, tenant: TenantId, turn: &ClaimedTurn) -> Self {
        let (session, turn_id, hub) = (turn.session_id, turn.turn_id, turn.notify_hub.clone());
        let attempt = u32::try_from(turn.attempt).unwrap_or(0);
        let (tx, mut rx) = mpsc::unbounded_channel::<TurnEventKind>();
        let task = hermes_telemetry::tasks::spawn("worker_events", async move {
            while let Some(kind) = rx.recv().await {
                let event = TurnEvent { tenant_id: tenant, session_id: session, turn_id, attempt, kind };
                if let Err(e) = broker.publish_event(&event, hub.as_deref()).await {
                    tracing::warn!(error = %e, "cannot publish a turn event; waiters fall back to Postgres");
                }
            }
        });
        Self { tx, task, activity: Activity::new() }
    }

    /// A relay into this turn's events, for its delegated children.
    pub fn relay(&self) -> EventRelay {
        EventRelay(Some(self.tx.downgrade()))
    }

    /// Publishes the last event and waits until everything queued has been handed to the broker.
    pub async fn finish(self, last: Option<TurnEventKind>) {
        if let Some(kind) = last {
            let _ = self.tx.send(kind);
        }
        drop(self.tx);
        // A stalled broker must not hold the session: waiters fall back to Postgres.
        if tokio::time::timeout(Duration::from_secs(10), self.task).await.is_err() {
            tracing::warn!("publishing the turn's events timed out");
        }
    }
}

/// Where a turn's delegated children tell their progress: the turn's own event stream. It does
/// not keep the stream open (a tool registry may outlive the turn): once the turn has ended,
/// what it is told goes nowhere.
#[derive(Clone)]
pub(crate) struct EventRelay(Option<mpsc::WeakUnboundedSender<TurnEventKind>>);

impl EventRelay {
    /// A relay to nobody (work with no one watching it).
    pub fn nowhere() -> Self {
        Self(None)
    }
}

impl EventSink for EventRelay {
    fn emit(&self, event: TurnEventKind) {
        if let Some(tx) = self.0.as_ref().and_then(mpsc::WeakUnboundedSender::upgrade) {
            let _ = tx.send(event);
        }
    }
}

impl EventSink for EventPublisher {
    fn emit(&self, event: TurnEventKind) {
        self.activity.touch(&event);
        let _ = self.tx.send(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_tool_is_activity_and_a_silent_model_call_is_not() {
        let activity = Activity::new();
        std::thread::sleep(Duration::from_millis(30));
        assert!(activity.idle() >= Duration::from_millis(30), "nothing happened yet");
        let started = TurnEventKind::ToolStarted {
            call_id: "c".into(),
            tool: "delegate_task".into(),
            preview: String::new(),
            arguments: String::new(),
        };
        activity.touch(&started);
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(activity.idle(), Duration::ZERO, "a tool (a delegated child) is at work");
        let done = TurnEventKind::ToolCompleted {
            call_id: "c".into(),
            tool: "delegate_task".into(),
            ok: true,
            duration_ms: 30,
            output: String::new(),
        };
        activity.touch(&done);
        activity.touch(&done);
        std::thread::sleep(Duration::from_millis(30));
        assert!(activity.idle() >= Duration::from_millis(30), "waiting on the model again");
    }
}
