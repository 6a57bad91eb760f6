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
}
