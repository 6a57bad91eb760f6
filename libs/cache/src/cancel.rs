//! Turn cancellations (a client went away, `/stop`, a new message in interrupt mode),
//! broadcast on a Redis channel to every worker; the worker running the turn stops it. A lost
//! broadcast is covered by the cancel flag in Postgres, which the worker's heartbeat reads.

use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use hermes_core::TurnId;

use crate::{Cache, Result};

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
        let mut conn = self.cache.conn();
        let _: i64 = redis::cmd("PUBLISH").arg(self.channel()).arg(turn.to_string()).query_async(&mut conn).await?;
        Ok(())
    }

    /// Streams cancelled turn ids until `shutdown`, resubscribing after connection losses.
    pub fn subscribe(&self, shutdown: CancellationToken) -> mpsc::UnboundedReceiver<TurnId> {
        let (tx, rx) = mpsc::unbounded_channel();
        let bus = self.clone();
        tokio::spawn(async move {
            let mut backoff = Duration::from_millis(200);
            while !shutdown.is_cancelled() {
                match bus.cache.client().get_async_pubsub().await {
                    Ok(mut pubsub) => {
                        if let Err(e) = pubsub.subscribe(bus.channel()).await {
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
        });
        rx
    }
}
