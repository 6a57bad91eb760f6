//! The worker's side of the agent's seams: a fenced Postgres journal and an ordered event
//! publisher.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use hermes_agent::{EventSink, JournalError, TurnJournal};
use hermes_core::{ChatMessage, SessionId, TenantId, TurnEvent, TurnEventKind, TurnId};
use hermes_llm::{CallBuffer, CallMeter, CallRecord};
use hermes_queue::Broker;
use hermes_store::{ModelCall, Store, StoreError};

/// Checkpoints a turn's messages, fenced by the session's token. The final answer (an
/// assistant message without tool calls) is held back and stored together with the turn's
/// outcome in one transaction.
pub(crate) struct StoreJournal {
    pub store: Store,
    pub tenant: TenantId,
    pub session: SessionId,
    pub turn: TurnId,
    pub fence: i64,
    pub final_answer: Option<(i32, ChatMessage)>,
    /// Set when the turn compacted the conversation into a child session (now `session`).
    pub compacted: bool,
    /// Model calls answered since the last checkpoint, stored with the next one.
    pub calls: Arc<CallBuffer>,
    /// The goal judge's verdict on this turn, applied once its outcome is stored.
    pub goal: Option<crate::goals::Verdict>,
}

impl StoreJournal {
    /// Takes the calls not stored yet (to be stored with the turn's outcome).
    pub fn take_calls(&self) -> Vec<ModelCall> {
        self.calls.drain().into_iter().map(model_call).collect()
    }

    /// Stores the calls not stored yet. On failure they wait for the next checkpoint; a turn
    /// that stops without one loses them (with a warning).
    pub async fn store_calls(&self) {
        let calls = self.calls.drain();
        if calls.is_empty() {
            return;
        }
        let rows: Vec<ModelCall> = calls.iter().cloned().map(model_call).collect();
        if let Err(e) = self.store.record_model_calls(self.tenant, self.session, self.turn, &rows).await {
            tracing::warn!(error = %e, calls = rows.len(), "cannot record model calls yet");
            for call in calls {
                self.calls.record(call);
            }
        }
    }
}

pub(crate) fn model_call(c: CallRecord) -> ModelCall {
    ModelCall {
        purpose: c.purpose.to_owned(),
        provider: c.provider,
        model: c.model,
        key_id: c.key_id,
        usage: c.usage,
        latency_ms: c.latency_ms,
    }
}

impl TurnJournal for StoreJournal {
    async fn record(&mut self, step: i32, message: &ChatMessage) -> Result<(), JournalError> {
        if message.role == hermes_core::Role::Assistant && message.tool_calls.is_empty() {
            self.final_answer = Some((step, message.clone()));
            return Ok(());
        }
        self.store_calls().await;
        match self.store.append_message(self.tenant, self.session, self.fence, self.turn, step, message).await {
            Ok(_) => Ok(()),
            Err(e) => Err(journal_error(e)),
        }
    }

    async fn steering(&mut self) -> Vec<ChatMessage> {
        match self.store.absorb_steers(self.tenant, self.turn).await {
            Ok(taken) => taken,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read steering messages; they run as turns of their own");
                Vec::new()
            }
        }
    }

    async fn tool_time(&mut self, elapsed: std::time::Duration, sandboxed: bool) {
        let ms = i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX);
        if let Err(e) = self.store.add_tool_time(self.tenant, self.turn, ms, sandboxed).await {
            tracing::warn!(error = %e, "cannot record a tool call's time");
        }
    }

    async fn compacted(&mut self, prompt: &str, body: &[(Option<i32>, ChatMessage)]) -> Result<(), JournalError> {
        match self.store.fork_compacted(self.tenant, self.session, self.fence, self.turn, prompt, body).await {
            Ok(child) => {
                tracing::info!(parent = %self.session, child = %child, "conversation continues in a compacted session");
                self.session = child;
                self.compacted = true;
                Ok(())
            }
            Err(e) => Err(journal_error(e)),
        }
    }
}

fn journal_error(e: StoreError) -> JournalError {
    match e {
        StoreError::Fenced => JournalError::Fenced,
        e if e.is_transient() => JournalError::Storage(e.to_string()),
        e => JournalError::Rejected(e.to_string()),
    }
}

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
    pub fn start(
        broker: Broker,
        tenant: TenantId,
        session: SessionId,
        turn: TurnId,
        attempt: u32,
        hub: Option<String>,
    ) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<TurnEventKind>();
        let task = tokio::spawn(async move {
            while let Some(kind) = rx.recv().await {
                let event = TurnEvent { tenant_id: tenant, session_id: session, turn_id: turn, attempt, kind };
                if let Err(e) = broker.publish_event(&event, hub.as_deref()).await {
                    tracing::warn!(error = %e, "cannot publish a turn event; waiters fall back to Postgres");
                }
            }
        });
        Self { tx, task, activity: Activity::new() }
    }

    /// Publishes the last event and waits until everything queued has been handed to the broker.
    pub async fn finish(self, last: Option<TurnEventKind>) {
        if let Some(kind) = last {
            let _ = self.tx.send(kind);
        }
        drop(self.tx);
        // A stalled broker must not hold the session: waiters fall back to Postgres.
        if tokio::time::timeout(std::time::Duration::from_secs(10), self.task).await.is_err() {
            tracing::warn!("publishing the turn's events timed out");
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
