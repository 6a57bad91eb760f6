//! Telegram long-poll, one pod per bot: a pod polls a bot only while it holds the bot's lease
//! in Redis (renewed every third of `gateway.lease_seconds`); when it dies, another pod takes
//! the bot over once the lease lapses. Each update is taken in (stored with its turn, unique
//! per update id) before the offset moves past it, so a takeover re-reads at most the last
//! batch and the duplicates are recognised.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use hermes_store::Channel;

use crate::Gateway;

/// Starts and stops pollers as bots are bound, and takes over bots whose pod went away.
pub async fn run(gw: Arc<Gateway>, shutdown: CancellationToken) {
    let every = Duration::from_secs(gw.config.gateway.rebalance_seconds.max(1));
    let mut running: HashMap<uuid::Uuid, JoinHandle<()>> = HashMap::new();
    loop {
        running.retain(|_, task| !task.is_finished());
        match gw.store.gateway_channels("telegram", "poll").await {
            Ok(channels) => {
                for channel in channels {
                    if running.contains_key(&channel.id) {
                        continue;
                    }
                    let lease_name = format!("telegram:{}", channel.id);
                    let lease = gw.cache.leases().try_acquire(&lease_name, &gw.owner, gw.lease_ttl()).await;
                    match lease {
                        Ok(Some(lease)) => {
                            let (gw, stop) = (gw.clone(), shutdown.clone());
                            let id = channel.id;
                            running.insert(id, tokio::spawn(async move { poll(gw, channel, lease, stop).await }));
                        }
                        Ok(None) => {}
                        Err(e) => tracing::warn!(error = %e, "cannot take a bot's lease"),
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot list the bots to poll"),
        }
        tokio::select! {
            () = shutdown.cancelled() => break,
            () = tokio::time::sleep(every) => {}
        }
    }
    for (_, task) in running {
        let _ = task.await;
    }
}

/// Polls one bot while the lease holds.
async fn poll(gw: Arc<Gateway>, channel: Channel, lease: hermes_cache::Lease, shutdown: CancellationToken) {
    let leases = gw.cache.leases();
    let lost = CancellationToken::new();
    let renewer = {
        let (leases, lease, lost, ttl) = (leases.clone(), lease.clone(), lost.clone(), gw.lease_ttl());
        let stop = shutdown.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(ttl / 3) => {}
                }
                if !matches!(leases.renew(&lease, ttl).await, Ok(true)) {
                    lost.cancel();
                    return;
                }
            }
        })
    };
    tracing::info!(channel.id = %channel.id, pod = %gw.owner, "polling a Telegram bot");
    let work = poll_loop(&gw, &channel, &shutdown);
    tokio::select! {
        () = work => {}
        () = lost.cancelled() => tracing::warn!(channel.id = %channel.id, "lost the bot's lease; another pod polls it"),
    }
    renewer.abort();
    if !lost.is_cancelled()
        && let Err(e) = leases.release(&lease).await
    {
        tracing::debug!(error = %e, "cannot give the lease back; it lapses");
    }
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
                    let _ = gw
                        .store
                        .set_channel_status(channel.tenant_id, channel.id, "blocked", Some(&e.to_string()))
                        .await;
                    return;
                }
                tokio::time::sleep(delay).await;
                continue;
            }
        };
        // Each batch is handled with the channel as it is now: changed policies apply at once,
        // and a deleted or blocked channel stops being polled. The offset is ours while we
        // hold the lease.
        let channel = match gw.store.gateway_channel(channel.id).await {
            Ok(c) if c.status == "active" && c.mode == "poll" => c,
            Ok(_) | Err(hermes_store::StoreError::NotFound) => return,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the channel; reading the batch again");
                tokio::time::sleep(Duration::from_secs(2)).await;
                continue;
            }
        };
        for update in &updates {
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
            offset = offset.max(id + 1);
            if let Err(e) = gw.store.advance_poll_offset(channel.tenant_id, channel.id, offset).await {
                tracing::warn!(error = %e, "cannot record the poll position");
            }
        }
    }
}
