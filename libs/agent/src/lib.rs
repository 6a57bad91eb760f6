//! The agent loop: call the model, run the tools it asks for, append the results, call again,
//! until it answers in plain text. Persistence and events are injected ([`TurnJournal`],
//! [`EventSink`]) so this crate knows no database, queue or sandbox.
//!
//! Rules (Hermes's): an iteration budget (90 for a main agent, 50 for a child) and an API-call
//! budget, then one grace call without tools to summarise; empty answers retried; answers cut
//! off by `max_tokens` continued; tool calls of one answer run concurrently unless a tool must
//! run alone; guardrails against tool loops; the transcript normalised before every call.
//!
//! A turn can resume: given the messages already stored for it, the loop continues from the
//! last checkpoint and never re-runs a tool call that already has a stored result. Dropping
//! the future interrupts the turn at any await point; only complete messages are ever stored.

pub mod compress;
mod context;
pub mod context_files;
pub mod guardrails;
pub mod memory;
mod model_call;
pub mod normalize;
pub mod prompt;
mod tool_step;
mod turn_loop;

use std::future::Future;

use hermes_core::{ChatMessage, ErrorCode, FinishReason, ToolCall, TurnEventKind, TurnOutcome, Usage};
use hermes_llm::{ChatModel, DeltaSink};
use hermes_tools::{ToolCtx, ToolRegistry};

use crate::guardrails::{GuardrailLimits, Guardrails};
use crate::model_call::{ModelStep, Spent};
pub use crate::tool_step::Parked;
use crate::tool_step::ToolStep;
use crate::turn_loop::TurnLoop;

pub use context::{ContextEngine, DefaultEngine, ModelSummarizer, compact_now};
pub use model_call::CONTINUE_PROMPT;
pub use tool_step::NOT_RUN;

/// Where the loop checkpoints messages.
pub trait TurnJournal: Send {
    /// Stores `message` as part of step `step` of the turn before the loop goes on.
    /// An error stops the turn (e.g. another worker took the session over).
    fn record(&mut self, step: i32, message: &ChatMessage) -> impl Future<Output = Result<(), JournalError>> + Send;

    /// The conversation was compacted: continue it in a child session with this stable prompt
    /// and this history (messages of the running turn carry their step). Later records go there.
    fn compacted(
        &mut self,
        _prompt: &str,
        _body: &[(Option<i32>, ChatMessage)],
    ) -> impl Future<Output = Result<(), JournalError>> + Send {
        async { Ok(()) }
    }

    /// A tool call took `elapsed`, in the sandbox if `sandboxed` (the turn's metering). Losing
    /// it costs only a figure, so it cannot fail the turn.
    fn tool_time(&mut self, _elapsed: std::time::Duration, _sandboxed: bool) -> impl Future<Output = ()> + Send {
        async {}
    }

    /// Messages the person sent while the turn ran (busy mode `steer`), taken before each model
    /// call; the loop shows them to the model for the rest of the turn. Losing them costs
    /// nothing: untaken, they run as turns of their own.
    fn steering(&mut self) -> impl Future<Output = Vec<ChatMessage>> + Send {
        async { Vec::new() }
    }
}

/// A journal failure: the turn must stop without writing more.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// Another worker owns the session now; this one must stop quietly.
    #[error("another worker owns the session")]
    Fenced,
    /// Storage failed for a moment (the turn is handed back and resumed).
    #[error("cannot store the message: {0}")]
    Storage(String),
    /// Storage refused the message for good (the turn fails).
    #[error("the message cannot be stored: {0}")]
    Rejected(String),
}

/// Where the loop reports progress (text deltas, tool start/end). Never blocks.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: TurnEventKind);
}

/// Limits of one turn.
#[derive(Debug, Clone)]
pub struct TurnLimits {
    /// Model steps allowed in the turn (90 for a main agent, 50 for a child).
    pub max_iterations: u32,
    /// HTTP requests to the model allowed in the turn (retries and continuations count).
    pub max_api_calls: u32,
    /// Whether text deltas are wanted (a streaming client is listening).
    pub stream_deltas: bool,
    /// Tool calls of one answer running at once.
    pub max_parallel_tools: usize,
    /// Retries of an empty answer.
    pub empty_retries: u32,
    /// Continuations of an answer cut off by `max_tokens`.
    pub length_continuations: u32,
    pub guardrails: GuardrailLimits,
}

impl TurnLimits {
    /// A main agent's limits with `max_iterations` steps.
    pub fn main(max_iterations: u32) -> Self {
        Self {
            max_iterations,
            max_api_calls: max_iterations.saturating_mul(2),
            stream_deltas: false,
            max_parallel_tools: 8,
            empty_retries: 3,
            length_continuations: 3,
            guardrails: GuardrailLimits::default(),
        }
    }

    /// A delegated child's limits (50 steps).
    pub fn child() -> Self {
        Self::main(50)
    }
}

/// The state a turn starts (or resumes) from.
#[derive(Debug, Clone)]
pub struct TurnStart {
    /// Everything the model sees: system prompt(s), history, this turn's messages so far.
    pub messages: Vec<ChatMessage>,
    /// Steps of this turn already stored (0 when fresh: only the user input is stored).
    pub completed_steps: i32,
    /// Index in `messages` of this turn's first message (its user input, or the first one
    /// left after a compaction).
    pub turn_start: usize,
}

/// How the turn ended.
#[derive(Debug)]
pub enum TurnEnd {
    /// Answered (or failed in a way the user must hear about); store and deliver `outcome`.
    Finished(TurnOutcome),
    /// Stopped because another worker owns the session; deliver nothing.
    Superseded,
    /// Stopped because storage failed for a moment; nothing partial was stored beyond the
    /// last checkpoint, so the turn can be handed back and resumed.
    Suspended(String),
    /// A call needs the user's answer; the turn waits for it and resumes from the journal.
    Parked(Parked),
}

/// Said to the model for the grace call after the budget is spent.
pub const GRACE_PROMPT: &str = "[You have used this turn's step budget. Do not call tools. In a few sentences, tell \
the user what you did, what is still open, and what they can ask you to do next.]";

struct Deltas<'a> {
    sink: &'a dyn EventSink,
    enabled: bool,
}

impl DeltaSink for Deltas<'_> {
    fn text(&mut self, text: &str) {
        if self.enabled {
            self.sink.emit(TurnEventKind::Delta { text: text.to_owned() });
        }
    }
    fn reasoning(&mut self, text: &str) {
        if self.enabled {
            self.sink.emit(TurnEventKind::Reasoning { text: text.to_owned() });
        }
    }
    fn notice(&mut self, code: &str, message: &str) {
        self.sink.emit(TurnEventKind::Notice { code: code.to_owned(), message: message.to_owned() });
    }
}

/// Tool calls of the last assistant message that have no result yet (a resumed turn).
pub fn pending_tool_calls(messages: &[ChatMessage]) -> Vec<ToolCall> {
    let Some(pos) = messages.iter().rposition(|m| m.role == hermes_core::Role::Assistant) else {
        return Vec::new();
    };
    let answered: Vec<&str> = messages[pos + 1..].iter().filter_map(|m| m.tool_call_id.as_deref()).collect();
    messages[pos].tool_calls.iter().filter(|c| !answered.contains(&c.id.as_str())).cloned().collect()
}

pub(crate) fn failure(code: ErrorCode, message: String, usage: Usage) -> TurnOutcome {
    TurnOutcome {
        content: String::new(),
        finish_reason: FinishReason::Error,
        usage,
        error: Some(message),
        error_code: Some(code),
        session_id: None,
    }
}

pub(crate) async fn record<J: TurnJournal>(journal: &mut J, step: i32, message: &ChatMessage) -> Result<(), TurnEnd> {
    match journal.record(step, message).await {
        Ok(()) => Ok(()),
        Err(JournalError::Fenced) => Err(TurnEnd::Superseded),
        Err(JournalError::Storage(e)) => {
            tracing::warn!(error = %e, step, "cannot checkpoint the turn; suspending it");
            Err(TurnEnd::Suspended(e))
        }
        Err(JournalError::Rejected(e)) => {
            tracing::error!(error = %e, step, "the turn's message was refused by storage");
            Err(TurnEnd::Finished(failure(
                ErrorCode::StorageError,
                "The turn could not be saved.".into(),
                Usage::default(),
            )))
        }
    }
}

/// One turn's collaborators.
pub struct Turn<'a, M, J> {
    pub model: &'a M,
    /// The provider's model id.
    pub model_name: &'a str,
    /// Sampling and reasoning for every call of the turn.
    pub settings: &'a hermes_core::ModelSettings,
    pub tools: &'a ToolRegistry,
    /// Tenant, agent, session and turn, for the tools (never shown to the model).
    pub tool_ctx: &'a ToolCtx,
    pub journal: &'a mut J,
    pub events: &'a dyn EventSink,
    pub limits: &'a TurnLimits,
    /// Compacts the conversation when it grows too large; `None` never compacts.
    pub context: Option<&'a dyn ContextEngine>,
}

impl<M: ChatModel, J: TurnJournal> Turn<'_, M, J> {
    /// Runs (or resumes) the turn to its end.
    pub async fn run(self, start: TurnStart) -> TurnEnd {
        let TurnStart { messages, completed_steps, turn_start } = start;
        let Turn { model, model_name, settings, tools, tool_ctx, journal, events, limits, context } = self;
        let mut guardrails = Guardrails::new(limits.guardrails);
        // Every step but the model call runs boxed: this future lives as long as the turn and
        // is as large as its largest state, and a turn spends its time waiting on the model.
        let mut turn = TurnLoop {
            caller: ModelStep { model, model_name, settings, limits },
            tool_step: ToolStep {
                tools,
                base_ctx: tool_ctx,
                journal,
                events,
                guardrails: &mut guardrails,
                max_parallel: limits.max_parallel_tools,
            },
            events,
            limits,
            context,
            schemas: tools.schemas(),
            messages,
            turn_start,
            step: completed_steps,
            spent: Spent { api_calls: 0, iterations: u32::try_from(completed_steps).unwrap_or(0) },
            usage: Usage::default(),
            prompt_tokens: None,
            forced_compactions: 0,
            steering: Vec::new(),
        };
        if let Err(end) = turn.resume_pending().await {
            return end;
        }
        loop {
            if let Err(end) = turn.iterate().await {
                return end;
            }
        }
    }
}

#[cfg(test)]
mod loop_tests;
