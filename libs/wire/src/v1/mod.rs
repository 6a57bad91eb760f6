//! `/v1` (and `/api`) bodies: the turn path (chat completions, responses, runs), models, files,
//! discovery, deletions and other small answers.

mod channels;
mod chat;
mod cron;
mod discovery;
mod hooks;
mod interaction;
mod jobs;
mod responses;
mod runs;
mod sessions;
mod usage;

pub use channels::{Channel, ChannelBound, ChannelChanges, ChannelRequest, PairingRequest};
pub use chat::{
    AssistantMessage, AssistantRole, ChatChoice, ChatChunk, ChatCompletion, ChatCompletionRequest, ChatExtras,
    ChatUsage, ChunkChoice, ChunkError, ChunkHead, ChunkKind, CompletionKind, CompletionTokensDetails, Delta, Progress,
    PromptTokensDetails, ServerErrorKind, ToolProgressStatus,
};
pub use cron::{
    UpstreamCronJob, UpstreamError, UpstreamJobBody, UpstreamJobs, UpstreamOk, UpstreamRepeat, UpstreamSchedule,
};
pub use discovery::{Capabilities, CapabilityAuth, ForModel, ListedSkill, Toolset};
pub use hooks::{DeliveryStatus, EventDelivery, EventEndpoint, EventHook, HookTrigger, Webhook};
pub use interaction::Interaction;
pub use jobs::{CreateJob, CronJob, CronRun};
pub use responses::{
    ContentPart, IncompleteDetails, IncompleteReason, InputTokensDetails, ItemStatus, OutputItem, OutputTokensDetails,
    Reasoning, ResponseError, ResponseEvent, ResponseExtras, ResponseKind, ResponseObject, ResponseStatus,
    ResponseStreamEvent, ResponseUsage, ResponsesRequest, SummaryPart, TextConfig, TextFormat, Truncation,
};
pub use runs::{
    ApprovalResponseKind, InteractionRequest, Responded, Run, RunApproval, RunApprovalResponse, RunError, RunEvent,
    RunEventKind, RunKind, RunRequest, RunStarted, RunStatus, RunStopped, RunUsage, StartedStatus, StopStatus,
};
pub use sessions::{
    GoalChange, GoalStarted, LineageNode, NumberedMessage, Session, SessionGoal, SessionWithLineage, SetGoal,
};
pub use usage::{UsageLine, UsageReport, UsageTotals};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use hermes_core::AgentId;

/// What deleting an object answers: `{"id", "object": "<kind>.deleted", "deleted": true}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Deleted {
    pub id: String,
    /// `session.deleted`, `webhook.deleted`, ...
    pub object: String,
    pub deleted: bool,
}

impl Deleted {
    pub fn new(id: impl ToString, object: &str) -> Self {
        Self { id: id.to_string(), object: object.to_owned(), deleted: true }
    }
}

/// An agent, as an OpenAI model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Model {
    /// The agent's name.
    pub id: String,
    /// Always `model`.
    pub object: String,
    pub created: i64,
    pub owned_by: String,
    pub hermes: ModelExtras,
}

/// Hermes extras of a model: the agent behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ModelExtras {
    #[schema(value_type = String, format = "uuid")]
    pub agent_id: AgentId,
    /// The LLM the agent uses.
    pub model: String,
}

/// A file an agent made in a turn (a generated picture, speech), as OpenAI's file object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FileObject {
    /// `file-`, the turn's id (32 hex digits), `-` and the file's name.
    pub id: String,
    /// Always `file`.
    pub object: String,
    pub bytes: usize,
    pub created_at: i64,
    pub filename: String,
    /// Always `assistants_output`.
    pub purpose: String,
    /// Its media type (`image/png`, `audio/ogg`, ...).
    pub mime_type: String,
}

/// A queued `ping` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct EventPing {
    pub id: String,
    /// Always `event_hook.ping`.
    pub object: String,
    /// Always `ping`.
    pub event: String,
}

/// A chat user paired with a bot: they may talk to it now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PairingApproved {
    pub approved: bool,
    pub user_id: String,
}
