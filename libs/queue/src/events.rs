//! Turn events: workers publish, the API/gateway pod that holds the client receives.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex};

use futures_util::StreamExt;
use lapin::BasicProperties;
use lapin::options::{BasicConsumeOptions, BasicPublishOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use hermes_core::{SessionId, TenantId, TurnEvent, TurnId};

use crate::link::Link;
use crate::{Broker, Engine, QueueError, Result};

/// Routing key of an event: `t.{tenant}.s.{session}.p.{hub}`, where `hub` names the pod
/// waiting for the turn (`-` when nobody asked to be told).
fn routing_key(event: &TurnEvent, hub: Option<&str>) -> String {
    format!("t.{}.s.{}.p.{}", event.tenant_id, event.session_id, hub.unwrap_or("-"))
}

/// Each turn's local subscribers, by subscription number.
type Routes = Arc<StdMutex<HashMap<TurnId, Vec<(u64, mpsc::UnboundedSender<TurnEvent>)>>>>;

impl Broker {
    /// Publishes a turn event (fire and forget: a lost event is recovered from Postgres).
    /// `hub` is the [`EventHub::id`] the turn's request came through, if any.
    pub async fn publish_event(&self, event: &TurnEvent, hub: Option<&str>) -> Result<()> {
        let body = serde_json::to_vec(event)?;
        let exchange = self.names().events_exchange.as_str();
        match self.engine() {
            Engine::Amqp(links) => publish_unconfirmed(links, exchange, &routing_key(event, hub), &body).await,
            #[cfg(feature = "test-support")]
            Engine::Memory(connection) => connection.publish_event(exchange, &routing_key(event, hub), &body),
        }
    }

    /// Creates this pod's event hub: one exclusive queue bound once to the events addressed
    /// to this pod, so waiting on a turn costs no broker round trip. When the connection drops
    /// the hub declares the same queue on the next one, with its bindings (the pod's own and
    /// every watched session's), and goes on: turns started before keep their route here.
    pub async fn event_hub(&self) -> Result<EventHub> {
        let id = uuid::Uuid::now_v7().simple().to_string();
        let queue = format!("{}.{id}", self.names().events_exchange);
        let exchange = self.names().events_exchange.clone();
        let routes: Routes = Arc::default();
        let ended = CancellationToken::new();
        let watches = match self.engine() {
            Engine::Amqp(links) => {
                let link = crate::link::current(links);
                let channel = StdMutex::new(Arc::new(link.conn.create_channel().await?));
                let amqp = Arc::new(AmqpQueue { channel, queue, exchange });
                let watches = Arc::new(Watches::new(Transport::Amqp(amqp.clone())));
                let consumer = watches.subscribe(&amqp, &link, &id).await?;
                let pump = Pump {
                    broker: self.clone(),
                    links: links.clone(),
                    routes: routes.clone(),
                    watches: watches.clone(),
                    amqp,
                    id: id.clone(),
                    generation: link.generation,
                };
                hermes_telemetry::tasks::spawn("queue_events_pump", pump.run(consumer, ended.clone()));
                watches
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(connection) => {
                let (hub_queue, mut bodies) = connection.declare_hub(&exchange, &queue, &own_pattern(&id))?;
                let (routes, ended) = (routes.clone(), ended.clone());
                hermes_telemetry::tasks::spawn("queue_events_consumer", async move {
                    while let Some(body) = bodies.recv().await {
                        route(&routes, &body);
                    }
                    ended.cancel();
                });
                Arc::new(Watches::new(Transport::Memory(hub_queue)))
            }
        };
        Ok(EventHub { inner: Arc::new(HubInner { id, routes, ended, next_subscription: AtomicU64::new(0), watches }) })
    }
}

/// The hub queue's binding to the events addressed to pod `id`.
fn own_pattern(id: &str) -> String {
    format!("t.*.s.*.p.{id}")
}

/// Hands one event body to the requests waiting for its turn.
fn route(routes: &Routes, body: &[u8]) {
    let Ok(event) = serde_json::from_slice::<TurnEvent>(body) else {
        tracing::warn!("dropping malformed turn event");
        return;
    };
    let senders = routes.lock().ok().and_then(|r| r.get(&event.turn_id).cloned());
    for (_, sender) in senders.unwrap_or_default() {
        let _ = sender.send(event.clone());
    }
}

/// Publishes on the current connection's event channel. Awaiting the first future only hands
/// the frame to the connection; there is no confirm on this channel. A blocked connection (flow
/// control) must not hang the turn.
async fn publish_unconfirmed(links: &crate::link::Links, exchange: &str, key: &str, body: &[u8]) -> Result<()> {
    let link = crate::link::current(links);
    let publish = link.event_channel.basic_publish(
        exchange.into(),
        key.into(),
        BasicPublishOptions::default(),
        body,
        event_properties(),
    );
    let _confirm = tokio::time::timeout(crate::PUBLISH_TIMEOUT, publish).await.map_err(|_| QueueError::TimedOut)??;
    Ok(())
}

/// Hands each event the hub's queue receives to the requests waiting for its turn, across
/// reconnections.
struct Pump {
    broker: Broker,
    links: crate::link::Links,
    routes: Routes,
    watches: Arc<Watches>,
    amqp: Arc<AmqpQueue>,
    id: String,
    /// The connection the queue is on.
    generation: u64,
}

impl Pump {
    async fn run(mut self, mut consumer: lapin::Consumer, ended: CancellationToken) {
        loop {
            while let Some(Ok(delivery)) = consumer.next().await {
                route(&self.routes, &delivery.data);
            }
            if self.broker.closed().is_cancelled() {
                break;
            }
            tracing::warn!("the event hub's consumer stopped; subscribing again (waiters read Postgres meanwhile)");
            match self.resubscribe().await {
                Some(next) => consumer = next,
                None => break,
            }
        }
        ended.cancel();
    }

    /// The hub's queue again, on the current connection when only the channel failed, else on
    /// the next one; `None` once the broker is closed.
    async fn resubscribe(&mut self) -> Option<lapin::Consumer> {
        let mut links = self.links.clone();
        loop {
            let link = crate::link::after_failure(&self.broker, &mut links, self.generation).await?;
            self.generation = link.generation;
            match self.watches.subscribe(&self.amqp, &link, &self.id).await {
                Ok(consumer) => {
                    tracing::info!(generation = link.generation, "event hub subscribed again");
                    return Some(consumer);
                }
                Err(e) => tracing::warn!(error = %e, "cannot subscribe the event hub yet"),
            }
        }
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
    /// Cancelled when the hub's consumer stops for good (the broker was closed).
    ended: CancellationToken,
    next_subscription: AtomicU64,
    watches: Arc<Watches>,
}

/// Extra bindings of the hub's queue to sessions whose turns another pod started (a run's
/// event stream opened on any pod), counted so the last watcher removes the binding.
struct Watches {
    transport: Transport,
    counts: StdMutex<HashMap<(TenantId, SessionId), usize>>,
    /// Serialises bind and unbind so an unbind never races a new watcher's bind.
    binding: tokio::sync::Mutex<()>,
}

/// Where the hub's queue is.
enum Transport {
    Amqp(Arc<AmqpQueue>),
    #[cfg(feature = "test-support")]
    Memory(crate::memory::HubQueue),
}

/// The hub's exclusive queue on RabbitMQ.
struct AmqpQueue {
    /// The channel the hub's queue is on now.
    channel: StdMutex<Arc<lapin::Channel>>,
    queue: String,
    exchange: String,
}

impl AmqpQueue {
    /// The channel the hub's queue is on now.
    fn channel(&self) -> Option<Arc<lapin::Channel>> {
        self.channel.lock().ok().map(|c| c.clone())
    }
}

impl Watches {
    fn new(transport: Transport) -> Self {
        Self { transport, counts: StdMutex::default(), binding: tokio::sync::Mutex::new(()) }
    }

    fn pattern(tenant: TenantId, session: SessionId) -> String {
        format!("t.{tenant}.s.{session}.p.*")
    }

    fn count(&self, key: (TenantId, SessionId)) -> usize {
        self.counts.lock().map(|c| c.get(&key).copied().unwrap_or(0)).unwrap_or(0)
    }

    /// Binds the hub's queue to `pattern` (callers hold `binding`).
    async fn bind(&self, pattern: &str) -> Result<()> {
        match &self.transport {
            Transport::Amqp(q) => {
                let channel = q.channel().ok_or(QueueError::Unreachable("the event hub has no channel".into()))?;
                channel
                    .queue_bind(
                        q.queue.as_str().into(),
                        q.exchange.as_str().into(),
                        pattern.into(),
                        QueueBindOptions::default(),
                        FieldTable::default(),
                    )
                    .await?;
            }
            #[cfg(feature = "test-support")]
            Transport::Memory(q) => q.bind(pattern)?,
        }
        Ok(())
    }

    /// Unbinds the hub's queue from `pattern` (callers hold `binding`).
    async fn unbind(&self, pattern: &str) -> Result<()> {
        match &self.transport {
            Transport::Amqp(q) => {
                let Some(channel) = q.channel() else { return Ok(()) };
                channel
                    .queue_unbind(
                        q.queue.as_str().into(),
                        q.exchange.as_str().into(),
                        pattern.into(),
                        FieldTable::default(),
                    )
                    .await?;
            }
            #[cfg(feature = "test-support")]
            Transport::Memory(q) => q.unbind(pattern),
        }
        Ok(())
    }

    /// Declares the hub's queue on `link` (exclusive: it goes with the connection), binds it to
    /// the pod's events (`id`) and to every session watched now, and consumes it. Bindings are
    /// serialised with watchers coming and going, so none is lost in between.
    async fn subscribe(&self, q: &AmqpQueue, link: &Link, id: &str) -> Result<lapin::Consumer> {
        let _serial = self.binding.lock().await;
        let channel = link.conn.create_channel().await?;
        channel
            .queue_declare(
                q.queue.as_str().into(),
                QueueDeclareOptions { exclusive: true, auto_delete: true, ..Default::default() },
                FieldTable::default(),
            )
            .await?;
        let watched: Vec<(TenantId, SessionId)> =
            self.counts.lock().map(|c| c.keys().copied().collect()).unwrap_or_default();
        let patterns = std::iter::once(own_pattern(id))
            .chain(watched.into_iter().map(|(tenant, session)| Self::pattern(tenant, session)));
        for pattern in patterns {
            channel
                .queue_bind(
                    q.queue.as_str().into(),
                    q.exchange.as_str().into(),
                    pattern.as_str().into(),
                    QueueBindOptions::default(),
                    FieldTable::default(),
                )
                .await?;
        }
        let consumer = channel
            .basic_consume(
                q.queue.as_str().into(),
                "".into(),
                BasicConsumeOptions { no_ack: true, exclusive: true, ..Default::default() },
                FieldTable::default(),
            )
            .await?;
        if let Ok(mut current) = q.channel.lock() {
            *current = Arc::new(channel);
        }
        Ok(consumer)
    }
}

/// Events of one turn, in publish order. Unsubscribes when dropped.
pub struct EventSubscription {
    hub: EventHub,
    turn: TurnId,
    number: u64,
    receiver: mpsc::UnboundedReceiver<TurnEvent>,
}

/// While held, this pod receives the events of every turn of one session, whichever pod
/// the turn's request came through. Dropping the last watch of a session unbinds it.
pub struct SessionWatch {
    hub: EventHub,
    key: (TenantId, SessionId),
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
    /// Several subscribers of one turn on one pod each get every event.
    pub fn subscribe(&self, turn: TurnId) -> EventSubscription {
        let (tx, receiver) = mpsc::unbounded_channel();
        let number = self.inner.next_subscription.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut routes) = self.inner.routes.lock() {
            routes.entry(turn).or_default().push((number, tx));
        }
        EventSubscription { hub: self.clone(), turn, number, receiver }
    }

    /// Receives the events of `session`'s turns on this pod until the watch is dropped
    /// (combine with [`subscribe`](Self::subscribe) for the turn of interest).
    pub async fn watch_session(&self, tenant: TenantId, session: SessionId) -> Result<SessionWatch> {
        let w = &self.inner.watches;
        let key = (tenant, session);
        let first = match w.counts.lock() {
            Ok(mut counts) => {
                let n = counts.entry(key).or_insert(0);
                *n += 1;
                *n == 1
            }
            Err(_) => false,
        };
        let watch = SessionWatch { hub: self.clone(), key };
        if first {
            let _serial = w.binding.lock().await;
            w.bind(&Watches::pattern(tenant, session)).await?;
        }
        Ok(watch)
    }
}

impl Drop for SessionWatch {
    fn drop(&mut self) {
        let last = match self.hub.inner.watches.counts.lock() {
            Ok(mut counts) => {
                let n = counts.entry(self.key).or_insert(1);
                *n = n.saturating_sub(1);
                if *n == 0 {
                    counts.remove(&self.key);
                    true
                } else {
                    false
                }
            }
            Err(_) => false,
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        if !last {
            return;
        }
        let (hub, key) = (self.hub.clone(), self.key);
        runtime.spawn(async move {
            let w = &hub.inner.watches;
            let _serial = w.binding.lock().await;
            // A watcher that came back meanwhile keeps the binding.
            if w.count(key) > 0 {
                return;
            }
            if let Err(e) = w.unbind(&Watches::pattern(key.0, key.1)).await {
                tracing::warn!(error = %e, "cannot unbind a session watch");
            }
        });
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
        if let Ok(mut routes) = self.hub.inner.routes.lock()
            && let Some(subscribers) = routes.get_mut(&self.turn)
        {
            subscribers.retain(|(n, _)| *n != self.number);
            if subscribers.is_empty() {
                routes.remove(&self.turn);
            }
        }
    }
}

/// An event's properties: JSON, and the emitting turn's trace context when it is traced.
fn event_properties() -> BasicProperties {
    let properties = BasicProperties::default().with_content_type("application/json".into());
    match hermes_telemetry::context::current() {
        Some(trace) => {
            let mut headers = lapin::types::FieldTable::default();
            headers.insert(
                hermes_core::trace::TRACEPARENT.into(),
                lapin::types::AMQPValue::LongString(trace.as_str().into()),
            );
            properties.with_headers(headers)
        }
        None => properties,
    }
}
