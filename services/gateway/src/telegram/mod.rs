//! Telegram: updates, the webhook and the leased long-poll (the Bot API client is in
//! `hermes-chat`).

pub mod poller;
pub mod send;
pub mod update;
pub mod webhook;

pub use hermes_chat::telegram::{MAX_MESSAGE_UTF16, TelegramApi, TelegramError};
