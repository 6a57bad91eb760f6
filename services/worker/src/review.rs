//! The learning loop's background review. After a turn that took real work (at least
//! `learning.review_min_tool_calls` tool calls), the worker queues it on the low-priority
//! review queue (at most `learning.reviews_per_tenant_per_hour` per tenant, counted in Redis).
//! A worker takes one review at a time and runs a restricted agent over the turn's transcript:
//! it has only the memory and skills tools the agent has (so no shell: dangerous commands are
//! out of reach, and it cannot ask anyone), at most `learning.review_max_iterations` steps, on
//! the auxiliary model when there is one. What it saves shows in the agent's next sessions.

use std::sync::Arc;
use std::time::Duration;

use hermes_agent::memory::{self, Document};
use hermes_agent::prompt::{PromptInputs, render_stable_prompt};
use hermes_agent::{JournalError, TurnJournal};
use hermes_core::{ChatMessage, Role, ToolsetName};
use hermes_queue::ReviewJob;
use hermes_store::Agent;
use hermes_tools::{Interactive, ToolCtx};

use crate::Runtime;
use crate::aside::Aside;

const REVIEW_INSTRUCTIONS: &str = "You are reviewing a conversation that just ended, to make this agent better \
next time. You cannot talk to the user. Look for: durable facts about the user or their environment worth saving \
with `memory` (not already saved); a procedure that worked after several steps, errors worked around, or a \
correction by the user, worth saving or improving as a skill with `skill_manage` (check skills_list first; patch an \
existing skill rather than duplicating it). Save only what will clearly help again. When done, or if nothing is \
worth saving, reply with one line saying what you saved.";

/// Characters of each transcript message the reviewer sees.
const MESSAGE_CHARS: usize = 2_000;
/// Characters of transcript in all.
const TRANSCRIPT_CHARS: usize = 40_000;
const REVIEW_TIMEOUT: Duration = Duration::from_secs(300);

/// Queues a finished turn for review if it did enough work and the tenant has budget left.
/// `tool_calls_seen`: the turn's tool calls when the worker saw them all (its first run);
/// otherwise they are counted from the stored transcript.
pub(crate) async fn maybe_queue(rt: &Runtime, job: ReviewJob, tool_calls_seen: Option<usize>) {
    let learning = &rt.ctx.config.learning;
    if !learning.review_enabled {
        return;
    }
    let tool_calls = match tool_calls_seen {
        Some(n) => n,
        None => {
            let Ok(messages) = rt.ctx.store.conversations().turn_messages(job.tenant_id, job.turn_id).await else {
                return;
            };
            messages.iter().map(|m| m.tool_calls.len()).sum()
        }
    };
    if tool_calls < learning.review_min_tool_calls {
        return;
    }
    let learns = |a: &Agent| [ToolsetName::Memory, ToolsetName::Skills].iter().any(|t| t.enabled_in(&a.toolsets));
    if !rt.ctx.store.agents().agent(job.tenant_id, job.agent_id).await.is_ok_and(|a| learns(&a)) {
        return;
    }
    let counters = rt.ctx.cache.window_counters();
    match counters.hit(&format!("reviews:{}", job.tenant_id), Duration::from_secs(3600)).await {
        Ok(n) if n > u64::from(learning.reviews_per_tenant_per_hour) => {
            metrics::counter!("hermes_reviews_skipped_total", "reason" => "rate_limit").increment(1);
            return;
        }
        Ok(_) => {}
        Err(e) => {
            tracing::warn!(error = %e, "review budget unavailable; skipping the review");
            return;
        }
    }
    match rt.ctx.broker.publish_review(&job).await {
        Ok(()) => metrics::counter!("hermes_reviews_queued_total").increment(1),
        Err(e) => tracing::warn!(error = %e, "cannot queue the review"),
    }
}

/// Reviews, one at a time, until `shutdown`.
pub(crate) async fn run_reviews(rt: Arc<Runtime>, shutdown: tokio_util::sync::CancellationToken) {
    let mut consumer = match rt.ctx.broker.consume_reviews(1, &format!("{}-review", rt.worker_id)).await {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "cannot consume reviews; this worker does none");
            return;
        }
    };
    loop {
        let delivery = tokio::select! {
            () = shutdown.cancelled() => break,
            next = consumer.next() => match next {
                Some(d) => d,
                None => break,
            },
        };
        let job = delivery.work;
        let span = tracing::info_span!("review", tenant.id = %job.tenant_id, turn.id = %job.turn_id);
        match tokio::time::timeout(REVIEW_TIMEOUT, tracing::Instrument::instrument(review(&rt, job), span)).await {
            Ok(Ok(summary)) => tracing::info!(turn.id = %job.turn_id, summary, "turn reviewed"),
            Ok(Err(e)) => tracing::warn!(turn.id = %job.turn_id, error = %e, "review failed"),
            Err(_) => tracing::warn!(turn.id = %job.turn_id, "review timed out"),
        }
        // Reviews are best effort: one that failed is not retried.
        delivery.ack().await;
    }
    consumer.cancel().await;
}

/// Journals nothing: a review's own steps are not part of any conversation.
struct Unrecorded;

impl TurnJournal for Unrecorded {
    async fn record(&mut self, _: i32, _: &ChatMessage) -> Result<(), JournalError> {
        Ok(())
    }
}

fn transcript(messages: &[ChatMessage]) -> String {
    let mut out = String::new();
    for m in messages {
        let mut text = m.text();
        for call in &m.tool_calls {
            text.push_str(&format!("\n[calls {} {}]", call.function.name, call.function.arguments));
        }
        let text: String = text.chars().take(MESSAGE_CHARS).collect();
        let who = match m.role {
            Role::User => "USER",
            Role::Assistant => "ASSISTANT",
            Role::Tool => "TOOL RESULT",
            Role::System => "SYSTEM",
        };
        out.push_str(&format!("--- {who}\n{text}\n"));
        if out.chars().count() > TRANSCRIPT_CHARS {
            out.push_str("[transcript cut]\n");
            break;
        }
    }
    out
}

fn text(e: impl std::fmt::Display) -> String {
    e.to_string()
}

async fn review(rt: &Arc<Runtime>, job: ReviewJob) -> Result<String, String> {
    let store = &rt.ctx.store;
    let agent = store.agents().agent(job.tenant_id, job.agent_id).await.map_err(text)?;
    let user_key = store.conversations().session_user_key(job.tenant_id, job.session_id).await.map_err(text)?;
    let tools = crate::tools::registry::reviewer(&rt.toolkit, &agent, &user_key);
    if tools.names().is_empty() {
        return Ok("nothing to review with".into());
    }
    let messages = store.conversations().turn_messages(job.tenant_id, job.turn_id).await.map_err(text)?;
    let snapshot = store.agents().memory_snapshot(job.tenant_id, agent.id, &user_key).await.map_err(text)?;
    let limits = &rt.ctx.config.memory;
    let memory_block = memory::render_block(Document::Memory, &snapshot.memory, limits.memory_char_limit);
    let user_block = memory::render_block(Document::User, &snapshot.user, limits.user_char_limit);
    let names = tools.names();
    let prompt = render_stable_prompt(&PromptInputs {
        soul: agent.soul.as_deref(),
        model: &agent.model,
        tool_names: &names,
        custom_system: Some(REVIEW_INSTRUCTIONS),
        memory: memory_block.as_deref(),
        user_profile: user_block.as_deref(),
        skills: &[],
        context_file: None,
        today: chrono::Utc::now().date_naive(),
        source: None,
    });
    let ledger = crate::budget::Ledger { session: job.session_id, turn: job.turn_id };
    let (models, meter) =
        crate::aside::models_after(rt, job.tenant_id, &agent, ledger, hermes_core::CallPurpose::Review)
            .await
            .map_err(text)?;
    let (model, model_name) = models.for_task(hermes_core::AuxiliaryTask::Review);
    let input = ChatMessage::user(format!("The conversation to review:\n\n{}", transcript(&messages)));
    let tool_ctx = ToolCtx {
        tenant_id: job.tenant_id,
        agent_id: agent.id,
        session_id: job.session_id,
        turn_id: job.turn_id,
        // The review reads the transcript and writes memory and skills, never files.
        workspace: hermes_core::Workspace::Shared,
        call_id: String::new(),
        interaction: Interactive { enabled: false, ..Interactive::default() },
        workdir: None,
    };
    let max_iterations = rt.ctx.config.learning.review_max_iterations;
    let aside = Aside {
        events: &crate::aside::Quiet,
        model: &model,
        model_name: &model_name,
        settings: &hermes_core::ModelSettings::default(),
        tools: &tools,
        tool_ctx: &tool_ctx,
        journal: &mut Unrecorded,
        max_iterations,
    };
    let end = aside.run(prompt, input).await;
    let calls = meter.drain();
    store.tenancy().record_model_calls(job.tenant_id, job.session_id, job.turn_id, &calls).await.map_err(text)?;
    metrics::counter!("hermes_reviews_total").increment(1);
    Ok(match end {
        hermes_agent::TurnEnd::Finished(outcome) => outcome.content,
        _ => "review ended early".into(),
    })
}
