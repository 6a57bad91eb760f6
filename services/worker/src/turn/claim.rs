//! The claimed turn being run and by whom, how its work ended for the session loop, and the
//! two ways a claim ends without an outcome of the agent's: stored as cancelled when the user
//! stopped it, or handed back to the queue for another worker to resume.

use std::sync::Arc;

use hermes_core::{TenantId, TurnEventKind, TurnOutcome};
use hermes_queue::SessionWork;
use hermes_store::{ClaimedTurn, TurnStatus};

use crate::Runtime;
use crate::events::EventPublisher;

/// How a turn's work ended, for the session loop.
pub(super) enum Ran {
    /// The outcome is stored and announced; the session may run its next turn.
    Done,
    /// Stop working on this session (taken over, handed back, or lease lost).
    Stop,
}

/// The claimed turn being run, and by whom.
#[derive(Clone, Copy)]
pub(super) struct Claim<'a> {
    pub rt: &'a Arc<Runtime>,
    pub tenant: TenantId,
    pub owner: &'a str,
    pub turn: &'a ClaimedTurn,
}

impl Claim<'_> {
    /// Ends a turn the user stopped: stored as cancelled, announced to whoever waits.
    pub(super) async fn stop_cancelled(self, span: &tracing::Span) {
        let Claim { rt, tenant, owner, turn } = self;
        let outcome = TurnOutcome::cancelled();
        let store = &rt.ctx.store;
        let (session, fence) = (turn.session_id, turn.fence);
        match store
            .turns()
            .finish_turn(tenant, session, turn.turn_id, owner, fence, TurnStatus::Cancelled, &outcome, None, &[])
            .await
        {
            Ok(report) => {
                crate::children::reported(rt, tenant, report).await;
                tracing::info!(parent: span, "turn cancelled");
                metrics::counter!("hermes_turns_total", "status" => "cancelled", "code" => "none").increment(1);
                let events = EventPublisher::for_turn(rt.ctx.broker.clone(), tenant, turn);
                events.finish(Some(TurnEventKind::Finished { outcome })).await;
            }
            Err(e) => tracing::warn!(parent: span, error = %e, "cannot store the cancellation"),
        }
    }

    /// Returns a running turn to the queue and tells the other workers at once.
    pub(super) async fn hand_back(self, span: &tracing::Span) {
        let Claim { rt, tenant, owner, turn } = self;
        match rt.ctx.store.turns().release_turn(tenant, turn.turn_id, owner).await {
            Ok(_) => {
                tracing::info!(parent: span, "turn handed back for another worker to resume");
                let work = SessionWork { tenant_id: tenant, session_id: turn.session_id };
                if let Err(e) = rt.ctx.broker.publish_work(&work).await {
                    tracing::warn!(parent: span, error = %e, "cannot republish; the reaper will");
                }
            }
            Err(e) => {
                tracing::warn!(parent: span, error = %e, "cannot hand the turn back; its lease will expire")
            }
        }
    }
}
