//! Chat platforms as both the gateway and `hermesctl` use them: the platforms' API clients,
//! splitting long replies to a platform's limit, registering the command menu
//! (`hermes_core::commands`), and telling a paired person they are in.

pub mod binding;
pub mod body;
pub mod kept_socket;
pub mod markdown;
pub mod pairing;
pub mod slack;
pub mod split;
pub mod telegram;
pub mod wecom;
pub mod wecom_bot;

/// A file to send to a chat.
pub struct OutFile<'a> {
    pub name: &'a str,
    pub mime: &'a str,
    pub data: &'a [u8],
}
