//! Slack over the Events API: `POST /slack/{channel}/events` for messages and
//! `POST /slack/{channel}/interactive` for button presses, both signed with the app's signing
//! secret. Direct messages are one conversation per person; in channels the bot answers when
//! mentioned, and each thread is its own conversation. Apps without a public URL use Socket Mode
//! ([`socket`]) with the same handling.

pub mod event;
pub mod http;
pub mod send;
pub mod socket;
