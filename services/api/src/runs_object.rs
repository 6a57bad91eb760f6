//! A run as the Runs API shows it (`run_<turn id>`): which one an id names, its state in
//! upstream's words, and the `hermes.run` object.

use hermes_core::{FinishReason, InteractionKind, PendingInteraction, TurnId, TurnOutcome};
use hermes_http::{ApiError, ErrorCode};
use hermes_store::{KeyAuth, TurnOverview, TurnStatus};
use hermes_wire::v1::{Interaction, Run, RunError, RunKind, RunStatus, RunUsage};

use crate::documented::ObjectPath;
use crate::errors::of_callers_agent;
use crate::state::AppState;
use crate::visible::CallerObject;

pub(crate) fn run_id(turn: TurnId) -> String {
    format!("run_{}", turn.as_uuid().simple())
}

pub(crate) fn not_found(id: &str) -> ApiError {
    ApiError::not_found(ErrorCode::RunNotFound, format!("Run not found: {id}"))
}

/// A run as a path's `{id}` names it, if this caller may see it: its turn and the turn's state.
pub(crate) type VisibleRun = (TurnId, TurnOverview);

impl CallerObject for VisibleRun {
    type Path = ObjectPath;
    type Missing = ApiError;

    async fn find(state: &AppState, auth: &KeyAuth, id: &str) -> Result<Self, ApiError> {
        let turn = id
            .trim()
            .strip_prefix("run_")
            .and_then(|hex| uuid::Uuid::try_parse(hex).ok())
            .map(TurnId::from_uuid)
            .ok_or_else(|| not_found(id))?;
        let run = state.store.turns().turn_overview(auth.tenant_id, turn).await;
        let run = of_callers_agent(run, auth, |r| r.agent_id, || not_found(id))?;
        Ok((turn, run))
    }
}

/// The run's state from its turn's (`waiting_on`: the kind of interaction it waits on).
pub(crate) fn run_status(
    status: TurnStatus,
    outcome: Option<&TurnOutcome>,
    waiting_on: Option<InteractionKind>,
) -> RunStatus {
    match status {
        TurnStatus::Queued => RunStatus::Queued,
        TurnStatus::Running => RunStatus::Running,
        TurnStatus::Waiting if waiting_on == Some(InteractionKind::Clarify) => RunStatus::WaitingForInput,
        TurnStatus::Waiting => RunStatus::WaitingForApproval,
        TurnStatus::Cancelled => RunStatus::Cancelled,
        TurnStatus::Failed => RunStatus::Failed,
        TurnStatus::Completed if outcome.is_some_and(|o| o.finish_reason == FinishReason::Error) => RunStatus::Failed,
        TurnStatus::Completed => RunStatus::Completed,
    }
}

pub(crate) fn usage(o: &TurnOutcome) -> RunUsage {
    RunUsage {
        input_tokens: o.usage.prompt_tokens,
        output_tokens: o.usage.completion_tokens,
        total_tokens: o.usage.total_tokens,
    }
}

pub(crate) fn run_object(turn: TurnId, run: &TurnOverview, model: &str, pending: Option<&PendingInteraction>) -> Run {
    let status = run_status(run.status, run.outcome.as_ref(), pending.map(|p| p.kind));
    let outcome = run.outcome.as_ref();
    Run {
        object: RunKind::Run,
        run_id: run_id(turn),
        status,
        session_id: outcome.and_then(|o| o.session_id).unwrap_or(run.session_id),
        model: model.to_owned(),
        created_at: run.created_at.timestamp(),
        updated_at: run.updated_at.timestamp(),
        last_event: status.last_event().map(str::to_owned),
        output: outcome.map(|o| o.content.clone()),
        usage: outcome.map(usage),
        error: outcome.and_then(|o| o.error.as_ref().map(|m| RunError { message: m.clone(), code: o.error_code })),
        pending: pending.map(Interaction::from),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_state_follows_its_turns_and_what_it_waits_on() {
        use RunStatus::*;
        assert_eq!(run_status(TurnStatus::Waiting, None, Some(InteractionKind::Clarify)), WaitingForInput);
        assert_eq!(run_status(TurnStatus::Waiting, None, Some(InteractionKind::Approval)), WaitingForApproval);
        let failed = TurnOutcome { finish_reason: FinishReason::Error, ..TurnOutcome::cancelled() };
        assert_eq!(run_status(TurnStatus::Completed, Some(&failed), None), Failed);
    }
}
