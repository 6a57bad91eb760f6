//! Running the tool calls of one model response: guardrails first, then consecutive calls
//! that may run side by side run concurrently (at most `max_parallel`), while sequential
//! tools (agent-level and interactive ones) run alone in order. Each result is checkpointed as
//! it completes; the model sees the results in the original call order.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tracing::Instrument;

use hermes_core::{ChatMessage, ToolCall, TurnEventKind};
use hermes_tools::{PERSISTED_TAG, STEP_RESULT_BUDGET_CHARS, ToolCtx, ToolOutcome, ToolRegistry};

use crate::guardrails::{Decision, Guardrails};
use crate::{EventSink, TurnEnd, TurnJournal, record};

/// Result text of a call that was not run because the turn was halted before it.
pub const NOT_RUN: &str = "[not run: the turn was stopped before this call]";

/// What the step did.
pub(crate) enum StepResult {
    /// Go on; `refunded` when the step only used tools that refund the iteration.
    Continue { refunded: bool },
    /// A guardrail ended the turn; tell the user this.
    Halt(String),
    /// A call needs the user: the turn waits (that call, and calls after it, have no result
    /// yet; they run when the turn resumes).
    Park(Parked),
}

/// The call a turn is parked on.
#[derive(Debug, Clone, PartialEq)]
pub struct Parked {
    pub call_id: String,
    pub tool: String,
    pub interaction: hermes_tools::Interaction,
}

pub(crate) struct ToolStep<'a, J> {
    pub tools: &'a ToolRegistry,
    pub base_ctx: &'a ToolCtx,
    pub journal: &'a mut J,
    pub events: &'a dyn EventSink,
    pub guardrails: &'a mut Guardrails,
    pub max_parallel: usize,
}

/// Consecutive runs of calls: each group runs concurrently; a sequential tool is its own group.
fn groups(tools: &ToolRegistry, calls: &[ToolCall]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        let sequential = tools.traits(&call.function.name).sequential;
        match out.last_mut() {
            Some(group) if !sequential && !group.iter().any(|&j| tools.traits(&calls[j].function.name).sequential) => {
                group.push(i)
            }
            _ => out.push(vec![i]),
        }
    }
    out
}

/// What the calls of one step have produced so far.
struct Outcomes {
    /// One slot per call, in call order.
    results: Vec<Option<ChatMessage>>,
    halt: Option<String>,
    parked: Option<Parked>,
    /// The results of one response share a budget. Each result is journaled as it completes
    /// (so a crash never re-runs a finished call), so the one that crosses the budget is saved
    /// to a file, not the largest as upstream does after the fact.
    step_chars: usize,
}

impl<J: TurnJournal> ToolStep<'_, J> {
    /// Runs `calls` (of step `step`) and appends their results to `messages` in call order.
    pub async fn run(
        &mut self,
        step: i32,
        calls: &[ToolCall],
        messages: &mut Vec<ChatMessage>,
    ) -> Result<StepResult, TurnEnd> {
        let mut done = Outcomes { results: vec![None; calls.len()], halt: None, parked: None, step_chars: 0 };
        for group in groups(self.tools, calls) {
            if done.halt.is_some() || done.parked.is_some() {
                break;
            }
            let runnable = self.screen(step, calls, group, &mut done.results).await?;
            self.run_group(step, calls, runnable, &mut done).await?;
        }
        let Outcomes { mut results, halt, parked, .. } = done;
        if let Some(parked) = parked {
            // What ran is stored; the rest waits for the answer.
            messages.extend(results.into_iter().flatten());
            return Ok(StepResult::Park(parked));
        }
        for (idx, slot) in results.iter_mut().enumerate() {
            if slot.is_none() {
                // Only after a halt: the transcript still gets one result per call.
                let call = &calls[idx];
                let result = ChatMessage::tool_result(&call.id, &call.function.name, NOT_RUN);
                record(self.journal, step, &result).await?;
                *slot = Some(result);
            }
        }
        messages.extend(results.into_iter().flatten());
        if let Some(why) = halt {
            return Ok(StepResult::Halt(why));
        }
        let tools = self.tools;
        let refunded = !calls.is_empty() && calls.iter().all(|c| tools.traits(&c.function.name).refunds_iteration);
        Ok(StepResult::Continue { refunded })
    }

    /// The guardrails' verdict before the calls of `group` run: a blocked call gets its result
    /// now; the others are returned, to run.
    async fn screen(
        &mut self,
        step: i32,
        calls: &[ToolCall],
        group: Vec<usize>,
        results: &mut [Option<ChatMessage>],
    ) -> Result<Vec<usize>, TurnEnd> {
        let mut runnable = Vec::with_capacity(group.len());
        for idx in group {
            let call = &calls[idx];
            match self.guardrails.before(&call.function.name, &call.function.arguments) {
                Decision::Block(text) => {
                    let result = ChatMessage::tool_result(&call.id, &call.function.name, text);
                    record(self.journal, step, &result).await?;
                    results[idx] = Some(result);
                }
                _ => runnable.push(idx),
            }
        }
        Ok(runnable)
    }

    /// Runs the calls of one group concurrently and settles each as it completes.
    async fn run_group(
        &mut self,
        step: i32,
        calls: &[ToolCall],
        runnable: Vec<usize>,
        done: &mut Outcomes,
    ) -> Result<(), TurnEnd> {
        let (tools, base_ctx, events) = (self.tools, self.base_ctx, self.events);
        for &idx in &runnable {
            let call = &calls[idx];
            events.emit(TurnEventKind::ToolStarted {
                call_id: call.id.clone(),
                tool: call.function.name.clone(),
                preview: call.function.arguments.chars().take(200).collect(),
                arguments: hermes_core::event_text(&call.function.arguments),
            });
        }
        let mut running = futures_util::stream::iter(runnable)
            .map(|idx| {
                let call = &calls[idx];
                let ctx = ToolCtx { call_id: call.id.clone(), ..base_ctx.clone() };
                let span = tool_span(tools.label(&call.function.name), &call.id);
                async move {
                    let started = Instant::now();
                    let outcome = tools.dispatch(&ctx, call).instrument(span.clone()).await;
                    if !outcome.ok {
                        span.record("otel.status_code", "ERROR");
                        span.record("error.type", "tool_error");
                    }
                    (idx, outcome, started.elapsed())
                }
            })
            .buffer_unordered(self.max_parallel.max(1));
        while let Some((idx, outcome, elapsed)) = running.next().await {
            self.settle(step, &calls[idx], idx, outcome, elapsed, done).await?;
        }
        Ok(())
    }

    /// Takes in one finished call: metered, checked by the guardrails, kept within the step's
    /// budget, stored, and reported.
    async fn settle(
        &mut self,
        step: i32,
        call: &ToolCall,
        idx: usize,
        outcome: ToolOutcome,
        elapsed: Duration,
        done: &mut Outcomes,
    ) -> Result<(), TurnEnd> {
        let (tools, base_ctx, events) = (self.tools, self.base_ctx, self.events);
        let name = &call.function.name;
        if let Some(interaction) = outcome.park {
            // No result: the call runs again, with the user's answer, on resume. A
            // second call of the group that also needs the user asks after that.
            if done.parked.is_none() {
                done.parked = Some(Parked { call_id: call.id.clone(), tool: name.clone(), interaction });
            }
            return Ok(());
        }
        metrics::histogram!("hermes_tool_seconds", "tool" => tools.label(name), "ok" => outcome.ok.to_string())
            .record(elapsed.as_secs_f64());
        let traits = tools.traits(name);
        let read_only = traits.read_only;
        self.journal.tool_time(elapsed, traits.sandboxed).await;
        let mut text = outcome.text;
        match self.guardrails.after(name, &call.function.arguments, read_only, outcome.ok, &text) {
            Decision::Warn(guidance) => {
                text.push_str("\n\n");
                text.push_str(&guidance);
            }
            Decision::Halt(why) => done.halt = Some(why),
            Decision::Allow | Decision::Block(_) => {}
        }
        let mut chars = text.chars().count();
        if done.step_chars + chars > STEP_RESULT_BUDGET_CHARS && !text.contains(PERSISTED_TAG) {
            let ctx = ToolCtx { call_id: call.id.clone(), ..base_ctx.clone() };
            text = tools.persist(&ctx, text).await;
            chars = text.chars().count();
        }
        done.step_chars += chars;
        let output = hermes_core::event_text(&text);
        let result = ChatMessage::tool_result(&call.id, name, text);
        record(self.journal, step, &result).await?;
        done.results[idx] = Some(result);
        events.emit(TurnEventKind::ToolCompleted {
            call_id: call.id.clone(),
            tool: name.clone(),
            ok: outcome.ok,
            duration_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
            output,
        });
        Ok(())
    }
}

/// The GenAI `execute_tool` span of one call; the tool is named as the registry knows it (a
/// name the model made up is `unknown`), never as the model wrote it.
fn tool_span(tool: &'static str, call_id: &str) -> tracing::Span {
    let name = format!("execute_tool {tool}");
    tracing::info_span!(
        "tool",
        otel.name = %name,
        otel.status_code = tracing::field::Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        gen_ai.tool.type = "function",
        gen_ai.tool.call.id = %call_id,
        error.type = tracing::field::Empty,
    )
}
