//! Telegram: the Bot API client, updates, the webhook and the leased long-poll.

pub mod api;
pub mod poller;
pub mod update;
pub mod webhook;

pub use api::{TelegramApi, TelegramError};

/// Telegram's limit on one message's text.
pub const MAX_MESSAGE_UTF16: usize = 4096;
