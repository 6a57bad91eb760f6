//! Turn cancellations (a client went away, `/stop`, a new message in interrupt mode),
//! broadcast on a Redis channel to every worker; the worker running the turn stops it. A lost
//! broadcast is covered by the cancel flag in Postgres, which the worker's heartbeat reads.

use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use hermes_core::TurnId;

use crate::{Cache, Engine, Result};

/// Publishes and receives cancellations.
#[derive(Clone)]
pub struct CancelBus {
    cache: Cache,
}

impl CancelBus {
    pub(crate) fn new(cache: Cache) -> Self {
        Self { cache }
    }

    fn channel(&self) -> String {
        self.cache.key(&["cancel"])
    }

    /// Tells every worker to stop `turn`.
    pub async fn publish(&self, turn: TurnId) -> Result<()> {
        match self.cache.engine() {
            Engine::Redis(redis) => {
                let _: i64 = redis::cmd("PUBLISH")
                    .arg(self.channel())
                    .arg(turn.to_string())
                    .query_async(&mut redis.conn())
                    .await?;
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => {
                store.publish(&self.channel(), &turn.to_string());
            }
        }
        Ok(())
    }

    /// Streams cancelled turn ids until `shutdown`, resubscribing after connection losses.
    pub fn subscribe(&self, shutdown: CancellationToken) -> mpsc::UnboundedReceiver<TurnId> {
        let (tx, rx) = mpsc::unbounded_channel();
        match self.cache.engine() {
            Engine::Redis(redis) => {
                hermes_telemetry::tasks::spawn("cancel_bus_listen", self.clone().listen(redis.clone(), tx, shutdown));
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => {
                hermes_telemetry::tasks::spawn(
                    "cancel_bus_forward",
                    forward(store.subscribe(&self.channel()), tx, shutdown),
                );
            }
        }
        rx
    }

    /// Hands the channel's turn ids to `tx` until `shutdown` (or nobody reads any more),
    /// subscribing again with a growing pause after each connection loss.
    async fn listen(self, redis: crate::Redis, tx: mpsc::UnboundedSender<TurnId>, shutdown: CancellationToken) {
        let mut backoff = Duration::from_millis(200);
        while !shutdown.is_cancelled() {
            match redis.client().get_async_pubsub().await {
                Ok(mut pubsub) => {
                    if let Err(e) = pubsub.subscribe(self.channel()).await {
                        tracing::warn!(error = %e, "cannot subscribe to turn cancellations");
                    } else {
                        backoff = Duration::from_millis(200);
                        let mut messages = pubsub.into_on_message();
                        loop {
                            tokio::select! {
                                () = shutdown.cancelled() => return,
                                msg = messages.next() => match msg {
                                    Some(msg) => {
                                        let id = msg.get_payload::<String>().ok().and_then(|p| p.parse::<TurnId>().ok());
                                        if let Some(id) = id && tx.send(id).is_err() {
                                            return;
                                        }
                                    }
                                    None => break,
                                },
                            }
                        }
                    }
                }
                Err(e) => tracing::warn!(error = %e, "cancellation channel unavailable; retrying"),
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(Duration::from_secs(5));
        }
    }
}

/// The in-memory subscription's twin of [`CancelBus::listen`]: the same parsing, the same end.
#[cfg(feature = "test-support")]
async fn forward(
    mut messages: mpsc::UnboundedReceiver<String>,
    tx: mpsc::UnboundedSender<TurnId>,
    shutdown: CancellationToken,
) {
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            msg = messages.recv() => match msg {
                Some(payload) => {
                    if let Ok(id) = payload.parse::<TurnId>() && tx.send(id).is_err() {
                        return;
                    }
                }
                None => return,
            },
        }
    }
}
