//! Domain types shared by every crate: typed ids, OpenAI-form chat messages, turn events
//! and usage. No I/O lives here; this crate is the leaf of the workspace.

pub mod access;
pub mod audience;
pub mod census;
pub mod commands;
pub mod cron;
pub mod errors;
pub mod event;
pub mod hosts;
pub mod ids;
pub mod kinds;
pub mod media;
pub mod message;
pub mod model_names;
pub mod model_settings;
pub mod outbox;
pub mod provider_routing;
pub mod quote;
pub mod retention;
pub mod sandbox_choice;
pub mod secret_placement;
pub mod toolsets;
pub mod trace;
pub mod workspace;

pub use access::{AdminOp, MemberRole, Standing};
pub use errors::ErrorCode;
pub use event::{
    EVENT_TEXT_CHARS, FinishReason, InteractionAnswer, ModelCall, PendingInteraction, TurnEvent, TurnEventKind,
    TurnOutcome, Usage, event_text, is_priority_tier,
};
pub use ids::{
    AdminTokenId, AgentId, ApiKeyId, ChannelId, ConsoleSessionId, CredentialId, CronRunId, DelegationId,
    EventDeliveryId, EventHookId, IdParseError, InteractionId, InvitationId, JobId, PersonId, SessionId, SkillId,
    SpendReservationId, TenantId, TurnId, WebhookId,
};
pub use kinds::{
    ApiMode, ApprovalChoice, ApprovalMode, AuxiliaryTask, BudgetPeriod, BusyMode, CallPurpose, ChannelMode,
    ChannelStatus, ChildRole, ChildState, CronRunStatus, DmPolicy, GoalState, GroupPolicy, GroupSessions,
    ImageInputMode, InteractionKind, InteractionStatus, JobState, Platform, RunOutcome, SessionSource, SkillState,
    TurnStatus, UnknownName, VoiceMode,
};
pub use message::{ChatMessage, Content, ContentPart, ReasoningReplay, Role, ToolCall, ToolCallFunction};
pub use model_settings::{ClientLimits, ModelSettings, ReasoningEffort, Stored};
pub use provider_routing::{DataCollection, ProviderRouting, ProviderSort};
pub use sandbox_choice::SandboxChoice;
pub use toolsets::ToolsetName;
pub use workspace::{Workspace, WorkspaceScope};
