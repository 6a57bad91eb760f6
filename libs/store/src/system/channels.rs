//! The channels a platform's call names, before any tenant is known (the platform's own
//! secret then authenticates it), and the channels a gateway must poll.

use hermes_core::{ChannelMode, Platform};

use crate::channels::Channel;
use crate::{Result, views::System};

impl System<'_> {
    /// The channel with this id, whoever owns it (the caller then checks the platform's secret).
    pub async fn gateway_channel(self, id: hermes_core::ChannelId) -> Result<Channel> {
        self.unowned_row("SELECT * FROM channels WHERE id = $1", id.as_uuid()).await
    }

    /// Active channels of `platform` that receive in `mode` (the ones a gateway must poll).
    pub async fn gateway_channels(self, platform: Platform, mode: ChannelMode) -> Result<Vec<Channel>> {
        let rows = sqlx::query(
            "SELECT * FROM channels WHERE platform = $1 AND mode = $2 AND status = 'active' ORDER BY created_at",
        )
        .bind(platform.as_str())
        .bind(mode.as_str())
        .fetch_all(self.system_pool())
        .await?;
        rows.iter().map(crate::rows::read::<Channel>).collect()
    }
}
