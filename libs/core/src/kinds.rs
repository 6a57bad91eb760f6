//! The closed vocabularies that travel between processes and live in Postgres as text: chat
//! platforms and modes, model API modes, busy modes, turn states, interaction kinds, cron job and run states, budget periods,
//! skill and goal states (toolsets live in `toolsets.rs`). Serde and `FromStr`/`Display`
//! use the same names as the database columns (and their CHECK constraints), so a value read
//! from a row, a TOML file or a JSON body is one of these or an error naming the allowed ones.

/// A value that is not one of a vocabulary's names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{value}` (expected one of: {allowed})")]
pub struct UnknownName {
    pub what: &'static str,
    pub value: String,
    pub allowed: String,
}

/// Declares a closed enum whose variants have fixed wire names: serde, `FromStr`, `Display`,
/// `as_str` and `ALL` all agree, so a name is written in exactly one place.
macro_rules! vocabulary {
    ($(#[$meta:meta])* $name:ident ($what:literal) { $($(#[$vmeta:meta])* $variant:ident = $wire:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, ::serde::Serialize, ::serde::Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $wire)] $variant,)+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The name stored in Postgres and sent on the wire.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire,)+
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::kinds::UnknownName;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($wire => Ok($name::$variant),)+
                    _ => Err($crate::kinds::UnknownName {
                        what: $what,
                        value: s.to_owned(),
                        allowed: [$($wire),+].join(", "),
                    }),
                }
            }
        }

        impl TryFrom<String> for $name {
            type Error = $crate::kinds::UnknownName;

            fn try_from(s: String) -> Result<Self, $crate::kinds::UnknownName> {
                s.parse()
            }
        }

        impl From<$name> for String {
            fn from(v: $name) -> String {
                v.as_str().to_owned()
            }
        }
    };
}

pub(crate) use vocabulary;

vocabulary! {
    /// A chat platform a channel binds a bot on.
    Platform ("platform") {
        Telegram = "telegram",
        Slack = "slack",
        Wecom = "wecom",
    }
}

vocabulary! {
    /// How a channel's updates reach the gateway.
    ChannelMode ("channel mode") {
        /// The platform posts to the gateway.
        Webhook = "webhook",
        /// The gateway long-polls (Telegram).
        Poll = "poll",
        /// Slack Socket Mode.
        Socket = "socket",
        /// A WeCom AI bot's long connection.
        Websocket = "websocket",
    }
}

vocabulary! {
    /// Whether a channel delivers.
    ChannelStatus ("channel status") {
        Active = "active",
        /// The platform refused the bot (revoked token, bot blocked); `status_reason` says why.
        Blocked = "blocked",
    }
}

vocabulary! {
    /// Which provider API a model endpoint speaks (an agent's `api_mode`, and each fallback,
    /// auxiliary or vision model's).
    ApiMode ("api mode") {
        /// OpenAI-compatible `/chat/completions` (OpenAI, OpenRouter, vLLM, Ollama, ...).
        ChatCompletions = "chat_completions",
        /// Anthropic's native `/messages`, with prompt caching.
        AnthropicMessages = "anthropic_messages",
        /// OpenAI's Responses API (`/responses`).
        Responses = "responses",
    }
}

vocabulary! {
    /// What a message does while the agent is still working on the chat's last one.
    BusyMode ("busy mode") {
        /// Stop the running turn and start the new one.
        Interrupt = "interrupt",
        /// Wait in order behind it.
        Queue = "queue",
        /// Show it to the running turn before its next model call.
        Steer = "steer",
    }
}

vocabulary! {
    /// Whether a group chat is one conversation or one per person.
    GroupSessions ("group sessions") {
        Chat = "chat",
        User = "user",
    }
}

vocabulary! {
    /// A turn's state, as stored (`turns.status`) and shown.
    TurnStatus ("turn status") {
        Queued = "queued",
        Running = "running",
        /// Parked until the user answers an interaction (or it expires).
        Waiting = "waiting",
        Completed = "completed",
        Failed = "failed",
        Cancelled = "cancelled",
    }
}

impl TurnStatus {
    /// Whether the turn has ended.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

vocabulary! {
    /// What a parked turn waits for.
    InteractionKind ("interaction kind") {
        /// Permission to run a dangerous command.
        Approval = "approval",
        /// An answer to the agent's question.
        Clarify = "clarify",
    }
}

vocabulary! {
    /// What a model call was made for (`model_calls.purpose`), so usage can be told apart.
    CallPurpose ("call purpose") {
        /// The turn's own ReAct loop.
        Main = "main",
        /// A side task of the turn (compression, a title, a goal's judge).
        Auxiliary = "auxiliary",
        /// The background review that curates memory and skills.
        Review = "review",
        /// A delegated child agent.
        Subagent = "subagent",
        /// A picture made by `image_generate` (billed per image).
        Image = "image",
        /// Speech made by `text_to_speech` or a voice reply (billed per character).
        Speech = "speech",
        /// A recording transcribed (billed per audio minute).
        Transcription = "transcription",
        /// An MCP server's request for a completion (`sampling/createMessage`).
        Sampling = "sampling",
    }
}

vocabulary! {
    /// A side task an agent may give its own models (upstream's `auxiliary.<task>`); a task
    /// with none uses the agent's auxiliary model, else its main one.
    AuxiliaryTask ("auxiliary task") {
        /// Summaries that compact a long conversation.
        Compression = "compression",
        /// Describing images for a model that reads only text, and `vision_analyze`.
        Vision = "vision",
        /// The `smart` approval mode's review of a flagged command.
        Approval = "approval",
        /// Whether a `/goal` is met after each of its turns.
        GoalJudge = "goal_judge",
        /// The background review that curates memory and skills.
        Review = "review",
        /// A chat session's title, written after its first exchange.
        Title = "title",
        /// Summaries of pages longer than `web_extract`'s budget; only an agent that gives this
        /// task models of its own gets them (others get the page cut, its full text saved).
        WebExtract = "web_extract",
        /// Delegated children (`delegate_task`): a cheaper model for their work; only an agent
        /// that gives this task models of its own gets them (others' children run on the main model).
        Delegation = "delegation",
    }
}

vocabulary! {
    /// What a delegated child may do, as upstream's `role`: a leaf works alone; an
    /// orchestrator may delegate again, where the depth limit allows.
    ChildRole ("child role") {
        Leaf = "leaf",
        Orchestrator = "orchestrator",
    }
}

vocabulary! {
    /// Where a background child stands (`delegation_tasks.state`).
    ChildState ("child state") {
        Running = "running",
        Completed = "completed",
        Failed = "failed",
        /// Stopped by `/stop` before it ended.
        Cancelled = "cancelled",
    }
}

vocabulary! {
    /// Where a parked turn's question stands (`interactions.status`).
    InteractionStatus ("interaction status") {
        Pending = "pending",
        Answered = "answered",
        /// Nobody answered in time.
        Expired = "expired",
    }
}

vocabulary! {
    /// A person's answer to a dangerous command's approval, as upstream offers them.
    ApprovalChoice ("approval choice") {
        /// This call only.
        Once = "once",
        /// The command's patterns, for the rest of this session.
        Session = "session",
        /// The command's patterns, for the agent from now on.
        Always = "always",
        Deny = "deny",
    }
}

impl ApprovalChoice {
    /// Whether the command may run.
    pub fn allows(self) -> bool {
        self != ApprovalChoice::Deny
    }
}

vocabulary! {
    /// Who may talk to a channel's bot in a direct chat (`channels.dm_policy`).
    DmPolicy ("DM policy") {
        Open = "open",
        /// Only the channel's allowed users (and admins).
        Allowlist = "allowlist",
        /// Allowed users; others get a code an admin approves.
        Pairing = "pairing",
        Disabled = "disabled",
    }
}

vocabulary! {
    /// When the bot answers in a group chat (`channels.group_policy`).
    GroupPolicy ("group policy") {
        /// Only when mentioned or replied to.
        Mention = "mention",
        Open = "open",
        Disabled = "disabled",
    }
}

vocabulary! {
    /// Where a session's turns come from: the API, a scheduled run, a webhook trigger, a
    /// delegated child's own session, or a chat on a platform (stored under the platform's
    /// name). Compactions and forks keep their parent's.
    SessionSource ("session source") {
        Api = "api",
        Cron = "cron",
        Webhook = "webhook",
        /// A delegated sub-agent's session (`Conversations::create_child_session`).
        Subagent = "subagent",
        Telegram = "telegram",
        Slack = "slack",
        Wecom = "wecom",
    }
}

impl SessionSource {
    /// The chat platform of a chat session.
    pub const fn platform(self) -> Option<Platform> {
        match self {
            SessionSource::Telegram => Some(Platform::Telegram),
            SessionSource::Slack => Some(Platform::Slack),
            SessionSource::Wecom => Some(Platform::Wecom),
            SessionSource::Api | SessionSource::Cron | SessionSource::Webhook | SessionSource::Subagent => None,
        }
    }

    /// Runs with nobody there to answer a question (cron runs and webhook turns).
    pub const fn is_unattended(self) -> bool {
        matches!(self, SessionSource::Cron | SessionSource::Webhook)
    }
}

/// What a new agent gets (the column's default).
impl Default for ApprovalMode {
    fn default() -> Self {
        ApprovalMode::Manual
    }
}

impl From<Platform> for SessionSource {
    fn from(p: Platform) -> Self {
        match p {
            Platform::Telegram => SessionSource::Telegram,
            Platform::Slack => SessionSource::Slack,
            Platform::Wecom => SessionSource::Wecom,
        }
    }
}

vocabulary! {
    /// How an agent treats commands that need approval.
    ApprovalMode ("approval mode") {
        /// Ask the user.
        Manual = "manual",
        /// The auxiliary model reviews first, and asks the user when unsure.
        Smart = "smart",
        /// Never ask.
        Off = "off",
    }
}

vocabulary! {
    /// How an agent's model is shown the images people send (upstream's `image_input_mode`).
    ImageInputMode ("image input mode") {
        /// A vision model sees them; a model known to read only text gets descriptions; an
        /// agent with its own vision model set always gets descriptions (as upstream decides).
        Auto = "auto",
        /// As image parts of the message, whatever the model.
        Native = "native",
        /// As the vision model's descriptions.
        Text = "text",
    }
}

vocabulary! {
    /// When a chat's answers are spoken too (upstream's `/voice` modes, migration 0051).
    VoiceMode ("voice mode") {
        /// Text only (upstream's default).
        Off = "off",
        /// A voice note is answered with a voice note as well as text.
        VoiceOnly = "voice_only",
        /// Every answer is spoken.
        All = "all",
    }
}

vocabulary! {
    /// Where a cron job stands (migration 0028).
    JobState ("job state") {
        /// Runs at its `next_run_at`.
        Scheduled = "scheduled",
        /// Stopped by its owner (`paused_reason` says why); webhook fires of it are dropped.
        Paused = "paused",
        /// Made all its runs (or a missed one-shot).
        Completed = "completed",
        /// No next run could be computed; `last_error` says why.
        Error = "error",
    }
}

vocabulary! {
    /// A cron run's ledger status: claimed -> running -> completed | failed, or unknown when
    /// what claimed it vanished before starting it (never re-run blindly).
    CronRunStatus ("cron run status") {
        Claimed = "claimed",
        Running = "running",
        Completed = "completed",
        Failed = "failed",
        Unknown = "unknown",
    }
}

vocabulary! {
    /// How a cron job's latest run ended, as its `last_status` column keeps it.
    RunOutcome ("run outcome") {
        Ok = "ok",
        Error = "error",
    }
}

vocabulary! {
    /// The period a spending cap counts over, in the tenant's time zone (migration 0013).
    BudgetPeriod ("budget period") {
        Day = "day",
        Month = "month",
    }
}

vocabulary! {
    /// Where a skill stands with the curator (migration 0008).
    SkillState ("skill state") {
        Active = "active",
        Stale = "stale",
        Archived = "archived",
    }
}

vocabulary! {
    /// Where a goal stands (migration 0032).
    GoalState ("goal state") {
        Active = "active",
        Paused = "paused",
        Done = "done",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_serde_and_from_str() {
        for mode in ChannelMode::ALL {
            let json = serde_json::to_string(mode).unwrap();
            assert_eq!(json, format!("\"{}\"", mode.as_str()));
            assert_eq!(serde_json::from_str::<ChannelMode>(&json).unwrap(), *mode);
            assert_eq!(mode.as_str().parse::<ChannelMode>().unwrap(), *mode);
        }
        assert_eq!(BusyMode::Steer.to_string(), "steer");
    }

    #[test]
    fn a_variant_named_error_or_ok_keeps_its_wire_name() {
        assert_eq!("error".parse::<JobState>().unwrap(), JobState::Error);
        assert_eq!(serde_json::to_string(&RunOutcome::Ok).unwrap(), "\"ok\"");
        assert_eq!(JobState::try_from("paused".to_owned()).unwrap(), JobState::Paused);
        assert!("weekly".parse::<BudgetPeriod>().is_err());
    }

    #[test]
    fn a_chat_session_is_stored_under_its_platform_name() {
        for p in Platform::ALL {
            let source = SessionSource::from(*p);
            assert_eq!(source.as_str(), p.as_str());
            assert_eq!(source.platform(), Some(*p));
        }
        assert!(SessionSource::Cron.is_unattended() && !SessionSource::Api.is_unattended());
    }

    #[test]
    fn an_unknown_name_lists_the_allowed_ones() {
        let err = "signal".parse::<Platform>().unwrap_err();
        assert_eq!(err.to_string(), "unknown platform `signal` (expected one of: telegram, slack, wecom)");
        assert!(serde_json::from_str::<Platform>("\"signal\"").is_err());
    }
}
