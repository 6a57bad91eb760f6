//! A turn's run: the agent loop over its plan, and around the whole turn what stops it: a
//! cancellation, a lost lease (both found by the worker's heartbeat), a drain that took too
//! long, or (for an unattended run) too long without activity.

use std::future::Future;

use tokio_util::sync::CancellationToken;

use hermes_agent::{Turn, TurnEnd};
use hermes_cache::LockGuard;
use hermes_core::{ErrorCode, TenantId, TurnId};

use super::claim::{Claim, Ran};
use super::outcome::failed;
use super::plan::TurnPlan;
use crate::Runtime;
use crate::events::{EventPublisher, until_inactive};
use crate::journal::StoreJournal;

/// Runs `work` (the whole turn) while the worker's heartbeat (`crate::heartbeat`) keeps its
/// lease and session lock. Returns `false` when the worker should stop working on this
/// session (draining, the lease was lost, or the session was taken over).
///
/// `work` is dropped before any clean-up touches the database: a suspended `work` may hold a
/// connection, and a clean-up waiting for another beside it is a pool deadlock once every turn
/// of a busy worker does it.
pub(super) async fn supervise(
    claim: Claim<'_>,
    guard: &LockGuard,
    span: &tracing::Span,
    work: impl Future<Output = Ran>,
) -> bool {
    let Claim { rt, turn, tenant, owner } = claim;
    let cancel = CancellationToken::new();
    // The worker's one heartbeat extends this turn's lease and lock from now on.
    let registered = Registered::new(rt, turn.turn_id, &cancel, (tenant, owner, guard));
    let mut work = Box::pin(work);
    let ended = tokio::select! {
        ran = &mut work => return matches!(ran, Ran::Done),
        () = cancel.cancelled() => Ended::Cancelled,
        () = registered.lost.cancelled() => Ended::LeaseLost,
        () = rt.abandon.cancelled() => Ended::Abandoned,
    };
    // Dropping `work` stops the model call or tool at once; nothing partial is stored.
    drop(work);
    match ended {
        Ended::Cancelled => {
            Box::pin(claim.stop_cancelled(span)).await;
            true
        }
        // Another worker may run this turn now: stop instead of working beside it.
        Ended::LeaseLost => false,
        Ended::Abandoned => {
            Box::pin(claim.hand_back(span)).await;
            false
        }
    }
}

/// Why a turn stopped before its work ended.
enum Ended {
    Cancelled,
    LeaseLost,
    Abandoned,
}

/// Lists a turn among those running here (so the heartbeat keeps its lease and a
/// cancellation reaches it) while its run lasts, however it ends.
struct Registered<'a> {
    rt: &'a Runtime,
    turn: TurnId,
    owner: &'a str,
    /// Cancelled when the heartbeat finds the lease lost.
    lost: CancellationToken,
}

impl<'a> Registered<'a> {
    fn new(
        rt: &'a Runtime,
        turn: TurnId,
        cancel: &CancellationToken,
        (tenant, owner, guard): (TenantId, &'a str, &LockGuard),
    ) -> Self {
        let lost = rt.running.insert(turn, tenant, owner, guard, cancel);
        Self { rt, turn, owner, lost }
    }
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.rt.running.remove(self.turn, self.owner);
    }
}

/// Runs the agent loop over `plan`, checkpointing through `journal`; an unattended run stops
/// after its inactivity limit, a background child at its deadline.
pub(super) async fn agent_loop(plan: &mut TurnPlan, journal: &mut StoreJournal, events: &EventPublisher) -> TurnEnd {
    let start = plan.take_start();
    let engine = plan.models.context_engine();
    let run = Turn {
        model: &plan.model,
        model_name: &plan.agent.model,
        settings: &plan.agent.model_settings,
        tools: &plan.tools,
        tool_ctx: &plan.tool_ctx,
        journal,
        events,
        limits: &plan.limits,
        context: Some(&engine),
    };
    let (inactivity, deadline) = (plan.inactivity_limit, plan.deadline);
    if inactivity.is_none() && deadline.is_none() {
        return run.run(start).await;
    }
    let inactive = async {
        match inactivity {
            Some(limit) => until_inactive(events, limit).await,
            None => std::future::pending().await,
        }
    };
    let overdue = async {
        match deadline {
            Some(limit) => tokio::time::sleep(limit).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        end = run.run(start) => end,
        () = inactive => {
            let limit = inactivity.unwrap_or_default().as_secs();
            tracing::warn!(limit_s = limit, "unattended run inactive; stopping it");
            TurnEnd::Finished(failed(ErrorCode::InactivityTimeout,
                format!("The run stopped after {limit} s without activity."),
            ))
        }
        () = overdue => {
            let limit = deadline.unwrap_or_default().as_secs();
            tracing::warn!(limit_s = limit, "the task ran out of time; stopping it");
            TurnEnd::Finished(failed(ErrorCode::TurnTimeout, format!("The task stopped at its time limit of {limit} s.")))
        }
    }
}
