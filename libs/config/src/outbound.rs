//! Where Hermes may send requests on someone else's behalf: the operator's private hosts and
//! the chat platforms' API bases. Both are operator settings, never a tenant's: a tenant who
//! chose the host a bot token (or a file download) goes to could point it inside the cluster.

use hermes_core::{ChannelMode, Platform};
use serde::{Deserialize, Serialize};

/// Outbound HTTP (chat platforms, model providers): public addresses only, except these.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct OutboundConfig {
    /// Hosts (`name`, `name:port`, an address) that may be private: an in-cluster model
    /// server, a self-hosted Bot API. The hosts of `platforms.*` are trusted too.
    pub trusted_private_hosts: Vec<String>,
}

/// The API bases new channels bind to (`hermesctl channel bind --api-base` overrides one
/// binding, with operator rights).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct PlatformsConfig {
    pub telegram_api_base: String,
    pub slack_api_base: String,
    pub wecom_api_base: String,
    /// The WeCom AI-bot socket.
    pub wecom_bot_url: String,
}

impl Default for PlatformsConfig {
    fn default() -> Self {
        Self {
            telegram_api_base: "https://api.telegram.org".into(),
            slack_api_base: "https://slack.com/api".into(),
            wecom_api_base: "https://qyapi.weixin.qq.com".into(),
            wecom_bot_url: "wss://openws.work.weixin.qq.com".into(),
        }
    }
}

impl PlatformsConfig {
    /// Where a new channel of `platform` in `mode` talks to its platform.
    pub fn base_for(&self, platform: Platform, mode: Option<ChannelMode>) -> &str {
        match (platform, mode) {
            (Platform::Telegram, _) => &self.telegram_api_base,
            (Platform::Slack, _) => &self.slack_api_base,
            (Platform::Wecom, Some(ChannelMode::Websocket)) => &self.wecom_bot_url,
            (Platform::Wecom, _) => &self.wecom_api_base,
        }
    }

    /// The `host:port` of every base, which the outbound policy trusts.
    pub fn hosts(&self) -> Vec<String> {
        [&self.telegram_api_base, &self.slack_api_base, &self.wecom_api_base, &self.wecom_bot_url]
            .into_iter()
            .filter_map(|base| {
                let (_, rest) = base.split_once("://")?;
                let authority = rest.split('/').next()?;
                Some(authority.rsplit_once('@').map_or(authority, |(_, host)| host).to_ascii_lowercase())
            })
            .collect()
    }
}

impl OutboundConfig {
    /// Every host the outbound policy trusts: the operator's list and the platforms' bases.
    pub fn trusted(&self, platforms: &PlatformsConfig) -> Vec<String> {
        self.trusted_private_hosts.iter().cloned().chain(platforms.hosts()).collect()
    }
}
