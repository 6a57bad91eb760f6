//! How a turn ends: its outcome stored (fenced) and announced, then the session's goal
//! advanced and a review queued; or handed back to the queue, parked on a question, or
//! superseded by another worker. (A turn the user stopped ends in [`super::claim`].)

use std::time::Instant;

use hermes_agent::{Parked, TurnEnd};
use hermes_core::{FinishReason, InteractionKind, TenantId, TurnEventKind, TurnOutcome};
use hermes_queue::{ReviewJob, SessionWork};
use hermes_store::{StoreError, TurnStatus};

use super::claim::{Claim, Ran};
use super::plan::TurnPlan;
use crate::Runtime;
use crate::events::EventPublisher;
use crate::goals::Verdict;
use crate::journal::StoreJournal;
use crate::phases::Phase;

/// How a turn ended, and what follows once its outcome is stored.
pub(super) struct Ending {
    pub end: TurnEnd,
    /// The goal judge's verdict on the answer, applied once the outcome is stored.
    pub goal: Option<Verdict>,
}

impl From<TurnEnd> for Ending {
    fn from(end: TurnEnd) -> Self {
        Self { end, goal: None }
    }
}

/// Right after the loop: delegated children's usage counts toward the turn, and an attended
/// turn's answer is judged against the session's active goal.
pub(super) async fn after_loop(
    rt: &Runtime,
    tenant: TenantId,
    plan: &TurnPlan,
    journal: &StoreJournal,
    mut end: TurnEnd,
) -> Ending {
    if let TurnEnd::Finished(outcome) = &mut end
        && let Ok(children) = plan.child_usage.lock()
    {
        outcome.usage.add(&children);
    }
    let mut goal = None;
    if let TurnEnd::Finished(outcome) = &end
        && outcome.finish_reason != FinishReason::Error
        && !outcome.content.trim().is_empty()
        && !plan.origin.is_unattended()
        && plan.goal_may_apply
        && let Ok(Some(to_judge)) = rt.ctx.store.conversations().goal_to_judge(tenant, journal.session()).await
    {
        goal = Some(crate::goals::judge(&plan.models, &to_judge, &outcome.content).await);
    }
    Ending { end, goal }
}

/// Stores and announces how the turn ended.
pub(super) async fn settle(
    claim: &Claim<'_>,
    journal: StoreJournal,
    events: EventPublisher,
    ending: Ending,
    started: Instant,
) -> Ran {
    match ending.end {
        TurnEnd::Superseded => {
            tracing::warn!("another worker took the session over; stopping quietly");
            journal.store_calls().await;
            events.finish(None).await;
            Ran::Stop
        }
        TurnEnd::Suspended(reason) => {
            tracing::warn!(reason, "storage failed; handing the turn back to be resumed");
            journal.store_calls().await;
            events.finish(None).await;
            claim.hand_back(&tracing::Span::current()).await;
            Ran::Stop
        }
        TurnEnd::Parked(parked) => {
            journal.store_calls().await;
            park(claim, &journal, parked, events).await;
            Ran::Done
        }
        TurnEnd::Finished(outcome) => {
            let Some(status) = finish(claim, &journal, events, outcome, started).await else { return Ran::Stop };
            after_finish(claim, &journal, status, ending.goal).await;
            Ran::Done
        }
    }
}

/// Stores the outcome with the held-back answer and the unstored model calls, then announces
/// it. `None` when it could not be stored (taken over, or the lease expires and another worker
/// resumes from the checkpoints).
async fn finish(
    claim: &Claim<'_>,
    journal: &StoreJournal,
    events: EventPublisher,
    mut outcome: TurnOutcome,
    started: Instant,
) -> Option<TurnStatus> {
    let Claim { rt, tenant, owner, turn } = *claim;
    if crate::attachments::is_chat(turn.session_source) {
        if outcome.finish_reason != FinishReason::Error {
            crate::tools::speech::speak_answer(rt, tenant, turn, &outcome.content).await;
        }
        outcome.content = crate::attachments::collect(rt, tenant, turn, std::mem::take(&mut outcome.content)).await;
    }
    if let Some(child) = journal.compacted_into() {
        // The conversation goes on in the compacted child session.
        outcome.session_id = Some(child);
    }
    let status = if outcome.finish_reason == FinishReason::Error { TurnStatus::Failed } else { TurnStatus::Completed };
    let finishing = Instant::now();
    let (session, answer, calls) = (journal.session(), journal.final_answer(), journal.take_calls());
    let store = &rt.ctx.store;
    let stored =
        store.turns().finish_turn(tenant, session, turn.turn_id, owner, turn.fence, status, &outcome, answer, &calls);
    match stored.await {
        Ok(report) => crate::children::reported(rt, tenant, report).await,
        Err(e) => {
            match e {
                StoreError::Fenced => tracing::warn!("the turn was taken over before its outcome was stored"),
                e => tracing::error!(error = %e, "cannot store the turn outcome"),
            }
            events.finish(None).await;
            return None;
        }
    }
    let label = if status == TurnStatus::Completed { "completed" } else { "failed" };
    // Failures by their closed error code (`none` for an answer): what the dashboard breaks
    // failures down by.
    let code = outcome.error_code.map_or("none", |c| c.as_str());
    metrics::counter!("hermes_turns_total", "status" => label, "code" => code).increment(1);
    metrics::histogram!("hermes_turn_seconds", "status" => label).record(started.elapsed().as_secs_f64());
    if status != TurnStatus::Completed {
        // The turn's span (this runs inside it) shows as failed, with its closed error code.
        let span = tracing::Span::current();
        span.record("otel.status_code", "ERROR");
        span.record("error.type", code);
    }
    tracing::info!(status = label, elapsed_ms = started.elapsed().as_secs_f64() * 1000.0, "turn finished");
    events.finish(Some(TurnEventKind::Finished { outcome })).await;
    Phase::Finish.record(finishing.elapsed());
    Some(status)
}

/// What follows a stored outcome: the compacted session is signalled, and a completed turn
/// advances the session's goal and may be reviewed.
async fn after_finish(claim: &Claim<'_>, journal: &StoreJournal, status: TurnStatus, goal: Option<Verdict>) {
    let Claim { rt, tenant, turn, .. } = *claim;
    let session_id = journal.session();
    if journal.compacted_into().is_some() {
        // Messages that waited in the parent moved to the child with the conversation.
        let work = SessionWork { tenant_id: tenant, session_id };
        if let Err(e) = rt.ctx.broker.publish_work(&work).await {
            tracing::warn!(error = %e, "cannot signal the compacted session; the reaper will");
        }
    }
    // A child's work is its parent's: no review of its own.
    if status != TurnStatus::Completed || turn.session_source == hermes_core::SessionSource::Subagent {
        return;
    }
    if let Some(verdict) = goal {
        crate::goals::advance(rt, tenant, turn, session_id, verdict).await;
    }
    crate::titles::after_answer(rt, tenant, turn, session_id);
    let job = ReviewJob { tenant_id: tenant, agent_id: turn.agent_id, session_id, turn_id: turn.turn_id };
    // A first run saw every tool call of the turn; a resumed one counts the stored ones.
    let seen = (turn.attempt == 1).then(|| journal.tool_calls());
    crate::review::maybe_queue(rt, job, seen).await;
}

/// Parks the turn on the call that needs the user, and tells whoever waits for the turn.
async fn park(claim: &Claim<'_>, journal: &StoreJournal, parked: Parked, events: EventPublisher) {
    let Claim { rt, tenant, owner, turn } = *claim;
    let cfg = &rt.ctx.config.worker;
    let timeout = match parked.interaction.kind {
        InteractionKind::Approval => cfg.approval_timeout_seconds,
        InteractionKind::Clarify => cfg.clarify_timeout_seconds,
    };
    let request = hermes_store::Park {
        agent: turn.agent_id,
        call_id: &parked.call_id,
        kind: parked.interaction.kind,
        prompt: &parked.interaction.prompt,
        timeout: std::time::Duration::from_secs(timeout),
    };
    match rt.ctx.store.turns().park_turn(tenant, journal.session(), turn.turn_id, owner, turn.fence, &request).await {
        Ok(interaction) => {
            tracing::info!(interaction.id = %interaction.id, kind = %interaction.kind, tool = %parked.tool, "turn waits for the user");
            metrics::counter!("hermes_turns_parked_total", "kind" => parked.interaction.kind.as_str()).increment(1);
            events.finish(Some(TurnEventKind::Waiting { interaction })).await;
        }
        Err(e) => {
            // Fenced: another worker owns it. Otherwise the lease expires and the turn resumes
            // elsewhere, asking again.
            tracing::warn!(error = %e, "cannot park the turn");
            events.finish(None).await;
        }
    }
}
