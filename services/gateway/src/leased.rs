//! Bots that one pod serves at a time: Telegram long-poll, Slack Socket Mode and the WeCom
//! AI-bot socket. A pod works a bot only while it holds the bot's lease in Redis (renewed
//! every third of `gateway.lease_seconds`); when the pod dies, another takes the bot over once
//! the lease lapses. Each pod looks for unserved bots every `gateway.rebalance_seconds`.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use hermes_core::{ChannelMode, Platform};
use hermes_store::Channel;

use crate::Gateway;

/// Serves every bound bot of `platform` in `mode` that no other pod serves, with `work`, until
/// `shutdown`. `work` gets a token that fires on shutdown or when the lease is lost; it must
/// return soon after.
pub async fn run<W, F>(gw: Arc<Gateway>, shutdown: CancellationToken, platform: Platform, mode: ChannelMode, work: W)
where
    W: Fn(Arc<Gateway>, Channel, CancellationToken) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    let every = Duration::from_secs(gw.config.gateway.rebalance_seconds.max(1));
    let mut running: HashMap<hermes_core::ChannelId, JoinHandle<()>> = HashMap::new();
    loop {
        running.retain(|_, task| !task.is_finished());
        match gw.store.system().gateway_channels(platform, mode).await {
            Ok(channels) => {
                for channel in channels {
                    if running.contains_key(&channel.id) {
                        continue;
                    }
                    let lease_name = format!("{platform}:{}", channel.id);
                    match gw.cache.leases().try_acquire(&lease_name, &gw.owner, gw.lease_ttl()).await {
                        Ok(Some(lease)) => {
                            let id = channel.id;
                            let stop = shutdown.child_token();
                            let job = work(gw.clone(), channel, stop.clone());
                            running.insert(
                                id,
                                hermes_telemetry::tasks::spawn(
                                    "gateway_leased_hold",
                                    hold(gw.clone(), id, lease, stop, job),
                                ),
                            );
                        }
                        Ok(None) => {}
                        Err(e) => tracing::warn!(error = %e, %platform, "cannot take a bot's lease"),
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, %platform, "cannot list the bots to serve"),
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

/// Runs `job` while the lease holds, renewing it; gives the lease back when the job ends.
async fn hold(
    gw: Arc<Gateway>,
    channel: hermes_core::ChannelId,
    lease: hermes_cache::Lease,
    stop: CancellationToken,
    job: impl Future<Output = ()>,
) {
    let leases = gw.cache.leases();
    let lost = CancellationToken::new();
    let renewer = {
        let (leases, lease, lost, stop, ttl) =
            (leases.clone(), lease.clone(), lost.clone(), stop.clone(), gw.lease_ttl());
        hermes_telemetry::tasks::spawn("gateway_leased", async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(ttl / 3) => {}
                }
                if !matches!(leases.renew(&lease, ttl).await, Ok(true)) {
                    lost.cancel();
                    stop.cancel();
                    return;
                }
            }
        })
    };
    tracing::info!(channel.id = %channel, pod = %gw.owner, "serving a bot");
    job.await;
    if lost.is_cancelled() {
        tracing::warn!(channel.id = %channel, "lost the bot's lease; another pod serves it");
    }
    stop.cancel();
    renewer.abort();
    if !lost.is_cancelled()
        && let Err(e) = leases.release(&lease).await
    {
        tracing::debug!(error = %e, "cannot give the lease back; it lapses");
    }
}

/// How a kept connection (a socket to the platform) ended.
pub enum End {
    /// The platform asked us to reconnect, or we are stopping.
    Again,
    /// The channel was deleted, switched to another mode or blocked.
    Gone,
    /// The platform refuses the credentials: the channel is marked and not retried.
    Refused(String),
    Failed(String),
}

/// Keeps a bot's socket up until `stop`: `connect` runs one connection and says how it ended
/// and whether it got as far as open (which restarts the backoff).
pub async fn keep_connected<C, F>(gw: &Gateway, channel: &Channel, stop: &CancellationToken, mut connect: C)
where
    C: FnMut() -> F,
    F: Future<Output = (End, bool)>,
{
    let mut failures = 0u32;
    while !stop.is_cancelled() {
        let (end, opened) = connect().await;
        if opened {
            failures = 0;
        }
        match end {
            End::Again => {}
            End::Gone => return,
            End::Refused(why) => {
                gw.mark_refused(channel, &why).await;
                return;
            }
            End::Failed(why) => {
                failures += 1;
                let wait = reconnect_delay(failures);
                tracing::warn!(channel.id = %channel.id, error = %why, wait_s = wait.as_secs(), "socket lost; reconnecting");
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(wait) => {}
                }
            }
        }
    }
}

/// How long to wait before reconnecting after `failures` failed connections in a row.
pub fn reconnect_delay(failures: u32) -> Duration {
    const STEPS: [u64; 5] = [2, 5, 10, 30, 60];
    let step = usize::try_from(failures.saturating_sub(1)).unwrap_or(usize::MAX).min(STEPS.len() - 1);
    Duration::from_secs(STEPS[step])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconnects_back_off_to_a_minute() {
        let waits: Vec<u64> = (1..=7).map(|n| reconnect_delay(n).as_secs()).collect();
        assert_eq!(waits, [2, 5, 10, 30, 60, 60, 60]);
    }
}
