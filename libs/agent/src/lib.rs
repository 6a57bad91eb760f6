//! The agent loop: call the model, run the tools it asks for, append the results, call again,
//! until it answers in plain text. Persistence and events are injected ([`TurnJournal`],
//! [`EventSink`]) so this crate knows no database, queue or sandbox.
//!
//! A turn can resume: given the messages already stored for it, the loop continues from the
//! last checkpoint and never re-runs a tool call that already has a stored result.

pub mod normalize;
pub mod prompt;

use std::future::Future;
use std::time::Instant;

use hermes_core::{ChatMessage, FinishReason, ToolCall, TurnEventKind, TurnOutcome, Usage};
use hermes_llm::{ChatModel, ChatRequest, DeltaSink};
use hermes_tools::{ToolCtx, ToolRegistry};

/// Where the loop checkpoints messages.
pub trait TurnJournal: Send {
    /// Stores `message` as part of step `step` of the turn before the loop goes on.
    /// An error stops the turn (e.g. another worker took the session over).
    fn record(&mut self, step: i32, message: &ChatMessage) -> impl Future<Output = Result<(), JournalError>> + Send;
}

/// A journal failure: the turn must stop without writing more.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// Another worker owns the session now; this one must stop quietly.
    #[error("another worker owns the session")]
    Fenced,
    #[error("cannot store the message: {0}")]
    Storage(String),
}

/// Where the loop reports progress (text deltas, tool start/end). Never blocks.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: TurnEventKind);
}

/// Limits of one turn.
#[derive(Debug, Clone)]
pub struct TurnLimits {
    /// Model calls allowed in the turn (90 for a main agent).
    pub max_iterations: u32,
    /// Whether text deltas are wanted (a streaming client is listening).
    pub stream_deltas: bool,
}

/// The state a turn starts (or resumes) from.
#[derive(Debug, Clone)]
pub struct TurnStart {
    /// Everything the model sees: system prompt(s), history, this turn's messages so far.
    pub messages: Vec<ChatMessage>,
    /// Steps of this turn already stored (0 when fresh: only the user input is stored).
    pub completed_steps: i32,
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
}

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
}

/// Tool calls of the last assistant message that have no result yet (a resumed turn).
pub fn pending_tool_calls(messages: &[ChatMessage]) -> Vec<ToolCall> {
    let Some(pos) = messages.iter().rposition(|m| m.role == hermes_core::Role::Assistant) else {
        return Vec::new();
    };
    let answered: Vec<&str> = messages[pos + 1..].iter().filter_map(|m| m.tool_call_id.as_deref()).collect();
    messages[pos].tool_calls.iter().filter(|c| !answered.contains(&c.id.as_str())).cloned().collect()
}

fn failure(code: &str, message: String, usage: Usage) -> TurnOutcome {
    TurnOutcome {
        content: String::new(),
        finish_reason: FinishReason::Error,
        usage,
        error: Some(message),
        error_code: Some(code.to_owned()),
    }
}

/// Runs (or resumes) one turn to its end.
#[expect(clippy::too_many_arguments, reason = "the loop's collaborators are explicit on purpose")]
pub async fn run_turn<M: ChatModel, J: TurnJournal>(
    model: &M,
    model_name: &str,
    tools: &ToolRegistry,
    tool_ctx: &ToolCtx,
    journal: &mut J,
    events: &dyn EventSink,
    limits: &TurnLimits,
    start: TurnStart,
) -> TurnEnd {
    let TurnStart { mut messages, completed_steps } = start;
    let mut step = completed_steps;
    let mut usage = Usage::default();
    let schemas = tools.schemas();

    // A resumed turn may stop between an assistant message and its tool results.
    let pending = pending_tool_calls(&messages);
    if step > 0 && !pending.is_empty() {
        match run_tools(tools, tool_ctx, journal, events, step, &pending, &mut messages).await {
            Ok(()) => {}
            Err(end) => return end,
        }
    }

    loop {
        if u32::try_from(step).unwrap_or(u32::MAX) >= limits.max_iterations {
            let text = format!(
                "I stopped after {} steps without finishing. Tell me to continue if you want me to go on.",
                limits.max_iterations
            );
            return TurnEnd::Finished(TurnOutcome {
                content: text,
                finish_reason: FinishReason::Length,
                usage,
                error: Some("iteration budget exhausted".into()),
                error_code: Some("iteration_budget_exhausted".into()),
            });
        }
        step += 1;
        let request = ChatRequest {
            model: model_name.to_owned(),
            messages: normalize::normalize(&messages),
            tools: schemas.clone(),
            max_tokens: None,
        };
        let mut deltas = Deltas { sink: events, enabled: limits.stream_deltas };
        let response = match model.complete(&request, &mut deltas).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, step, "model call failed");
                return TurnEnd::Finished(failure(e.code(), format!("The model provider failed: {e}"), usage));
            }
        };
        usage.add(&response.usage);
        let message = response.message;
        if message.tool_calls.is_empty() && message.text().trim().is_empty() {
            return TurnEnd::Finished(failure(
                "agent_incomplete",
                "The model returned an empty response.".into(),
                usage,
            ));
        }
        if let Err(end) = record(journal, step, &message).await {
            return end;
        }
        let calls = message.tool_calls.clone();
        let content = message.text();
        messages.push(message);
        if calls.is_empty() {
            let finish_reason = if response.finish_reason.as_deref() == Some("length") {
                FinishReason::Length
            } else {
                FinishReason::Stop
            };
            return TurnEnd::Finished(TurnOutcome { content, finish_reason, usage, error: None, error_code: None });
        }
        if let Err(end) = run_tools(tools, tool_ctx, journal, events, step, &calls, &mut messages).await {
            return end;
        }
    }
}

async fn record<J: TurnJournal>(journal: &mut J, step: i32, message: &ChatMessage) -> Result<(), TurnEnd> {
    match journal.record(step, message).await {
        Ok(()) => Ok(()),
        Err(JournalError::Fenced) => Err(TurnEnd::Superseded),
        Err(JournalError::Storage(e)) => {
            tracing::warn!(error = %e, step, "cannot checkpoint the turn; suspending it");
            Err(TurnEnd::Suspended(e))
        }
    }
}

/// Runs tool calls in order, checkpointing each result.
async fn run_tools<J: TurnJournal>(
    tools: &ToolRegistry,
    base_ctx: &ToolCtx,
    journal: &mut J,
    events: &dyn EventSink,
    step: i32,
    calls: &[ToolCall],
    messages: &mut Vec<ChatMessage>,
) -> Result<(), TurnEnd> {
    for call in calls {
        let ctx = ToolCtx { call_id: call.id.clone(), ..base_ctx.clone() };
        let preview: String = call.function.arguments.chars().take(200).collect();
        events.emit(TurnEventKind::ToolStarted { call_id: call.id.clone(), tool: call.function.name.clone(), preview });
        let started = Instant::now();
        let outcome = tools.dispatch(&ctx, call).await;
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        metrics::histogram!("hermes_tool_seconds", "tool" => call.function.name.clone(), "ok" => outcome.ok.to_string())
            .record(started.elapsed().as_secs_f64());
        let result = ChatMessage::tool_result(&call.id, &call.function.name, outcome.text);
        record(journal, step, &result).await?;
        messages.push(result);
        events.emit(TurnEventKind::ToolCompleted {
            call_id: call.id.clone(),
            tool: call.function.name.clone(),
            ok: outcome.ok,
            duration_ms,
        });
    }
    Ok(())
}
