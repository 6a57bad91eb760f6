//! The worker's side of the agent's journal seam: a turn's checkpoints in Postgres, fenced by
//! the session's token.

use std::sync::Arc;

use hermes_agent::{JournalError, TurnJournal};
use hermes_core::{ChatMessage, Role, SessionId, TenantId, TurnId};
use hermes_llm::{CallBuffer, CallMeter};
use hermes_store::{ClaimedTurn, ModelCall, Store, StoreError};

use crate::phases::Phase;

/// Checkpoints a turn's messages, fenced by the session's token. The final answer (an
/// assistant message without tool calls) is held back and stored together with the turn's
/// outcome in one transaction.
pub(crate) struct StoreJournal {
    store: Store,
    tenant: TenantId,
    /// Where the turn's messages go: its session, or the child a compaction moved it to.
    session: SessionId,
    turn: TurnId,
    fence: i64,
    /// Whether messages can steer this turn: only a chat's busy mode queues steering turns
    /// (the gateway marks them), so other sessions never look.
    steerable: bool,
    final_answer: Option<(i32, ChatMessage)>,
    /// Set when the turn compacted the conversation into a child session (now `session`).
    compacted: bool,
    /// Model calls answered since the last checkpoint, stored with the next one.
    calls: Arc<CallBuffer>,
    /// Tool calls the model asked for in this run of the turn.
    tool_calls: usize,
    /// A background child's tools not told in its parent's chat yet (`None`: no child).
    untold: Option<Vec<String>>,
}

impl StoreJournal {
    pub fn new(store: Store, tenant: TenantId, turn: &ClaimedTurn) -> Self {
        Self {
            store,
            tenant,
            session: turn.session_id,
            turn: turn.turn_id,
            fence: turn.fence,
            steerable: crate::attachments::is_chat(turn.session_source),
            final_answer: None,
            compacted: false,
            calls: Arc::default(),
            tool_calls: 0,
            untold: (turn.session_source == hermes_core::SessionSource::Subagent).then(Vec::new),
        }
    }

    /// A background child tells its parent's chat its tools, a few at a time (best effort:
    /// progress, not the result).
    async fn tell_progress(&mut self, step: i32, message: &ChatMessage) {
        let Some(untold) = self.untold.as_mut() else { return };
        untold.extend(message.tool_calls.iter().map(|c| c.function.name.clone()));
        let per_line = hermes_store::delegations::TOOLS_PER_LINE;
        let told: Vec<String> = untold.drain(..untold.len() / per_line * per_line).collect();
        for (line, tools) in told.chunks(per_line).enumerate() {
            let at = hermes_store::delegations::ProgressAt { step, line };
            if let Err(e) = self.store.turns().child_progress(self.tenant, self.turn, at, tools).await {
                tracing::debug!(error = %e, "cannot tell a child's progress");
            }
        }
    }

    /// Where the turn's model calls are reported, to be stored with its next checkpoint.
    pub fn meter(&self) -> Arc<CallBuffer> {
        self.calls.clone()
    }

    /// The session the turn's messages are in now (a compaction moves them to a child).
    pub fn session(&self) -> SessionId {
        self.session
    }

    /// The child session the conversation goes on in, when the turn compacted it.
    pub fn compacted_into(&self) -> Option<SessionId> {
        self.compacted.then_some(self.session)
    }

    /// The held-back final answer, stored with the turn's outcome.
    pub fn final_answer(&self) -> Option<(i32, &ChatMessage)> {
        self.final_answer.as_ref().map(|(step, message)| (*step, message))
    }

    /// Tool calls the model asked for in this run of the turn.
    pub fn tool_calls(&self) -> usize {
        self.tool_calls
    }

    /// Takes the calls not stored yet (to be stored with the turn's outcome).
    pub fn take_calls(&self) -> Vec<ModelCall> {
        self.calls.drain()
    }

    /// Stores the calls not stored yet. On failure they wait for the next checkpoint; a turn
    /// that stops without one loses them (with a warning).
    pub async fn store_calls(&self) {
        let calls = self.calls.drain();
        if calls.is_empty() {
            return;
        }
        let rows: Vec<ModelCall> = calls.to_vec();
        if let Err(e) = self.store.tenancy().record_model_calls(self.tenant, self.session, self.turn, &rows).await {
            tracing::warn!(error = %e, calls = rows.len(), "cannot record model calls yet");
            for call in calls {
                self.calls.record(call);
            }
        }
    }
}

impl TurnJournal for StoreJournal {
    async fn record(&mut self, step: i32, message: &ChatMessage) -> Result<(), JournalError> {
        if message.role == Role::Assistant && message.tool_calls.is_empty() {
            self.final_answer = Some((step, message.clone()));
            return Ok(());
        }
        self.tool_calls += message.tool_calls.len();
        self.store_calls().await;
        match self
            .store
            .conversations()
            .append_message(self.tenant, self.session, self.fence, self.turn, step, message)
            .await
        {
            Ok(_) => {
                self.tell_progress(step, message).await;
                Ok(())
            }
            Err(e) => Err(journal_error(e)),
        }
    }

    async fn steering(&mut self) -> Vec<ChatMessage> {
        if !self.steerable {
            return Vec::new();
        }
        match self.store.conversations().absorb_steers(self.tenant, self.turn).await {
            Ok(taken) => taken,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read steering messages; they run as turns of their own");
                Vec::new()
            }
        }
    }

    async fn tool_time(&mut self, elapsed: std::time::Duration, sandboxed: bool) {
        Phase::Tools.record(elapsed);
        let ms = i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX);
        if let Err(e) = self.store.tenancy().add_tool_time(self.tenant, self.turn, ms, sandboxed).await {
            tracing::warn!(error = %e, "cannot record a tool call's time");
        }
    }

    async fn compacted(&mut self, prompt: &str, body: &[(Option<i32>, ChatMessage)]) -> Result<(), JournalError> {
        match self
            .store
            .conversations()
            .fork_compacted(self.tenant, self.session, self.fence, self.turn, prompt, body)
            .await
        {
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
