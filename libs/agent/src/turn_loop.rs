//! The phases of one turn's loop: the budget check, compaction, the model call with the notes
//! that go with it only, recovery from a failed call, and the answer's tool step.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use hermes_core::{ChatMessage, ErrorCode, FinishReason, ToolCall, TurnOutcome, Usage};
use hermes_llm::{ChatModel, ErrorClass, LlmError};

use crate::context::compact;
use crate::model_call::{ModelStep, Spent, StepError, StepReply};
use crate::tool_step::{StepResult, ToolStep};
use crate::{
    ContextEngine, Deltas, EventSink, GRACE_PROMPT, TurnEnd, TurnJournal, TurnLimits, compress, failure, record,
};

/// A running turn: its collaborators, its transcript and the counts carried from step to step.
/// `Err(end)` from a phase means the turn is over.
pub(crate) struct TurnLoop<'a, M, J> {
    pub caller: ModelStep<'a, M>,
    pub tool_step: ToolStep<'a, J>,
    pub events: &'a dyn EventSink,
    pub limits: &'a TurnLimits,
    pub context: Option<&'a dyn ContextEngine>,
    pub schemas: Arc<[Arc<Value>]>,
    pub messages: Vec<ChatMessage>,
    pub turn_start: usize,
    pub step: i32,
    pub spent: Spent,
    pub usage: Usage,
    /// What the provider reported for the last call; `None` until then or after a forced compaction.
    pub prompt_tokens: Option<u64>,
    /// Compactions forced by the provider's context overflow (at most two a turn).
    pub forced_compactions: u32,
    /// Steering messages stay in view for the rest of the turn, never in the stored transcript.
    pub steering: Vec<ChatMessage>,
}

impl<M: ChatModel, J: TurnJournal> TurnLoop<'_, M, J> {
    /// A resumed turn may stop between an assistant message and its tool results: run those.
    pub async fn resume_pending(&mut self) -> Result<(), TurnEnd> {
        let pending = crate::pending_tool_calls(&self.messages);
        if self.step > 0 && !pending.is_empty() {
            self.run_tools(&pending, self.step).await?;
        }
        Ok(())
    }

    /// One pass of the loop: compact if due, call the model, store its answer, run its tools.
    pub async fn iterate(&mut self) -> Result<(), TurnEnd> {
        let budget_left =
            self.spent.iterations < self.limits.max_iterations && self.spent.api_calls < self.limits.max_api_calls;
        if !budget_left {
            return Err(self.finish_with_grace(self.step + 1).await);
        }
        self.compact_if_due().await?;
        self.step += 1;
        let reply = match self.call_model().await {
            Ok(reply) => reply,
            // A failure ends the turn, unless the context was compacted to take the step again.
            Err(error) => return self.recover(error).await,
        };
        self.prompt_tokens = Some(reply.prompt_tokens).filter(|t| *t > 0);
        let message = reply.message;
        Box::pin(record(self.tool_step.journal, self.step, &message)).await?;
        let calls = message.tool_calls.clone();
        let content = message.text();
        self.messages.push(message);
        if calls.is_empty() {
            let finish_reason = if reply.truncated { FinishReason::Length } else { FinishReason::Stop };
            let usage = self.usage;
            return Err(TurnEnd::Finished(TurnOutcome {
                content,
                finish_reason,
                usage,
                error: None,
                error_code: None,
                session_id: None,
            }));
        }
        let refunded = self.run_tools(&calls, self.step + 1).await?;
        if !refunded {
            self.spent.iterations += 1;
        }
        Ok(())
    }

    /// Compacts before the call when the prompt is too large, or (at the turn's start) when
    /// the history needs hygiene.
    async fn compact_if_due(&mut self) -> Result<(), TurnEnd> {
        let Some(engine) = self.context else {
            return Ok(());
        };
        let tokens = self.prompt_tokens.unwrap_or_else(|| compress::estimate_tokens(&self.messages));
        let at_turn_start = self.spent.api_calls == 0;
        let body_len = self.messages.iter().filter(|m| m.role != hermes_core::Role::System).count();
        if engine.should_compress(tokens) || (at_turn_start && engine.needs_hygiene(tokens, body_len)) {
            let journal = &mut *self.tool_step.journal;
            Box::pin(compact(engine, journal, &mut self.messages, &mut self.turn_start, self.step)).await?;
        }
        Ok(())
    }

    /// The model call of this step; the model sees the transcript plus this call's notes.
    async fn call_model(&mut self) -> Result<StepReply, StepError> {
        let mut deltas = Deltas { sink: self.events, enabled: self.limits.stream_deltas };
        // Budget warnings go with this call only: never stored, never in the cached prefix.
        let pressure = self.context.and_then(|c| pressure_note(self.prompt_tokens?, c.context_window()?));
        for steer in Box::pin(self.tool_step.journal.steering()).await {
            self.steering
                .push(ChatMessage::user(format!("[While you were working, the user added: {}]", steer.text())));
        }
        let notes: Vec<ChatMessage> =
            self.steering.iter().cloned().chain(budget_note(self.spent, self.limits)).chain(pressure).collect();
        let view: Cow<'_, [ChatMessage]> = if notes.is_empty() {
            Cow::Borrowed(&self.messages)
        } else {
            Cow::Owned([self.messages.as_slice(), notes.as_slice()].concat())
        };
        self.caller.run(&view, &self.schemas, &mut self.spent, &mut self.usage, &mut deltas).await
    }

    /// A step without an answer: the grace call once the budget is spent, a compaction and the
    /// step again (`Ok`) when the context overflowed, or the turn fails.
    async fn recover(&mut self, error: StepError) -> Result<(), TurnEnd> {
        let usage = self.usage;
        let e = match error {
            StepError::BudgetSpent => return Err(self.finish_with_grace(self.step).await),
            StepError::Empty => {
                let msg = format!("The model returned only empty answers ({} tries).", self.limits.empty_retries + 1);
                return Err(TurnEnd::Finished(failure(ErrorCode::AgentIncomplete, msg, usage)));
            }
            StepError::Llm(e) => e,
        };
        match e.class {
            ErrorClass::ContextOverflow if self.forced_compactions < 2 => self.compact_on_overflow(e).await,
            // Not the provider's failure: the team's budget stops the turn before the call.
            ErrorClass::SpendCap => Err(TurnEnd::Finished(failure(e.code(), e.message.clone(), usage))),
            _ => {
                tracing::warn!(error = %e, step = self.step, "model call failed");
                Err(provider_failed(&e, usage))
            }
        }
    }

    /// The provider says the prompt does not fit: compact now and take the step again.
    async fn compact_on_overflow(&mut self, e: LlmError) -> Result<(), TurnEnd> {
        let Some(engine) = self.context else {
            return Err(provider_failed(&e, self.usage));
        };
        self.forced_compactions += 1;
        self.step -= 1;
        let journal = &mut *self.tool_step.journal;
        match Box::pin(compact(engine, journal, &mut self.messages, &mut self.turn_start, self.step)).await {
            Ok(true) => {
                self.prompt_tokens = None;
                Ok(())
            }
            Ok(false) => Err(provider_failed(&e, self.usage)),
            Err(end) => Err(end),
        }
    }

    /// Runs `calls` of this step; a guardrail's halt is told to the user as step `halt_step`.
    /// `Ok(true)`: the step used only tools that refund the iteration.
    async fn run_tools(&mut self, calls: &[ToolCall], halt_step: i32) -> Result<bool, TurnEnd> {
        match Box::pin(self.tool_step.run(self.step, calls, &mut self.messages)).await? {
            StepResult::Continue { refunded } => Ok(refunded),
            StepResult::Halt(why) => Err(Box::pin(halt(self.tool_step.journal, halt_step, why, self.usage)).await),
            StepResult::Park(parked) => Err(TurnEnd::Parked(parked)),
        }
    }

    /// The grace call, its answer stored as step `step`.
    async fn finish_with_grace(&mut self, step: i32) -> TurnEnd {
        let messages = std::mem::take(&mut self.messages);
        let journal = &mut *self.tool_step.journal;
        Box::pin(grace(&self.caller, journal, self.events, self.limits, step, messages, self.usage)).await
    }
}

fn provider_failed(e: &LlmError, usage: Usage) -> TurnEnd {
    TurnEnd::Finished(failure(e.code(), format!("The model provider failed: {e}"), usage))
}
/// The per-call warning once 70 % (then 90 %) of the step budget is used.
fn budget_note(spent: Spent, limits: &TurnLimits) -> Option<ChatMessage> {
    let (used, max) = (spent.iterations, limits.max_iterations.max(1));
    let text = if used * 10 >= max * 9 {
        format!("[System note: {used} of {max} steps of this turn are used. Finish now: give the user your answer.]")
    } else if used * 10 >= max * 7 {
        format!("[System note: {used} of {max} steps of this turn are used. Prioritise finishing the task.]")
    } else {
        return None;
    };
    Some(ChatMessage::user(text))
}

/// The per-call warning when the prompt fills 70 % of the context window (compaction could not
/// bring it down).
fn pressure_note(prompt_tokens: u64, window: u64) -> Option<ChatMessage> {
    let percent = prompt_tokens.saturating_mul(100) / window.max(1);
    (percent >= 70).then(|| {
        ChatMessage::user(format!(
            "[System note: this conversation fills about {percent}% of the context window. Keep answers and tool \
             output short.]"
        ))
    })
}

/// A guardrail stopped the turn: the user is told why, as the turn's answer.
async fn halt<J: TurnJournal>(journal: &mut J, step: i32, why: String, usage: Usage) -> TurnEnd {
    let answer = ChatMessage::assistant(why.clone());
    if let Err(end) = record(journal, step, &answer).await {
        return end;
    }
    TurnEnd::Finished(TurnOutcome {
        content: why,
        finish_reason: FinishReason::Stop,
        usage,
        error: Some("a guardrail stopped the turn".into()),
        error_code: Some(ErrorCode::GuardrailHalt),
        session_id: None,
    })
}

/// The budget is spent: one call without tools to summarise, then stop honestly.
async fn grace<M: ChatModel, J: TurnJournal>(
    caller: &ModelStep<'_, M>,
    journal: &mut J,
    events: &dyn EventSink,
    limits: &TurnLimits,
    step: i32,
    mut messages: Vec<ChatMessage>,
    mut usage: Usage,
) -> TurnEnd {
    messages.push(ChatMessage::user(GRACE_PROMPT));
    // The grace call is allowed past the API-call budget: it is the one extra call.
    let mut spent = Spent::default();
    let mut deltas = Deltas { sink: events, enabled: limits.stream_deltas };
    let summary = match caller.run(&messages, &std::sync::Arc::from([]), &mut spent, &mut usage, &mut deltas).await {
        Ok(reply) if reply.message.tool_calls.is_empty() => reply.message.text(),
        Ok(_) | Err(_) => String::new(),
    };
    let content = if summary.trim().is_empty() {
        format!(
            "I stopped after {} steps without finishing. Tell me to continue if you want me to go on.",
            limits.max_iterations
        )
    } else {
        summary
    };
    let answer = ChatMessage::assistant(content.clone());
    if let Err(end) = record(journal, step, &answer).await {
        return end;
    }
    TurnEnd::Finished(TurnOutcome {
        content,
        finish_reason: FinishReason::Length,
        usage,
        error: Some("step budget exhausted".into()),
        error_code: Some(ErrorCode::IterationBudgetExhausted),
        session_id: None,
    })
}
