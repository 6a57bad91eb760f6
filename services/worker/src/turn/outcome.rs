//! Outcomes the turn's own code decides, outside the agent loop: a plan that cannot be made,
//! a run stopped for inactivity.

use hermes_core::{ErrorCode, FinishReason, TurnOutcome, Usage};

/// An outcome that failed with `code` (an error code the API reports) and `message`.
pub(super) fn failed(code: ErrorCode, message: impl Into<String>) -> TurnOutcome {
    TurnOutcome {
        content: String::new(),
        finish_reason: FinishReason::Error,
        usage: Usage::default(),
        error: Some(message.into()),
        error_code: Some(code),
        session_id: None,
    }
}
