//! A chat message as every platform adapter hands it to the gateway.

/// A direct chat with one person, or a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatKind {
    Direct,
    Group,
}

/// One message a person wrote.
#[derive(Debug, Clone)]
pub struct Incoming {
    /// Unique per channel: the platform's update or message id.
    pub dedupe_key: String,
    pub chat_id: String,
    pub kind: ChatKind,
    /// A thread or forum topic: a conversation of its own.
    pub thread: Option<String>,
    pub user_id: String,
    pub user_name: Option<String>,
    pub message_id: Option<i64>,
    /// The text, without the bot's mention.
    pub text: String,
    /// Meant for the bot: a direct message, or a group message that mentions or replies to it.
    pub addressed: bool,
    /// Files that came with the message (fetched when the message becomes a turn).
    pub files: Vec<IncomingFile>,
    /// What the platform needs to answer this very message (a WeCom AI bot's `req_id`).
    pub reply_token: Option<String>,
}

/// A file someone sent the bot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncomingFile {
    /// The platform's handle to download it.
    pub file_id: String,
    pub name: Option<String>,
    pub mime: String,
    /// Its size as the platform reports it (checked before downloading).
    pub size: Option<u64>,
    /// The key the platform encrypted it with (WeCom AI bots).
    pub key: Option<String>,
}

/// A person pressed one of the bot's buttons (an approval, a clarify choice).
#[derive(Debug, Clone)]
pub struct ButtonPress {
    /// Unique per channel: the platform's id of the press.
    pub dedupe_key: String,
    /// What the platform needs to stop the button's spinner.
    pub callback_id: String,
    pub chat_id: String,
    pub kind: ChatKind,
    pub thread: Option<String>,
    pub user_id: String,
    pub user_name: Option<String>,
    /// The bot's message that carries the button (a Telegram message id, a Slack `ts`).
    pub message_ref: Option<String>,
    /// The button's data, as the gateway set it.
    pub data: String,
}

impl ButtonPress {
    /// The press as a message from its author, for access rules and routing.
    pub fn as_incoming(&self) -> Incoming {
        Incoming {
            dedupe_key: self.dedupe_key.clone(),
            chat_id: self.chat_id.clone(),
            kind: self.kind,
            thread: self.thread.clone(),
            user_id: self.user_id.clone(),
            user_name: self.user_name.clone(),
            message_id: None,
            text: String::new(),
            addressed: true,
            files: Vec::new(),
            reply_token: None,
        }
    }
}

impl Incoming {
    /// What a chat admin command this person sent is recorded as in the audit log.
    pub(crate) fn audit(&self, platform: hermes_core::Platform) -> hermes_store::admin::Audit {
        let label = match &self.user_name {
            Some(name) => format!("{name} ({platform})"),
            None => format!("{} ({platform})", self.user_id),
        };
        hermes_store::admin::Audit {
            actor: hermes_store::admin::Actor {
                kind: hermes_store::admin::ActorKind::Chat,
                id: format!("{platform}:{}", self.user_id),
                label,
            },
            request_id: None,
            source_address: None,
        }
    }
}
