//! Telling an approved person they are in. The message goes through the gateway's outbox, so
//! it is delivered once; the caller enqueues it (this crate knows no database).

use hermes_core::Platform;
use hermes_core::outbox::{Destination, OutboxPayload};

/// What to put in the outbox: where it goes, the key that delivers it once, what it says.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxEntry {
    pub destination: Destination,
    pub dedupe_key: String,
    pub payload: OutboxPayload,
}

/// The outbox entry that tells `user_id`, in `chat_id` of the bot `channel_id` on `platform`,
/// that an admin approved them.
pub fn announcement(
    platform: Platform,
    channel_id: hermes_core::ChannelId,
    user_id: &str,
    chat_id: &str,
) -> OutboxEntry {
    OutboxEntry {
        destination: Destination::chat(platform, channel_id, chat_id, None),
        dedupe_key: format!("pairing:{channel_id}:{user_id}:{}", uuid::Uuid::now_v7()),
        payload: OutboxPayload::text("You're in! An admin approved you. How can I help?"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_announcement_goes_to_the_approved_persons_chat_once_per_approval() {
        let channel = hermes_core::ChannelId::new();
        let first = announcement(Platform::Telegram, channel, "42", "4242");
        assert_eq!(first.destination, Destination::chat(Platform::Telegram, channel, "4242", None));
        assert!(matches!(first.payload, OutboxPayload::Text { .. }));
        assert!(first.dedupe_key.starts_with(&format!("pairing:{channel}:42:")), "{}", first.dedupe_key);
        // A later approval of the same person is a new message, not a duplicate of this one.
        assert_ne!(announcement(Platform::Telegram, channel, "42", "4242").dedupe_key, first.dedupe_key);
    }
}
