//! Turn events: workers publish, the API/gateway pod that holds the client receives.

use std::collections::HashMap;
use std::sync::{Arc, Mutex as StdMutex};

use futures_util::StreamExt;
use lapin::BasicProperties;
use lapin::options::{BasicConsumeOptions, BasicPublishOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use hermes_core::{TurnEvent, TurnId};

use crate::{Broker, Result};

/// Routing key of an event: `t.{tenant}.s.{session}.p.{hub}`, where `hub` names the pod
/// waiting for the turn (`-` when nobody asked to be told).
fn routing_key(event: &TurnEvent, hub: Option<&str>) -> String {
    format!("t.{}.s.{}.p.{}", event.tenant_id, event.session_id, hub.unwrap_or("-"))
}

type Routes = Arc<StdMutex<HashMap<TurnId, mpsc::UnboundedSender<TurnEvent>>>>;

impl Broker {
    /// Publishes a turn event (fire and forget: a lost event is recovered from Postgres).
    /// `hub` is the [`EventHub::id`] the turn's request came through, if any.
    pub async fn publish_event(&self, event: &TurnEvent, hub: Option<&str>) -> Result<()> {
        let body = serde_json::to_vec(event)?;
        // Awaiting the first future only hands the frame to the connection; there is no
        // confirm on this channel.
        let _confirm = self
            .event_channel()
            .basic_publish(
                self.names().events_exchange.as_str().into(),
                routing_key(event, hub).as_str().into(),
                BasicPublishOptions::default(),
                &body,
                BasicProperties::default().with_content_type("application/json".into()),
            )
            .await?;
        Ok(())
    }

    /// Creates this pod's event hub: one exclusive queue bound once to the events addressed
    /// to this pod, so waiting on a turn costs no broker round trip.
    pub async fn event_hub(&self) -> Result<EventHub> {
        let channel = self.new_channel().await?;
        let id = uuid::Uuid::now_v7().simple().to_string();
        let queue_name = format!("{}.{id}", self.names().events_exchange);
        channel
            .queue_declare(
                queue_name.as_str().into(),
                QueueDeclareOptions { exclusive: true, auto_delete: true, ..Default::default() },
                FieldTable::default(),
            )
            .await?;
        channel
            .queue_bind(
                queue_name.as_str().into(),
                self.names().events_exchange.as_str().into(),
                format!("t.*.s.*.p.{id}").as_str().into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await?;
        let mut consumer = channel
            .basic_consume(
                queue_name.as_str().into(),
                "".into(),
                BasicConsumeOptions { no_ack: true, exclusive: true, ..Default::default() },
                FieldTable::default(),
            )
            .await?;
        let routes: Routes = Arc::default();
        let dispatch_routes = routes.clone();
        let ended = CancellationToken::new();
        let ended_signal = ended.clone();
        tokio::spawn(async move {
            // Keep the channel open as long as the consumer runs.
            let _channel = channel;
            while let Some(delivery) = consumer.next().await {
                let Ok(delivery) = delivery else { continue };
                let Ok(event) = serde_json::from_slice::<TurnEvent>(&delivery.data) else {
                    tracing::warn!("dropping malformed turn event");
                    continue;
                };
                let sender = dispatch_routes.lock().ok().and_then(|r| r.get(&event.turn_id).cloned());
                if let Some(sender) = sender {
                    let _ = sender.send(event);
                }
            }
            tracing::error!("event hub consumer ended (RabbitMQ connection lost)");
            ended_signal.cancel();
        });
        Ok(EventHub { inner: Arc::new(HubInner { id, routes, ended }) })
    }
}

/// Routes the events addressed to this pod to the requests waiting for them.
#[derive(Clone)]
pub struct EventHub {
    inner: Arc<HubInner>,
}

struct HubInner {
    id: String,
    routes: Routes,
    /// Cancelled when the hub's consumer stops for good.
    ended: CancellationToken,
}

/// Events of one turn, in publish order. Unsubscribes when dropped.
pub struct EventSubscription {
    hub: EventHub,
    turn: TurnId,
    receiver: mpsc::UnboundedReceiver<TurnEvent>,
}

impl EventHub {
    /// The name workers put in the routing key to reach this pod; store it with the turn.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// Resolves when the hub stopped receiving events for good (its pod must restart).
    pub async fn ended(&self) {
        self.inner.ended.cancelled().await;
    }

    /// Subscribes to the events of `turn`. Subscribe before publishing the work so no event
    /// can be missed; the turn must carry this hub's [`id`](Self::id).
    pub fn subscribe(&self, turn: TurnId) -> EventSubscription {
        let (tx, receiver) = mpsc::unbounded_channel();
        if let Ok(mut routes) = self.inner.routes.lock() {
            routes.insert(turn, tx);
        }
        EventSubscription { hub: self.clone(), turn, receiver }
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
        if let Ok(mut routes) = self.hub.inner.routes.lock() {
            routes.remove(&self.turn);
        }
    }
}
