//! RabbitMQ: the "session has work" queue, the background-review queue and the turn-event
//! exchange.
//!
//! Work messages carry only `(tenant, session)`: Postgres holds the work itself, so a
//! redelivered or duplicated message is harmless and a lost one is found by the reaper.
//! Events go to a topic exchange keyed `t.{tenant}.s.{session}.p.{hub}`: each API or gateway
//! pod has one exclusive queue bound to its own hub id, which it writes on the turns it
//! accepts, so a pod receives exactly the events of the turns it waits on. (Other listeners,
//! such as a client re-attaching through another pod, can bind `t.{tenant}.s.{session}.*`.)

mod events;
mod work;

use std::sync::Arc;

use lapin::options::{BasicQosOptions, ConfirmSelectOptions, ExchangeDeclareOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{Channel, Connection, ConnectionProperties, ExchangeKind};

use hermes_config::RabbitMqConfig;

pub use events::{EventHub, EventSubscription, SessionWatch};
pub use work::{Delivery, JobConsumer, ReviewJob, SessionWork, WorkConsumer, WorkDelivery};

/// A queue failure.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("rabbitmq error: {0}")]
    Amqp(#[from] lapin::Error),
    #[error("cannot encode message: {0}")]
    Encode(#[from] serde_json::Error),
    #[error("rabbitmq did not confirm the message")]
    NotConfirmed,
    #[error("rabbitmq did not take the message within {} s", PUBLISH_TIMEOUT.as_secs())]
    TimedOut,
    #[error("rabbitmq.url is not an AMQP URL: {0}")]
    BadUrl(String),
    #[error("rabbitmq cannot be reached: {0}")]
    Unreachable(String),
}

/// How long a publish may wait for RabbitMQ (its confirm included).
pub const PUBLISH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

pub type Result<T, E = QueueError> = std::result::Result<T, E>;

/// Exchange and queue names of one installation.
#[derive(Debug, Clone)]
pub(crate) struct Names {
    pub work_queue: String,
    pub review_queue: String,
    pub events_exchange: String,
}

impl Names {
    fn new(prefix: &str) -> Self {
        Self {
            work_queue: format!("{prefix}.work"),
            review_queue: format!("{prefix}.review"),
            events_exchange: format!("{prefix}.events"),
        }
    }
}

/// A connection with the installation's topology declared.
#[derive(Clone)]
pub struct Broker {
    inner: Arc<BrokerInner>,
}

struct BrokerInner {
    conn: Connection,
    names: Names,
    /// Confirmed channel for work messages (they must not be lost silently).
    work_channel: Channel,
    /// Unconfirmed channel for events (a lost event is recovered by polling Postgres).
    event_channel: Channel,
}

impl Broker {
    /// Connects and declares the work queue (quorum, durable) and the events exchange.
    ///
    /// The connection recovers by itself after RabbitMQ restarts or the network drops: it
    /// reconnects (every few seconds at most, for as long as it takes) and restores its
    /// channels, queues, bindings and consumers, so no role has to restart. Publishes fail
    /// fast meanwhile ([`PUBLISH_TIMEOUT`]); the work they announce waits in Postgres for the
    /// reaper. The first connection fails at once when nothing listens (the caller retries and
    /// gives up visibly), since the recovering connection itself would wait forever.
    pub async fn connect(cfg: &RabbitMqConfig, connection_name: &str) -> Result<Self> {
        let uri: lapin::uri::AMQPUri = cfg.url.parse().map_err(QueueError::BadUrl)?;
        let address = (uri.authority.host.as_str(), uri.authority.port);
        tokio::time::timeout(std::time::Duration::from_secs(10), tokio::net::TcpStream::connect(address))
            .await
            .map_err(|_| QueueError::Unreachable("no answer within 10 s".into()))?
            .map_err(|e| QueueError::Unreachable(e.to_string()))?;
        let props = ConnectionProperties::default()
            .with_connection_name(connection_name.into())
            .enable_auto_recover()
            .configure_backoff(|b| {
                b.with_min_delay(std::time::Duration::from_millis(250))
                    .with_max_delay(std::time::Duration::from_secs(5))
                    .with_jitter()
                    .without_max_times()
            });
        let conn = Connection::connect(&cfg.url, props).await?;
        let names = Names::new(&cfg.prefix);
        let setup = conn.create_channel().await?;
        let mut args = FieldTable::default();
        args.insert("x-queue-type".into(), AMQPValue::LongString("quorum".into()));
        if cfg.queue_expires_seconds > 0 {
            let ms = i64::try_from(cfg.queue_expires_seconds.saturating_mul(1000)).unwrap_or(i64::MAX);
            args.insert("x-expires".into(), AMQPValue::LongLongInt(ms));
        }
        for queue in [&names.work_queue, &names.review_queue] {
            setup
                .queue_declare(
                    queue.as_str().into(),
                    QueueDeclareOptions { durable: true, ..Default::default() },
                    args.clone(),
                )
                .await?;
        }
        setup
            .exchange_declare(
                names.events_exchange.as_str().into(),
                ExchangeKind::Topic,
                ExchangeDeclareOptions { durable: true, ..Default::default() },
                FieldTable::default(),
            )
            .await?;
        let work_channel = conn.create_channel().await?;
        work_channel.confirm_select(ConfirmSelectOptions::default()).await?;
        let event_channel = conn.create_channel().await?;
        Ok(Self { inner: Arc::new(BrokerInner { conn, names, work_channel, event_channel }) })
    }

    /// Answers when the connection is up.
    pub fn is_connected(&self) -> bool {
        self.inner.conn.status().connected()
    }

    pub(crate) fn names(&self) -> &Names {
        &self.inner.names
    }

    pub(crate) async fn channel_with_prefetch(&self, prefetch: u16) -> Result<Channel> {
        let ch = self.inner.conn.create_channel().await?;
        ch.basic_qos(prefetch, BasicQosOptions::default()).await?;
        Ok(ch)
    }

    pub(crate) async fn new_channel(&self) -> Result<Channel> {
        Ok(self.inner.conn.create_channel().await?)
    }

    pub(crate) fn work_channel(&self) -> &Channel {
        &self.inner.work_channel
    }

    pub(crate) fn event_channel(&self) -> &Channel {
        &self.inner.event_channel
    }

    /// Deletes this installation's work queue and events exchange (test clean-up).
    pub async fn delete_topology(&self) -> Result<()> {
        let ch = self.new_channel().await?;
        ch.queue_delete(self.names().work_queue.as_str().into(), Default::default()).await?;
        ch.queue_delete(self.names().review_queue.as_str().into(), Default::default()).await?;
        ch.exchange_delete(self.names().events_exchange.as_str().into(), Default::default()).await?;
        Ok(())
    }

    /// Closes the connection (on shutdown).
    pub async fn close(&self) {
        let _ = self.inner.conn.close(200, "shutdown".into()).await;
    }
}
