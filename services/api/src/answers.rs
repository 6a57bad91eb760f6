//! The user's answer to a turn that waits for them: a dangerous-command approval's choice or
//! a clarifying question's text, checked and stored, so the turn can resume.

use serde::Deserialize;

use hermes_core::{ApprovalChoice, InteractionAnswer, InteractionKind, TurnId};
use hermes_http::{ApiError, ErrorCode};
use hermes_queue::SessionWork;
use hermes_store::{Answered, KeyAuth, StoreError};

use crate::errors::{Failure, Resource, resource};
use crate::state::AppState;
use crate::submit::signal_work;

/// Longest free-text answer to a question.
const MAX_ANSWER_CHARS: usize = 4_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AnswerRequest {
    /// Approval: once, session, always or deny (approve/allow/yes mean once, no/reject deny).
    pub choice: Option<String>,
    /// Question: the user's answer.
    pub answer: Option<String>,
    #[serde(default)]
    pub stream: bool,
}

/// The stored answer for an interaction of `kind`, or why the request is wrong.
pub(crate) fn answer_for(kind: InteractionKind, request: &AnswerRequest) -> Result<InteractionAnswer, ApiError> {
    let invalid = |param: &'static str, msg: &'static str| {
        ApiError::invalid_request(ErrorCode::InvalidValue, msg).with_param(param)
    };
    match kind {
        InteractionKind::Approval => {
            let choice = request.choice.as_deref().map(str::trim).map(str::to_ascii_lowercase);
            // Upstream's names, and the words people use for them.
            let choice = match choice.as_deref() {
                Some("approve" | "approved" | "allow" | "yes") => ApprovalChoice::Once,
                Some("denied" | "no" | "reject") => ApprovalChoice::Deny,
                Some(name) => {
                    name.parse().map_err(|_| invalid("choice", "choice must be once, session, always or deny"))?
                }
                None => return Err(invalid("choice", "choice must be once, session, always or deny")),
            };
            Ok(InteractionAnswer::Approval { choice })
        }
        InteractionKind::Clarify => {
            let text = request.answer.as_deref().or(request.choice.as_deref()).map(str::trim).unwrap_or_default();
            if text.is_empty() {
                return Err(invalid("answer", "answer must be a non-empty string"));
            }
            if text.chars().count() > MAX_ANSWER_CHARS {
                return Err(invalid("answer", "answer is longer than 4000 characters"));
            }
            Ok(InteractionAnswer::text(text))
        }
    }
}

/// Stores the caller's answer to the pending interaction `id` (tagged with this pod's event
/// hub, so the resumed turn's events come here).
pub(crate) async fn store_answer(
    state: &AppState,
    auth: &KeyAuth,
    id: hermes_core::InteractionId,
    request: &AnswerRequest,
) -> Result<Answered, Failure<resource::Interaction>> {
    let (pending, agent) = state.store.turns().pending_interaction(auth.tenant_id, id).await?;
    // A key limited to another agent sees nothing of this one.
    if auth.agent_id.is_some_and(|only| only != agent) {
        return Err(resource::Interaction::not_found().into());
    }
    let answer = answer_for(pending.kind, request)?;
    let hub = state.events.id().to_owned();
    Ok(state.store.turns().answer_interaction(auth.tenant_id, id, &answer, Some(&hub)).await?)
}

/// Stores the caller's choice for the approval the run `turn` waits on, and resumes the run;
/// the stored answer. `not_pending` answers when it waits on none (or it was just answered).
pub(crate) async fn answer_run_approval(
    state: &AppState,
    auth: &KeyAuth,
    turn: TurnId,
    choice: Option<String>,
    not_pending: impl Fn() -> ApiError,
) -> Result<InteractionAnswer, ApiError> {
    let answer = answer_for(InteractionKind::Approval, &AnswerRequest { choice, answer: None, stream: false })
        .map_err(|_| {
            ApiError::invalid_request(
                ErrorCode::InvalidApprovalChoice,
                "Invalid approval choice; expected one of: once, session, always, deny",
            )
            .with_param("choice")
        })?;
    let pending =
        state.store.turns().turn_pending_interaction(auth.tenant_id, turn).await.map_err(ApiError::internal)?;
    let Some(pending) = pending.filter(|p| p.kind == InteractionKind::Approval) else { return Err(not_pending()) };
    let hub = state.events.id().to_owned();
    let answered =
        state.store.turns().answer_interaction(auth.tenant_id, pending.id, &answer, Some(&hub)).await.map_err(|e| {
            match e {
                // Answered, expired or stopped meanwhile: nothing waits any more.
                StoreError::NotFound | StoreError::Conflict(_) => not_pending(),
                other => ApiError::internal(other),
            }
        })?;
    signal_work(state, SessionWork { tenant_id: auth.tenant_id, session_id: answered.session_id }).await;
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn req(choice: Option<&str>, answer: Option<&str>) -> AnswerRequest {
        AnswerRequest { choice: choice.map(str::to_owned), answer: answer.map(str::to_owned), stream: false }
    }

    #[test]
    fn approvals_take_a_choice_and_questions_take_text() {
        assert_eq!(
            json!(answer_for(InteractionKind::Approval, &req(Some("Approve"), None)).unwrap()),
            json!({"choice": "once"})
        );
        assert_eq!(
            json!(answer_for(InteractionKind::Approval, &req(Some("always"), None)).unwrap()),
            json!({"choice": "always"})
        );
        assert_eq!(
            json!(answer_for(InteractionKind::Approval, &req(Some("no"), None)).unwrap()),
            json!({"choice": "deny"})
        );
        assert!(answer_for(InteractionKind::Approval, &req(Some("maybe"), None)).is_err());
        assert!(answer_for(InteractionKind::Approval, &req(None, Some("yes please"))).is_err());
        assert_eq!(
            json!(answer_for(InteractionKind::Clarify, &req(None, Some(" blue "))).unwrap()),
            json!({"text": "blue"})
        );
        assert_eq!(
            json!(answer_for(InteractionKind::Clarify, &req(Some("red"), None)).unwrap()),
            json!({"text": "red"})
        );
        assert!(answer_for(InteractionKind::Clarify, &req(None, Some("  "))).is_err());
    }
}
