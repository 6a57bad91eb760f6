//! WeCom (企业微信) self-built apps in callback mode: `GET /wecom/{channel}` answers WeCom's URL
//! verification, `POST /wecom/{channel}` takes encrypted messages in; replies go out through
//! the message API (`hermes-chat`'s `WecomApi`, token cached and refreshed). Each person is one
//! conversation. AI bots come over their long connection instead ([`socket`]).

pub mod bot_event;
pub mod bot_send;
pub mod http;
pub mod send;
pub mod socket;
