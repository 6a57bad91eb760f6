//! A turn to write, and where it goes: the types every entry point fills in (the API, the
//! gateway, cron, goals, background children) before `Turns::enqueue_turn` writes them.

use hermes_core::{AgentId, ChatMessage, SessionId, SessionSource};

use crate::routes::Route;

/// Where a new turn goes.
#[derive(Debug, Clone)]
pub enum TurnTarget {
    /// Continue this existing session of `agent`.
    Existing(SessionId),
    /// Start a new session, seeded with earlier messages the client sent.
    /// `user_key` names the end user (their USER memory profile; see migration 0005).
    New { source: SessionSource, user_key: String, history: Vec<ChatMessage> },
    /// The session with this id (derived by the caller from the conversation's start), created
    /// with `history` if it does not exist yet, else continued from its latest compaction
    /// (the history sent with the request is then ignored: the server has it).
    Derived { id: SessionId, source: SessionSource, user_key: String, history: Vec<ChatMessage> },
    /// A chat's current session, or a new one for it (`fresh`: there is none, or the reset
    /// policy ended `replaces`). Built by [`Turns::route_target`](crate::views::Turns::route_target).
    Route { route: Route, fresh: bool, replaces: Option<SessionId> },
}

/// A turn to enqueue.
#[derive(Debug, Clone)]
pub struct NewTurn {
    pub agent_id: AgentId,
    pub target: TurnTarget,
    pub input: ChatMessage,
    pub instructions: Option<String>,
    pub stream: bool,
    /// The event hub of the pod waiting for this turn's events.
    pub notify_hub: Option<String>,
    /// The API key the turn came in with (its usage is reported under it).
    pub api_key: Option<hermes_core::ApiKeyId>,
    /// Set for a stored Responses API request: recorded with the turn.
    pub response: Option<crate::responses::NewResponse>,
    /// Set for a chat message: where the answer goes (`channel_id`, `chat_id`, ...); the turn's
    /// end puts the answer in the outbox (migration 0017).
    pub reply_to: Option<hermes_core::outbox::Destination>,
    /// The trace the turn continues (the request's or chat message's); kept with the turn so
    /// a resumed turn stays in it.
    pub trace: Option<hermes_core::trace::TraceParent>,
    /// What an API request asked of the model, within its agent's limits (over the agent's
    /// settings for this turn only).
    pub model_settings: Option<hermes_core::ModelSettings>,
}

impl NewTurn {
    /// A turn of `agent` on `target` with `input` and nothing else: no per-request
    /// instructions, no stream, nobody waiting on a pod, no API key, no stored response, no chat
    /// to answer, no trace. Callers set what their entry point adds.
    pub fn new(agent_id: AgentId, target: TurnTarget, input: ChatMessage) -> Self {
        Self {
            agent_id,
            target,
            input,
            instructions: None,
            stream: false,
            notify_hub: None,
            api_key: None,
            response: None,
            reply_to: None,
            trace: None,
            model_settings: None,
        }
    }
}
