//! Turn events: workers publish, API/gateway pods subscribe per session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex as StdMutex};

use futures_util::StreamExt;
use lapin::options::{
    BasicConsumeOptions, BasicPublishOptions, QueueBindOptions, QueueDeclareOptions,
};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Channel};
use tokio::sync::{Mutex, mpsc};

use hermes_core::{SessionId, TenantId, TurnEvent, TurnId};

use crate::{Broker, Result};

fn routing_key(tenant: TenantId, session: SessionId) -> String {
    format!("t.{tenant}.s.{session}")
}

impl Broker {
    /// Publishes a turn event (fire and forget: a lost event is recovered from Postgres).
    pub async fn publish_event(&self, event: &TurnEvent) -> Result<()> {
        let body = serde_json::to_vec(event)?;
        // Awaiting the first future only hands the frame to the connection; there is no
        // confirm on this channel.
        let _confirm = self
            .event_channel()
            .basic_publish(
                self.names().events_exchange.as_str().into(),
                routing_key(event.tenant_id, event.session_id)
                    .as_str()
                    .into(),
                BasicPublishOptions::default(),
                &body,
                BasicProperties::default().with_content_type("application/json".into()),
            )
            .await?;
        Ok(())
    }

    /// Creates this pod's event hub: one exclusive queue, bound per session on demand.
    pub async fn event_hub(&self) -> Result<EventHub> {
        let channel = self.new_channel().await?;
        let queue = channel
            .queue_declare(
                "".into(),
                QueueDeclareOptions {
                    exclusive: true,
                    auto_delete: true,
                    ..Default::default()
                },
                FieldTable::default(),
            )
            .await?;
        let queue_name = queue.name().as_str().to_owned();
        let mut consumer = channel
            .basic_consume(
                queue_name.as_str().into(),
                "".into(),
                BasicConsumeOptions {
                    no_ack: true,
                    exclusive: true,
                    ..Default::default()
                },
                FieldTable::default(),
            )
            .await?;
        let routes: Arc<StdMutex<HashMap<TurnId, mpsc::UnboundedSender<TurnEvent>>>> =
            Arc::default();
        let dispatch_routes = routes.clone();
        tokio::spawn(async move {
            while let Some(delivery) = consumer.next().await {
                let Ok(delivery) = delivery else { continue };
                let Ok(event) = serde_json::from_slice::<TurnEvent>(&delivery.data) else {
                    tracing::warn!("dropping malformed turn event");
                    continue;
                };
                let sender = dispatch_routes
                    .lock()
                    .ok()
                    .and_then(|r| r.get(&event.turn_id).cloned());
                if let Some(sender) = sender {
                    let _ = sender.send(event);
                }
            }
            tracing::info!("event hub consumer ended");
        });
        Ok(EventHub {
            inner: Arc::new(HubInner {
                channel,
                queue: queue_name,
                exchange: self.names().events_exchange.clone(),
                bindings: Mutex::new(HashMap::new()),
                routes,
            }),
        })
    }
}

/// Routes events of the sessions this pod waits on to the waiting requests.
#[derive(Clone)]
pub struct EventHub {
    inner: Arc<HubInner>,
}

struct HubInner {
    channel: Channel,
    queue: String,
    exchange: String,
    /// Routing key -> number of subscriptions using it. Held across bind/unbind so the two
    /// never race for one key.
    bindings: Mutex<HashMap<String, usize>>,
    routes: Arc<StdMutex<HashMap<TurnId, mpsc::UnboundedSender<TurnEvent>>>>,
}

/// Events of one turn, in publish order. Unsubscribes when dropped.
pub struct EventSubscription {
    hub: EventHub,
    key: String,
    turn: TurnId,
    receiver: mpsc::UnboundedReceiver<TurnEvent>,
}

impl EventHub {
    /// Subscribes to the events of `turn` in `session`. Subscribe before publishing the work
    /// so no event can be missed.
    pub async fn subscribe(
        &self,
        tenant: TenantId,
        session: SessionId,
        turn: TurnId,
    ) -> Result<EventSubscription> {
        let key = routing_key(tenant, session);
        let (tx, receiver) = mpsc::unbounded_channel();
        if let Ok(mut routes) = self.inner.routes.lock() {
            routes.insert(turn, tx);
        }
        let mut bindings = self.inner.bindings.lock().await;
        let count = bindings.entry(key.clone()).or_insert(0);
        if *count == 0 {
            let bound = self
                .inner
                .channel
                .queue_bind(
                    self.inner.queue.as_str().into(),
                    self.inner.exchange.as_str().into(),
                    key.as_str().into(),
                    QueueBindOptions::default(),
                    FieldTable::default(),
                )
                .await;
            if let Err(e) = bound {
                bindings.remove(&key);
                drop(bindings);
                self.remove_route(turn);
                return Err(e.into());
            }
        }
        *bindings.entry(key.clone()).or_insert(0) += 1;
        Ok(EventSubscription {
            hub: self.clone(),
            key,
            turn,
            receiver,
        })
    }

    fn remove_route(&self, turn: TurnId) {
        if let Ok(mut routes) = self.inner.routes.lock() {
            routes.remove(&turn);
        }
    }

    async fn release(&self, key: String) {
        let mut bindings = self.inner.bindings.lock().await;
        let Some(count) = bindings.get_mut(&key) else {
            return;
        };
        *count -= 1;
        if *count > 0 {
            return;
        }
        bindings.remove(&key);
        let unbound = self
            .inner
            .channel
            .queue_unbind(
                self.inner.queue.as_str().into(),
                self.inner.exchange.as_str().into(),
                key.as_str().into(),
                FieldTable::default(),
            )
            .await;
        if let Err(e) = unbound {
            tracing::warn!(error = %e, routing_key = %key, "cannot unbind event queue");
        }
    }
}

impl EventSubscription {
    /// The next event; `None` only if the hub stopped.
    pub async fn next(&mut self) -> Option<TurnEvent> {
        self.receiver.recv().await
    }
}

impl Drop for EventSubscription {
    fn drop(&mut self) {
        self.hub.remove_route(self.turn);
        let hub = self.hub.clone();
        let key = std::mem::take(&mut self.key);
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move { hub.release(key).await });
        }
    }
}
