//! How a claimed turn ends when it does not simply finish: stopped by the user, handed back
//! to the queue, parked on a question, or failed before it ran.

use std::sync::Arc;

use hermes_core::{FinishReason, SessionId, TenantId, TurnEventKind, TurnId, TurnOutcome, Usage};
use hermes_queue::SessionWork;
use hermes_store::{ClaimedTurn, TurnStatus};

use crate::Runtime;
use crate::journal::{EventPublisher, StoreJournal};

/// Ends a turn the user stopped: stored as cancelled, announced to whoever waits.
pub(crate) async fn stop_cancelled(
    rt: &Runtime,
    tenant: TenantId,
    owner: &str,
    (session_id, turn_id, fence, hub, attempt): (SessionId, TurnId, i64, Option<String>, u32),
    span: &tracing::Span,
) {
    let outcome = TurnOutcome::cancelled();
    match rt
        .ctx
        .store
        .finish_turn(tenant, session_id, turn_id, owner, fence, TurnStatus::Cancelled, &outcome, None, &[])
        .await
    {
        Ok(()) => {
            tracing::info!(parent: span, "turn cancelled");
            metrics::counter!("hermes_turns_total", "status" => "cancelled").increment(1);
            let events = EventPublisher::start(rt.ctx.broker.clone(), tenant, session_id, turn_id, attempt, hub);
            events.finish(Some(TurnEventKind::Finished { outcome })).await;
        }
        Err(e) => tracing::warn!(parent: span, error = %e, "cannot store the cancellation"),
    }
}

/// Returns a running turn to the queue and tells the other workers at once.
pub(crate) async fn hand_back(
    rt: &Runtime,
    tenant: TenantId,
    session_id: SessionId,
    turn_id: TurnId,
    owner: &str,
    span: &tracing::Span,
) {
    match rt.ctx.store.release_turn(tenant, turn_id, owner).await {
        Ok(_) => {
            tracing::info!(parent: span, "turn handed back for another worker to resume");
            let work = SessionWork { tenant_id: tenant, session_id };
            if let Err(e) = rt.ctx.broker.publish_work(&work).await {
                tracing::warn!(parent: span, error = %e, "cannot republish; the reaper will");
            }
        }
        Err(e) => {
            tracing::warn!(parent: span, error = %e, "cannot hand the turn back; its lease will expire")
        }
    }
}

pub(crate) fn failed(code: &str, message: impl Into<String>) -> TurnOutcome {
    TurnOutcome {
        content: String::new(),
        finish_reason: FinishReason::Error,
        usage: Usage::default(),
        error: Some(message.into()),
        error_code: Some(code.into()),
        session_id: None,
    }
}

/// Parks the turn on the call that needs the user, and tells whoever waits for the turn.
pub(crate) async fn park(
    rt: &Arc<Runtime>,
    tenant: TenantId,
    turn: &ClaimedTurn,
    owner: &str,
    journal: &StoreJournal,
    parked: hermes_agent::Parked,
    events: EventPublisher,
) {
    let cfg = &rt.ctx.config.worker;
    let timeout =
        if parked.interaction.kind == "approval" { cfg.approval_timeout_seconds } else { cfg.clarify_timeout_seconds };
    let request = hermes_store::Park {
        agent: turn.agent_id,
        call_id: &parked.call_id,
        kind: parked.interaction.kind,
        prompt: &parked.interaction.prompt,
        timeout: std::time::Duration::from_secs(timeout),
    };
    match rt.ctx.store.park_turn(tenant, journal.session, turn.turn_id, owner, turn.fence, &request).await {
        Ok(interaction) => {
            tracing::info!(interaction.id = %interaction.id, kind = %interaction.kind, tool = %parked.tool, "turn waits for the user");
            metrics::counter!("hermes_turns_parked_total", "kind" => parked.interaction.kind).increment(1);
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
