//! A turn's run: the agent loop over its plan, and around the whole turn a heartbeat that keeps
//! the lease and the session lock alive and reacts to a cancellation, a drain that took too
//! long, or (for an unattended run) too long without activity.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use hermes_agent::{Turn, TurnEnd};
use hermes_cache::LockGuard;
use hermes_core::{ErrorCode, TurnId};
use hermes_store::LeaseState;

use super::claim::{Claim, Ran};
use super::outcome::failed;
use super::plan::TurnPlan;
use crate::Runtime;
use crate::events::{EventPublisher, until_inactive};
use crate::journal::StoreJournal;

/// Runs `work` (the whole turn) with heartbeats on the lease and the session lock. Returns
/// `false` when the worker should stop working on this session (draining, the lease was lost,
/// or the session was taken over).
///
/// The heartbeat is a future polled beside `work`, never a `select!` arm's body: a body runs
/// alone, and one waiting for a database connection while `work` (suspended) holds another is
/// a pool deadlock once every turn of a busy worker does it. For the same reason `work` is
/// dropped before any clean-up touches the database.
pub(super) async fn supervise(
    claim: Claim<'_>,
    guard: &LockGuard,
    span: &tracing::Span,
    work: impl Future<Output = Ran>,
) -> bool {
    let Claim { rt, turn, .. } = claim;
    let cancel = CancellationToken::new();
    let _registered = Registered::new(rt, turn.turn_id, &cancel);
    let mut work = Box::pin(work);
    let beats = heartbeats(claim, guard, span, &cancel);
    tokio::pin!(beats);
    let ended = tokio::select! {
        ran = &mut work => return matches!(ran, Ran::Done),
        () = cancel.cancelled() => Ended::Cancelled,
        () = &mut beats => Ended::LeaseLost,
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

/// Extends the lease and the session lock every `worker.heartbeat_millis`, and cancels the
/// turn when someone asked to; returns when the lease is lost.
async fn heartbeats(claim: Claim<'_>, guard: &LockGuard, span: &tracing::Span, cancel: &CancellationToken) {
    let Claim { rt, tenant, owner, turn } = claim;
    let lease = Duration::from_secs(rt.ctx.config.worker.lease_seconds);
    let locks = rt.ctx.cache.session_locks();
    // First beat one period from now (an immediate first tick would wait for the timer wheel).
    let period = Duration::from_millis(rt.ctx.config.worker.heartbeat_millis);
    let mut heartbeat = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    loop {
        heartbeat.tick().await;
        // Boxed: this future waits beside every turn, its I/O states are brief.
        match Box::pin(rt.ctx.store.turns().extend_lease(tenant, turn.turn_id, owner, lease)).await {
            Ok(LeaseState::Held | LeaseState::Ended) => {}
            Ok(LeaseState::CancelRequested) => cancel.cancel(),
            Ok(LeaseState::Lost) => {
                tracing::warn!(parent: span, "turn lease lost; stopping");
                return;
            }
            Err(e) => tracing::warn!(parent: span, error = %e, "cannot extend the turn lease"),
        }
        if let Ok(false) = Box::pin(locks.extend(guard, lease)).await {
            tracing::warn!(parent: span, "session lock lost; fenced writes will tell");
        }
    }
}

/// Lists a turn in the running registry (so a cancellation reaches it) while its run lasts,
/// however it ends.
struct Registered<'a> {
    rt: &'a Runtime,
    turn: TurnId,
}

impl<'a> Registered<'a> {
    fn new(rt: &'a Runtime, turn: TurnId, cancel: &CancellationToken) -> Self {
        if let Ok(mut running) = rt.running.lock() {
            running.insert(turn, cancel.clone());
        }
        Self { rt, turn }
    }
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        if let Ok(mut running) = self.rt.running.lock() {
            running.remove(&self.turn);
        }
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
