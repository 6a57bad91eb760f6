//! Chat platforms as both the gateway and `hermesctl` use them: the platforms' API clients,
//! splitting long replies to a platform's limit, registering the command menu
//! (`hermes_core::commands`), and telling a paired person they are in.

pub mod binding;
pub mod markdown;
pub mod outbound;
pub mod slack;
pub mod split;
pub mod telegram;
pub mod wecom;
pub mod wecom_bot;

use serde_json::json;

use hermes_store::{Channel, PairingApproval, Store, StoreError};

/// A file to send to a chat.
pub struct OutFile<'a> {
    pub name: &'a str,
    pub mime: &'a str,
    pub data: &'a [u8],
}

/// Tells an approved person they are in (through the outbox, so it is delivered once).
pub async fn announce_pairing(store: &Store, channel: &Channel, approval: &PairingApproval) -> Result<(), StoreError> {
    let PairingApproval::Approved { user_id, chat_id } = approval else { return Ok(()) };
    let destination = json!({ "platform": channel.platform, "channel_id": channel.id, "chat_id": chat_id });
    let payload = json!({ "kind": "text", "text": "You're in! An admin approved you. How can I help?" });
    let key = format!("pairing:{}:{user_id}:{}", channel.id, uuid::Uuid::now_v7());
    store.enqueue_outbox(channel.tenant_id, channel.id, &destination, &key, &payload).await
}
