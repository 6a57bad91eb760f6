//! Bots that one pod serves at a time: Telegram long-poll, Slack Socket Mode and the WeCom
//! AI-bot socket. A pod works a bot only while it holds the bot's lease in Redis; when the pod
//! dies, another takes the bot over once the lease lapses.
//!
//! One loop a platform keeps them: every third of `gateway.lease_seconds` it renews all the
//! pod's leases in one round trip, and every `gateway.rebalance_seconds` it lists the bots,
//! stops the ones deleted, blocked or switched to another mode, and takes free ones up to its
//! fair share (the bots over the pods alive, counted in Redis), giving back what is over it,
//! so a pod that joins gets its part and a pod that dies has its part shared out.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use hermes_cache::Lease;
use hermes_core::{ChannelId, ChannelMode, Platform};
use hermes_store::Channel;

use crate::Gateway;

/// Most leases asked for in one round trip.
const ACQUIRE_BATCH: usize = 500;

/// A bot this pod serves.
struct Served {
    lease: Lease,
    /// Fires to stop serving it (shutdown, lease lost, the bot gone or over our share).
    stop: CancellationToken,
    /// Fires when the lease was lost: the task then must not give it back.
    lost: CancellationToken,
    task: JoinHandle<()>,
}

impl Served {
    fn lose(&self) {
        self.lost.cancel();
        self.stop.cancel();
    }
}

/// What one platform's loop works with.
struct Keeper<W> {
    gw: Arc<Gateway>,
    shutdown: CancellationToken,
    platform: Platform,
    mode: ChannelMode,
    work: W,
    served: HashMap<ChannelId, Served>,
    /// When the leases were last renewed (each then ran for a whole lease from at least here).
    renewed_at: Instant,
    rebalance_every: Duration,
}

/// Serves bound bots of `platform` in `mode`, its share of them, with `work`, until
/// `shutdown`. `work` gets a token that fires on shutdown or when the bot is no longer this
/// pod's; it must return soon after.
pub async fn run<W, F>(gw: Arc<Gateway>, shutdown: CancellationToken, platform: Platform, mode: ChannelMode, work: W)
where
    W: Fn(Arc<Gateway>, Channel, CancellationToken) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    let rebalance_every = Duration::from_secs(gw.config.gateway.rebalance_seconds.max(1));
    let renew_every = gw.lease_ttl() / 3;
    let mut ticks = tokio::time::interval(renew_every.min(rebalance_every));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let served = HashMap::new();
    let mut keeper = Keeper { gw, shutdown, platform, mode, work, served, renewed_at: Instant::now(), rebalance_every };
    let mut next_rebalance = Instant::now();
    loop {
        // The tick's own time, not when its work ended: a pass due on this tick is not
        // put off to the next one.
        let now = tokio::select! {
            () = keeper.shutdown.cancelled() => break,
            at = ticks.tick() => at,
        };
        keeper.served.retain(|_, s| !s.task.is_finished());
        let platform = keeper.platform.as_str();
        metrics::gauge!("hermes_gateway_bots_served", "platform" => platform).set(keeper.served.len() as f64);
        keeper.renew().await;
        if now >= next_rebalance {
            // Bounded, so the next renewal comes within two thirds of a lease whatever a slow
            // database or Redis does to the pass (a lease it took and dropped then lapses).
            if tokio::time::timeout(renew_every, keeper.rebalance()).await.is_err() {
                tracing::warn!(%platform, "a rebalancing pass was cut short");
            }
            next_rebalance = now + rebalance_every;
        }
    }
    if let Err(e) = keeper.gw.cache.leases().leave(&keeper.group(), &keeper.gw.owner).await {
        tracing::debug!(error = %e, "cannot leave the pods' census; our entry lapses");
    }
    for (_, served) in keeper.served {
        let _ = served.task.await;
    }
}

impl<W, F> Keeper<W>
where
    W: Fn(Arc<Gateway>, Channel, CancellationToken) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    fn group(&self) -> String {
        format!("{}:{}", self.platform, self.mode)
    }

    /// Renews every held lease at once. A bot whose lease was lost stops; when Redis cannot
    /// be reached, they all stop once a whole lease has passed since the last renewal.
    async fn renew(&mut self) {
        let ttl = self.gw.lease_ttl();
        let (ids, leases): (Vec<ChannelId>, Vec<Lease>) =
            self.served.iter().filter(|(_, s)| !s.lost.is_cancelled()).map(|(id, s)| (*id, s.lease.clone())).unzip();
        if leases.is_empty() {
            self.renewed_at = Instant::now();
            return;
        }
        let started = Instant::now();
        let renewal = tokio::time::timeout(ttl / 3, self.gw.cache.leases().renew_all(&leases, ttl)).await;
        match renewal {
            Ok(Ok(kept)) => {
                self.renewed_at = started;
                for (id, kept) in ids.iter().zip(kept) {
                    if !kept && let Some(served) = self.served.get(id) {
                        tracing::warn!(channel.id = %id, "lost the bot's lease; another pod serves it");
                        served.lose();
                    }
                }
            }
            // Stopped with a third of a lease to spare, so they end before another pod can
            // take them.
            Ok(Err(_)) | Err(_) if self.renewed_at.elapsed() < ttl * 2 / 3 => {
                tracing::warn!(platform = %self.platform, "cannot renew the bots' leases; trying again");
            }
            Ok(Err(_)) | Err(_) => {
                tracing::error!(platform = %self.platform, "the bots' leases are about to lapse unrenewed; stopping them");
                self.served.values().for_each(Served::lose);
            }
        }
    }

    /// Stops the bots no longer to be served, gives back what is over this pod's share and
    /// takes free bots up to it.
    async fn rebalance(&mut self) {
        let (platform, mode) = (self.platform, self.mode);
        let channels = match self.gw.store.system().gateway_channels(platform, mode).await {
            Ok(channels) => channels,
            Err(e) => return tracing::warn!(error = %e, %platform, "cannot list the bots to serve"),
        };
        // Announced for two passes at least, so a pod is never missed between its passes.
        let announced = self.gw.lease_ttl().max(self.rebalance_every * 2);
        let pods = match self.gw.cache.leases().census(&self.group(), &self.gw.owner, announced).await {
            Ok(pods) => pods,
            Err(e) => return tracing::warn!(error = %e, %platform, "cannot count the pods serving bots"),
        };
        let listed: HashSet<ChannelId> = channels.iter().map(|c| c.id).collect();
        for (id, served) in &self.served {
            if !listed.contains(id) {
                served.stop.cancel();
            }
        }
        let share = channels.len().div_ceil(pods);
        let mut active: Vec<&Served> = self.served.values().filter(|s| !s.stop.is_cancelled()).collect();
        if active.len() > share {
            tracing::info!(%platform, pods, share, held = active.len(), "giving back bots over this pod's share");
            active.drain(share..).for_each(|s| s.stop.cancel());
            return;
        }
        let room = share - active.len();
        let free: Vec<Channel> = channels.into_iter().filter(|c| !self.served.contains_key(&c.id)).collect();
        self.take(free, room).await;
    }

    /// Takes the leases of up to `room` of `free`, and serves the bots taken.
    async fn take(&mut self, free: Vec<Channel>, mut room: usize) {
        let leases = self.gw.cache.leases();
        let mut free = free.into_iter().peekable();
        while room > 0 && free.peek().is_some() {
            // Whole batches whatever the room: most of `free` is held by other pods, and a pod
            // one bot short of its share would otherwise ask for them one round trip each.
            let batch: Vec<Channel> = free.by_ref().take(ACQUIRE_BATCH).collect();
            let names: Vec<String> = batch.iter().map(|c| format!("{}:{}", self.platform, c.id)).collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let taken = match leases.try_acquire_all(&names, &self.gw.owner, self.gw.lease_ttl()).await {
                Ok(taken) => taken,
                Err(e) => return tracing::warn!(error = %e, platform = %self.platform, "cannot take bots' leases"),
            };
            for (channel, lease) in batch.into_iter().zip(taken) {
                let Some(lease) = lease else { continue };
                if room > 0 {
                    room -= 1;
                    self.serve(channel, lease);
                } else if let Err(e) = leases.release(&lease).await {
                    // Taken past our share: given back at once, or it lapses.
                    tracing::debug!(error = %e, "cannot give a lease back; it lapses");
                }
            }
        }
    }

    fn serve(&mut self, channel: Channel, lease: Lease) {
        let (id, stop, lost) = (channel.id, self.shutdown.child_token(), CancellationToken::new());
        let job = (self.work)(self.gw.clone(), channel, stop.clone());
        let task = hermes_telemetry::tasks::spawn(
            "gateway_leased_hold",
            hold(self.gw.clone(), id, lease.clone(), stop.clone(), lost.clone(), job),
        );
        self.served.insert(id, Served { lease, stop, lost, task });
    }
}

/// Runs `job`, then gives the lease back unless it was lost.
async fn hold(
    gw: Arc<Gateway>,
    channel: ChannelId,
    lease: Lease,
    stop: CancellationToken,
    lost: CancellationToken,
    job: impl Future<Output = ()>,
) {
    tracing::debug!(channel.id = %channel, pod = %gw.owner, "serving a bot");
    job.await;
    stop.cancel();
    if !lost.is_cancelled()
        && let Err(e) = gw.cache.leases().release(&lease).await
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
