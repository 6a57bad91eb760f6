//! Chat channels a test stores directly, without a platform emulator behind them.

use hermes_core::{AgentId, TenantId};
use hermes_store::{Channel, ChannelAccess, NewChannel};

use super::TestEnv;

/// A Telegram bot of `agent`, polled, open to anyone, whose API is nowhere
/// (`http://127.0.0.1:9`): a channel for a test about something else, which changes what
/// matters to it.
pub fn unreachable_telegram_bot(agent: AgentId) -> NewChannel {
    NewChannel {
        agent_id: agent,
        platform: hermes_core::Platform::Telegram,
        mode: hermes_core::ChannelMode::Poll,
        api_base: "http://127.0.0.1:9".into(),
        credentials: serde_json::json!({"token": "1:x"}),
        bot_identity: "1".into(),
        dm_policy: "open".parse().unwrap(),
        group_policy: "mention".parse().unwrap(),
        allow_users: vec![],
        allow_chats: vec![],
        admins: vec![],
    }
}

impl TestEnv {
    /// Changes what `channel` allows, as its team does in the console.
    pub async fn change_access(&self, channel: &Channel, access: &ChannelAccess) {
        self.store.chat().update_channel_access(channel.tenant_id, channel.id, access).await.unwrap();
    }

    /// Stores `new` as `tenant`'s channel (its credentials sealed with the master key).
    pub async fn add_channel(&self, tenant: TenantId, new: NewChannel) -> Channel {
        self.store.chat().create_channel(tenant, new, Some(&self.secrets())).await.unwrap()
    }
}
