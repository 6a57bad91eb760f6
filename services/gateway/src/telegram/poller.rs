//! Telegram long-poll, one pod per bot (see [`crate::leased`]). Each update is taken in (stored with its turn, unique
//! per update id) before the offset moves past it, so a takeover re-reads at most the last
//! batch and the duplicates are recognised.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use hermes_core::{ChannelMode, ChannelStatus, Platform};
use hermes_store::Channel;

use crate::Gateway;

/// Polls every long-poll bot this pod holds the lease of, until `shutdown`.
pub async fn run(gw: Arc<Gateway>, shutdown: CancellationToken) {
    crate::leased::run(gw, shutdown, Platform::Telegram, ChannelMode::Poll, |gw, channel, stop| async move {
        poll_loop(&gw, &channel, &stop).await;
    })
    .await;
}

/// What a batch's handling asks of the poll loop.
enum Next {
    Poll,
    /// The channel is gone, blocked or no longer polled.
    Stop,
}

async fn poll_loop(gw: &Gateway, channel: &Channel, shutdown: &CancellationToken) {
    let api = match gw.telegram(channel) {
        Ok(api) => api,
        Err(e) => {
            tracing::error!(channel.id = %channel.id, error = %e, "cannot poll this bot");
            return;
        }
    };
    let wait = Duration::from_secs(gw.config.gateway.poll_timeout_seconds);
    let mut offset = channel.poll_offset;
    let mut failures = 0u32;
    while !shutdown.is_cancelled() {
        let updates = tokio::select! {
            () = shutdown.cancelled() => return,
            got = api.get_updates(offset, wait) => got,
        };
        // The rare paths are boxed: a waiting bot's task then holds only the poll, not the
        // state of taking a message in (45 KB a bot before, at 10,000 bots a pod).
        let updates = match updates {
            Ok(u) => {
                failures = 0;
                u
            }
            Err(e) => {
                failures += 1;
                let delay = e.retry_after().unwrap_or(Duration::from_secs(u64::from(failures.min(5)) * 2));
                tracing::warn!(channel.id = %channel.id, error = %e, "getUpdates failed; retrying");
                if e.is_permanent() {
                    Box::pin(block(gw, channel, &e.to_string())).await;
                    return;
                }
                tokio::time::sleep(delay).await;
                continue;
            }
        };
        if updates.is_empty() {
            // An idle bot costs no query: a deleted or blocked one is stopped by the rebalance.
            continue;
        }
        if let Next::Stop = Box::pin(take_batch(gw, channel, &updates, &mut offset)).await {
            return;
        }
    }
}

async fn block(gw: &Gateway, channel: &Channel, why: &str) {
    let chat = gw.store.chat();
    let _ = chat.set_channel_status(channel.tenant_id, channel.id, ChannelStatus::Blocked, Some(why)).await;
}

/// Takes a batch of updates in, in order, moving `offset` past each one stored.
async fn take_batch(gw: &Gateway, channel: &Channel, updates: &[serde_json::Value], offset: &mut i64) -> Next {
    // Each batch is handled with the channel as it is now: changed policies apply at once,
    // and a deleted or blocked channel stops being polled. The offset is ours while we
    // hold the lease.
    let channel = match gw.store.system().gateway_channel(channel.id).await {
        Ok(c) if c.status == ChannelStatus::Active && c.mode == ChannelMode::Poll => c,
        Ok(_) | Err(hermes_store::StoreError::NotFound) => return Next::Stop,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the channel; reading the batch again");
            tokio::time::sleep(Duration::from_secs(2)).await;
            return Next::Poll;
        }
    };
    for update in updates {
        let Some(id) = update["update_id"].as_i64() else { continue };
        let taken = if let Some(press) = super::update::parse_button(update) {
            gw.press(&channel, press, update).await
        } else if let Some(msg) = super::update::parse(update, channel.bot_username.as_deref()) {
            gw.take_in(&channel, msg, update).await
        } else {
            Ok(())
        };
        if let Err(e) = taken {
            // Not stored: stop before the offset passes it; it is read again.
            tracing::warn!(error = %e, "cannot take an update in; reading it again");
            tokio::time::sleep(Duration::from_secs(1)).await;
            break;
        }
        *offset = (*offset).max(id + 1);
        if let Err(e) = gw.store.chat().advance_poll_offset(channel.tenant_id, channel.id, *offset).await {
            tracing::warn!(error = %e, "cannot record the poll position");
        }
    }
    Next::Poll
}
