//! Durable job queues: "session S of tenant T has work" (`work`), and turns to review in the
//! background (`review`, low priority: its own queue, consumed one at a time per worker).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicCancelOptions, BasicConsumeOptions, BasicNackOptions, BasicPublishOptions, BasicQosOptions,
};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Channel};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use hermes_core::trace::{TRACEPARENT, TraceParent};
use hermes_core::{AgentId, SessionId, TenantId, TurnId};
use tracing::Instrument;

use crate::link::{Link, Links};
use crate::{Broker, Engine, QueueError, Result};

/// The body of a work message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionWork {
    pub tenant_id: TenantId,
    pub session_id: SessionId,
}

/// A finished turn whose lessons a restricted agent should save (memory, skills).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewJob {
    pub tenant_id: TenantId,
    pub agent_id: AgentId,
    pub session_id: SessionId,
    pub turn_id: TurnId,
}

impl Broker {
    /// Publishes and waits for the confirm, at most [`crate::PUBLISH_TIMEOUT`]: under flow
    /// control RabbitMQ blocks publishers, and every caller has the work stored already (the
    /// reaper republishes what was not signalled), so waiting longer only hangs a role.
    async fn publish_json(&self, queue: &str, body: &impl Serialize) -> Result<()> {
        let body = serde_json::to_vec(body)?;
        // The messaging producer span; its context rides in the message's headers.
        let span = tracing::info_span!(
            "publish",
            otel.name = %format_args!("send {queue}"),
            otel.kind = "producer",
            messaging.system = "rabbitmq",
            messaging.operation.type = "send",
            messaging.destination.name = %queue,
        );
        let headers = headers_now(hermes_telemetry::context::of(&span).as_ref());
        tokio::time::timeout(crate::PUBLISH_TIMEOUT, self.publish_bytes(queue, &body, headers))
            .instrument(span)
            .await
            .map_err(|_| QueueError::TimedOut)?
    }

    async fn publish_bytes(&self, queue: &str, body: &[u8], headers: FieldTable) -> Result<()> {
        let properties = BasicProperties::default()
            .with_delivery_mode(2)
            .with_content_type("application/json".into())
            .with_headers(headers);
        match self.engine() {
            Engine::Amqp(links) => publish_confirmed(self, links, queue, body, properties).await,
            #[cfg(feature = "test-support")]
            Engine::Memory(connection) => connection.publish_job(queue, body, properties),
        }
    }

    async fn consume<T>(&self, queue: &str, prefetch: u16, consumer_tag: &str) -> Result<JobConsumer<T>> {
        let source = match self.engine() {
            Engine::Amqp(links) => {
                let link = crate::link::current(links);
                let (channel, consumer) = subscribe(&link, queue, prefetch, consumer_tag).await?;
                Source::Amqp(AmqpJobs {
                    broker: self.clone(),
                    links: links.clone(),
                    queue: queue.to_owned(),
                    prefetch,
                    tag: consumer_tag.to_owned(),
                    channel,
                    consumer,
                    generation: link.generation,
                    cancelled: AtomicBool::new(false),
                })
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(connection) => Source::Memory(connection.consume(queue, prefetch)?),
        };
        Ok(JobConsumer { source, kind: std::marker::PhantomData })
    }

    /// Publishes a work message and waits for RabbitMQ to confirm it is stored.
    pub async fn publish_work(&self, work: &SessionWork) -> Result<()> {
        self.publish_json(&self.names().work_queue, work).await
    }

    /// Starts consuming work with at most `prefetch` unacknowledged messages.
    pub async fn consume_work(&self, prefetch: u16, consumer_tag: &str) -> Result<WorkConsumer> {
        self.consume(&self.names().work_queue, prefetch, consumer_tag).await
    }

    /// Queues a turn for background review.
    pub async fn publish_review(&self, job: &ReviewJob) -> Result<()> {
        self.publish_json(&self.names().review_queue, job).await
    }

    /// Starts consuming review jobs, `prefetch` at a time.
    pub async fn consume_reviews(&self, prefetch: u16, consumer_tag: &str) -> Result<JobConsumer<ReviewJob>> {
        self.consume(&self.names().review_queue, prefetch, consumer_tag).await
    }
}

/// Publishes on the current connection's confirmed channel and waits for the confirm. When
/// the connection is down, or drops before the confirm, the message goes on the next one
/// (another node of a cluster, or the same broker back); a refused one is tried again on a new
/// channel; both within the caller's [`PUBLISH_TIMEOUT`](crate::PUBLISH_TIMEOUT). A message
/// the broker took before a drop may so be published twice: work messages only say "this
/// session has work", and a second one finds nothing more to claim.
async fn publish_confirmed(
    broker: &Broker,
    links: &Links,
    queue: &str,
    body: &[u8],
    properties: BasicProperties,
) -> Result<()> {
    let mut links = links.clone();
    let mut link = crate::link::current(&links);
    let mut pause = Duration::from_millis(50);
    loop {
        if !link.is_connected() {
            link =
                crate::link::next_link(&mut links, link.generation, broker.closed()).await.ok_or(QueueError::Closed)?;
        }
        let channel = link.work_channel();
        match publish_on(&channel, queue, body, properties.clone()).await {
            Err(QueueError::Amqp(_)) if !link.is_connected() => continue,
            // A quorum queue refuses while it elects a new leader; and a channel that
            // published to the old one may go on refusing. Try again on a new channel, until
            // the caller's PUBLISH_TIMEOUT.
            Err(QueueError::NotConfirmed) => {
                link.renew_work_channel(&channel).await?;
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(1));
            }
            done => return done,
        }
    }
}

async fn publish_on(channel: &Channel, queue: &str, body: &[u8], properties: BasicProperties) -> Result<()> {
    let confirm =
        channel.basic_publish("".into(), queue.into(), BasicPublishOptions::default(), body, properties).await?.await?;
    if confirm.is_nack() {
        return Err(QueueError::NotConfirmed);
    }
    Ok(())
}

/// Opens a channel on `link` and consumes `queue` on it.
async fn subscribe(link: &Link, queue: &str, prefetch: u16, tag: &str) -> Result<(Channel, lapin::Consumer)> {
    let channel = link.conn.create_channel().await?;
    channel.basic_qos(prefetch, BasicQosOptions::default()).await?;
    let consumer =
        channel.basic_consume(queue.into(), tag.into(), BasicConsumeOptions::default(), FieldTable::default()).await?;
    Ok((channel, consumer))
}

/// A stream of job deliveries of type `T`, which subscribes again on the broker's next
/// connection when its own drops (deliveries not acknowledged by then come again).
pub struct JobConsumer<T> {
    source: Source,
    kind: std::marker::PhantomData<fn() -> T>,
}

/// Where a consumer's deliveries come from.
#[cfg_attr(
    feature = "test-support",
    expect(clippy::large_enum_variant, reason = "the small variant exists only in tests; production keeps its layout")
)]
enum Source {
    Amqp(AmqpJobs),
    #[cfg(feature = "test-support")]
    Memory(crate::memory::Jobs),
}

/// A consumer on RabbitMQ, on one connection at a time.
struct AmqpJobs {
    broker: Broker,
    links: Links,
    queue: String,
    prefetch: u16,
    tag: String,
    channel: Channel,
    consumer: lapin::Consumer,
    /// The connection `consumer` is on.
    generation: u64,
    cancelled: AtomicBool,
}

/// One delivery before its body is decoded.
struct Raw {
    data: Vec<u8>,
    properties: BasicProperties,
    redelivered: bool,
    acker: Acker,
}

#[cfg(feature = "test-support")]
impl From<crate::memory::Delivered> for Raw {
    fn from(d: crate::memory::Delivered) -> Self {
        Self { data: d.data, properties: d.properties, redelivered: d.redelivered, acker: Acker::Memory(d.acker) }
    }
}

/// Settles one delivery with whoever delivered it.
enum Acker {
    Amqp(lapin::Acker),
    #[cfg(feature = "test-support")]
    Memory(crate::memory::Acker),
}

impl Acker {
    async fn ack(&self) -> Result<(), lapin::Error> {
        match self {
            Acker::Amqp(acker) => acker.ack(BasicAckOptions::default()).await.map(drop),
            #[cfg(feature = "test-support")]
            Acker::Memory(acker) => {
                acker.ack();
                Ok(())
            }
        }
    }

    async fn requeue(&self) -> Result<(), lapin::Error> {
        match self {
            Acker::Amqp(acker) => acker.nack(BasicNackOptions { requeue: true, ..Default::default() }).await.map(drop),
            #[cfg(feature = "test-support")]
            Acker::Memory(acker) => {
                acker.requeue();
                Ok(())
            }
        }
    }
}

/// The work queue's consumer.
pub type WorkConsumer = JobConsumer<SessionWork>;
/// A work delivery.
pub type WorkDelivery = Delivery<SessionWork>;

/// One delivery; acknowledge it once what it asks for is recorded in Postgres (work) or done
/// (review).
pub struct Delivery<T> {
    pub work: T,
    acker: Acker,
    pub redelivered: bool,
    /// When the message was published (the publisher's clock), for the pickup time.
    pub sent_at: Option<SystemTime>,
    /// The publisher's trace context (`traceparent` header), when it traced.
    pub trace: Option<TraceParent>,
}

/// The header that carries a message's publish time, in microseconds since the epoch.
const SENT_HEADER: &str = "x-hermes-sent-us";

/// A message's headers: the publish time, and the trace context when there is one.
fn headers_now(trace: Option<&TraceParent>) -> FieldTable {
    let mut headers = FieldTable::default();
    if let Some(trace) = trace {
        headers.insert(TRACEPARENT.into(), AMQPValue::LongString(trace.as_str().into()));
    }
    if let Ok(since) = SystemTime::now().duration_since(UNIX_EPOCH) {
        let micros = i64::try_from(since.as_micros()).unwrap_or(i64::MAX);
        headers.insert(SENT_HEADER.into(), AMQPValue::LongLongInt(micros));
    }
    headers
}

/// The `traceparent` header of a received message (a malformed one is none).
pub(crate) fn trace_of(properties: &BasicProperties) -> Option<TraceParent> {
    let headers = properties.headers().as_ref()?;
    match headers.inner().get(TRACEPARENT)? {
        AMQPValue::LongString(s) => TraceParent::parse(&s.to_string()),
        _ => None,
    }
}

fn sent_at(properties: &BasicProperties) -> Option<SystemTime> {
    let headers = properties.headers().as_ref()?;
    let AMQPValue::LongLongInt(micros) = headers.inner().get(SENT_HEADER)? else { return None };
    UNIX_EPOCH.checked_add(Duration::from_micros(u64::try_from(*micros).ok()?))
}

impl<T> Delivery<T> {
    /// Acknowledges the delivery. Errors are logged, not returned: an unacknowledged
    /// delivery is redelivered, which the worker handles anyway.
    pub async fn ack(&self) {
        if let Err(e) = self.acker.ack().await {
            tracing::warn!(error = %e, "cannot ack a delivery");
        }
    }

    /// Returns the delivery to the queue for another try.
    pub async fn requeue(&self) {
        if let Err(e) = self.acker.requeue().await {
            tracing::warn!(error = %e, "cannot requeue a delivery");
        }
    }
}

impl<T: DeserializeOwned> JobConsumer<T> {
    /// The next delivery; `None` once the consumer was cancelled or the broker closed. When
    /// its channel or connection fails it subscribes again (on the next connection, when that
    /// dropped), so a broker restart costs a pause, not the consumer. Malformed messages are
    /// acknowledged and skipped.
    pub async fn next(&mut self) -> Option<Delivery<T>> {
        loop {
            let raw = match &mut self.source {
                Source::Amqp(amqp) => amqp.next().await?,
                #[cfg(feature = "test-support")]
                Source::Memory(memory) => Raw::from(memory.next().await?),
            };
            match serde_json::from_slice::<T>(&raw.data) {
                Ok(work) => {
                    return Some(Delivery {
                        work,
                        redelivered: raw.redelivered,
                        sent_at: sent_at(&raw.properties),
                        trace: trace_of(&raw.properties),
                        acker: raw.acker,
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "dropping a malformed message");
                    let _ = raw.acker.ack().await;
                }
            }
        }
    }
}

impl<T> JobConsumer<T> {
    /// Stops receiving new deliveries; unacknowledged ones go back to the queue.
    pub async fn cancel(&self) {
        match &self.source {
            Source::Amqp(amqp) => amqp.cancel().await,
            #[cfg(feature = "test-support")]
            Source::Memory(memory) => memory.cancel(),
        }
    }
}

impl AmqpJobs {
    /// The next delivery, subscribing again after a failure; `None` once cancelled or closed.
    async fn next(&mut self) -> Option<Raw> {
        loop {
            match self.consumer.next().await {
                Some(Ok(d)) => {
                    let acker = Acker::Amqp(d.acker);
                    return Some(Raw { data: d.data, properties: d.properties, redelivered: d.redelivered, acker });
                }
                other => {
                    if let Some(Err(e)) = other {
                        tracing::warn!(error = %e, queue = %self.queue, "consumer error");
                    }
                    if self.cancelled.load(Ordering::Relaxed) || self.broker.closed().is_cancelled() {
                        return None;
                    }
                    self.resubscribe().await?;
                }
            }
        }
    }

    async fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
        if let Err(e) = self.channel.basic_cancel(self.tag.as_str().into(), BasicCancelOptions::default()).await {
            tracing::warn!(error = %e, "cannot cancel a consumer");
        }
    }

    /// Subscribes again: on the same connection when only the channel failed, else on the
    /// broker's next connection; `None` once the broker is closed.
    async fn resubscribe(&mut self) -> Option<()> {
        loop {
            let link = crate::link::after_failure(&self.broker, &mut self.links, self.generation).await?;
            match subscribe(&link, &self.queue, self.prefetch, &self.tag).await {
                Ok((channel, consumer)) => {
                    (self.channel, self.consumer, self.generation) = (channel, consumer, link.generation);
                    tracing::info!(queue = %self.queue, generation = link.generation, "consuming again after a reconnect");
                    return Some(());
                }
                Err(e) => {
                    // That connection dropped too: wait for the one after it.
                    tracing::warn!(error = %e, queue = %self.queue, "cannot consume on the new connection yet");
                    self.generation = link.generation;
                }
            }
        }
    }
}
