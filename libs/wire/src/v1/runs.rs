//! The Runs API as upstream Hermes has it: starting a run, its state (`hermes.run`), its
//! approval and stop answers, and the data-only events of `GET /v1/runs/{id}/events`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use hermes_core::{ApprovalChoice, ErrorCode, InteractionAnswer, SessionId};

use super::{Interaction, ResponsesRequest};

/// A Responses request plus the session to continue.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RunRequest {
    #[serde(flatten)]
    pub base: ResponsesRequest,
    /// Continue this session (else `previous_response_id`, else a new one).
    #[serde(default)]
    pub session_id: Option<String>,
}

/// `hermes.run`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum RunKind {
    #[default]
    #[serde(rename = "hermes.run")]
    Run,
}

/// `hermes.run.approval_response`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum ApprovalResponseKind {
    #[default]
    #[serde(rename = "hermes.run.approval_response")]
    ApprovalResponse,
}

/// Always `started`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum StartedStatus {
    #[default]
    Started,
}

/// What `POST /v1/runs` answers (202).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RunStarted {
    pub object: RunKind,
    /// `run_` and 32 hex digits.
    pub run_id: String,
    pub status: StartedStatus,
    #[schema(value_type = String, format = "uuid")]
    pub session_id: SessionId,
}

/// Upstream's run states (plus `waiting_for_input` for a clarifying question).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Queued,
    Running,
    WaitingForInput,
    WaitingForApproval,
    Cancelled,
    Failed,
    Completed,
}

impl RunStatus {
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
    pub fn last_event(self) -> Option<&'static str> {
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

/// A run's state (`GET /v1/runs/{id}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Run {
    pub object: RunKind,
    pub run_id: String,
    pub status: RunStatus,
    #[schema(value_type = String, format = "uuid")]
    pub session_id: SessionId,
    pub model: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub last_event: Option<String>,
    pub output: Option<String>,
    pub usage: Option<RunUsage>,
    pub error: Option<RunError>,
    /// The approval or question the run waits on.
    pub pending: Option<Interaction>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RunUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RunError {
    pub message: String,
    #[schema(value_type = Option<String>)]
    pub code: Option<ErrorCode>,
}

/// The body of `POST /v1/runs/{id}/approval`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RunApproval {
    /// once, session, always or deny (approve/approved/allow mean once).
    #[serde(default)]
    pub choice: Option<String>,
    /// Upstream resolves every pending approval of the run with these; a Hermes Cloud turn
    /// waits on one at a time, so they change nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<bool>)]
    pub all: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<bool>)]
    pub resolve_all: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RunApprovalResponse {
    pub object: ApprovalResponseKind,
    pub run_id: String,
    #[schema(value_type = Option<String>)]
    pub choice: Option<ApprovalChoice>,
    pub resolved: u32,
}

/// What `POST /v1/runs/{id}/stop` answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RunStopped {
    pub object: RunKind,
    pub run_id: String,
    pub status: StopStatus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopStatus {
    /// The worker stopped the run.
    Cancelled,
    /// The worker has not stopped it within 5 seconds; it will.
    Stopping,
}

/// One line of a run's event stream: `{"event", "run_id", "timestamp", ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEvent {
    #[serde(flatten)]
    pub kind: RunEventKind,
    pub run_id: String,
    /// Seconds since the epoch, with milliseconds.
    pub timestamp: f64,
}

/// What happened, in upstream's event names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event")]
pub enum RunEventKind {
    #[serde(rename = "message.delta")]
    MessageDelta { delta: String },
    #[serde(rename = "reasoning.available")]
    ReasoningAvailable { text: String },
    #[serde(rename = "tool.started")]
    ToolStarted { tool: String, preview: String, call_id: String },
    #[serde(rename = "tool.completed")]
    ToolCompleted {
        tool: String,
        /// Seconds.
        duration: f64,
        error: bool,
        call_id: String,
    },
    #[serde(rename = "approval.request")]
    ApprovalRequest(InteractionRequest),
    #[serde(rename = "clarify.request")]
    ClarifyRequest(InteractionRequest),
    #[serde(rename = "approval.responded")]
    ApprovalResponded(Responded),
    #[serde(rename = "notice")]
    Notice { code: String, message: String },
    #[serde(rename = "run.completed")]
    Completed { output: String, usage: RunUsage },
    #[serde(rename = "run.failed")]
    Failed { error: Option<String>, code: Option<ErrorCode> },
    #[serde(rename = "run.cancelled")]
    Cancelled,
}

/// The approval or question a run waits on: its prompt's fields (`command`, `description`,
/// `choices`; or `question`, `choices`) with the interaction's id and deadline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InteractionRequest {
    pub interaction_id: hermes_core::InteractionId,
    pub expires_at: chrono::DateTime<chrono::Utc>,
    #[serde(flatten)]
    pub prompt: serde_json::Map<String, Value>,
}

/// How the user answered: an approval's choice, or a question's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Responded {
    Choice { choice: ApprovalChoice },
    Answer { answer: InteractionAnswer },
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn run_states_have_upstreams_names() {
        use RunStatus::*;
        for status in [Queued, Running, WaitingForInput, WaitingForApproval, Cancelled, Failed, Completed] {
            assert_eq!(serde_json::to_value(status).unwrap(), json!(status.as_str()));
        }
        assert_eq!(Failed.last_event(), Some("run.failed"));
        assert_eq!(Queued.last_event(), None);
    }

    #[test]
    fn events_are_flat_lines_named_by_event() {
        let line = |kind| serde_json::to_value(RunEvent { kind, run_id: "run_1".into(), timestamp: 1.5 }).unwrap();
        assert_eq!(
            line(RunEventKind::Cancelled),
            json!({"event": "run.cancelled", "run_id": "run_1", "timestamp": 1.5})
        );
        let prompt = json!({"command": "rm -rf /tmp/x", "choices": ["once", "deny"]});
        let request = InteractionRequest {
            interaction_id: uuid::Uuid::nil().into(),
            expires_at: chrono::DateTime::UNIX_EPOCH,
            prompt: prompt.as_object().cloned().unwrap_or_default(),
        };
        let value = line(RunEventKind::ApprovalRequest(request));
        assert_eq!(
            (value["event"].as_str(), value["command"].as_str()),
            (Some("approval.request"), Some("rm -rf /tmp/x"))
        );
        let answered = line(RunEventKind::ApprovalResponded(Responded::Choice { choice: ApprovalChoice::Deny }));
        assert_eq!(answered["choice"], "deny");
    }
}
