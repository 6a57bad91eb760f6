//! A run as the Runs API shows it (`run_<turn id>`): which one an id names, its state in
//! upstream's words, and the `hermes.run` object.

use serde_json::{Value, json};

use hermes_core::{FinishReason, InteractionKind, PendingInteraction, TurnId, TurnOutcome};
use hermes_http::{ApiError, ErrorCode};
use hermes_store::{KeyAuth, TurnOverview, TurnStatus};

use crate::errors::missing_or_internal;
use crate::state::AppState;

pub(crate) fn run_id(turn: TurnId) -> String {
    format!("run_{}", turn.as_uuid().simple())
}

pub(crate) fn not_found(id: &str) -> ApiError {
    ApiError::not_found(ErrorCode::RunNotFound, format!("Run not found: {id}"))
}

/// The run `id` names, if this caller may see it.
pub(crate) async fn visible_run(
    state: &AppState,
    auth: &KeyAuth,
    id: &str,
) -> Result<(TurnId, TurnOverview), ApiError> {
    let turn = id
        .trim()
        .strip_prefix("run_")
        .and_then(|hex| uuid::Uuid::try_parse(hex).ok())
        .map(TurnId::from_uuid)
        .ok_or_else(|| not_found(id))?;
    let run =
        state.store.turn_overview(auth.tenant_id, turn).await.map_err(|e| missing_or_internal(e, || not_found(id)))?;
    if auth.agent_id.is_some_and(|only| only != run.agent_id) {
        return Err(not_found(id));
    }
    Ok((turn, run))
}

/// Upstream's run states (plus `waiting_for_input` for a clarifying question).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RunStatus {
    Queued,
    Running,
    WaitingForInput,
    WaitingForApproval,
    Cancelled,
    Failed,
    Completed,
}

impl RunStatus {
    /// The run's state from its turn's (`waiting_on`: the kind of interaction it waits on).
    pub fn of(status: TurnStatus, outcome: Option<&TurnOutcome>, waiting_on: Option<InteractionKind>) -> Self {
        match status {
            TurnStatus::Queued => Self::Queued,
            TurnStatus::Running => Self::Running,
            TurnStatus::Waiting if waiting_on == Some(InteractionKind::Clarify) => Self::WaitingForInput,
            TurnStatus::Waiting => Self::WaitingForApproval,
            TurnStatus::Cancelled => Self::Cancelled,
            TurnStatus::Failed => Self::Failed,
            TurnStatus::Completed if outcome.is_some_and(|o| o.finish_reason == FinishReason::Error) => Self::Failed,
            TurnStatus::Completed => Self::Completed,
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::WaitingForInput => "waiting_for_input",
            Self::WaitingForApproval => "waiting_for_approval",
            Self::Cancelled => "cancelled",
            Self::Failed => "failed",
            Self::Completed => "completed",
        }
    }

    /// The last event the run's stream sent in this state.
    fn last_event(self) -> Option<&'static str> {
        match self {
            Self::Queued => None,
            Self::Running => Some("run.started"),
            Self::WaitingForApproval => Some("approval.request"),
            Self::WaitingForInput => Some("clarify.request"),
            Self::Cancelled => Some("run.cancelled"),
            Self::Failed => Some("run.failed"),
            Self::Completed => Some("run.completed"),
        }
    }
}

pub(crate) fn usage_json(o: &TurnOutcome) -> Value {
    json!({ "input_tokens": o.usage.prompt_tokens, "output_tokens": o.usage.completion_tokens,
            "total_tokens": o.usage.total_tokens })
}

pub(crate) fn run_object(turn: TurnId, run: &TurnOverview, model: &str, pending: Option<&PendingInteraction>) -> Value {
    let status = RunStatus::of(run.status, run.outcome.as_ref(), pending.map(|p| p.kind));
    let outcome = run.outcome.as_ref();
    json!({
        "object": "hermes.run",
        "run_id": run_id(turn),
        "status": status,
        "session_id": outcome.and_then(|o| o.session_id).unwrap_or(run.session_id),
        "model": model,
        "created_at": run.created_at.timestamp(),
        "updated_at": run.updated_at.timestamp(),
        "last_event": status.last_event(),
        "output": outcome.map(|o| o.content.clone()),
        "usage": outcome.map(usage_json),
        "error": outcome.and_then(|o| o.error.as_ref().map(|m| json!({ "message": m, "code": o.error_code }))),
        "pending": pending.map(crate::completion::interaction_json),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_states_have_upstreams_names_on_the_wire_and_in_messages() {
        use RunStatus::*;
        for status in [Queued, Running, WaitingForInput, WaitingForApproval, Cancelled, Failed, Completed] {
            assert_eq!(serde_json::to_value(status).unwrap(), json!(status.as_str()));
        }
        assert_eq!(RunStatus::of(TurnStatus::Waiting, None, Some(InteractionKind::Clarify)), WaitingForInput);
        assert_eq!(RunStatus::of(TurnStatus::Waiting, None, Some(InteractionKind::Approval)), WaitingForApproval);
        let failed = TurnOutcome { finish_reason: FinishReason::Error, ..TurnOutcome::cancelled() };
        assert_eq!(RunStatus::of(TurnStatus::Completed, Some(&failed), None), Failed);
        assert_eq!(Failed.last_event(), Some("run.failed"));
        assert_eq!(Queued.last_event(), None);
    }
}
