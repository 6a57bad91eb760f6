//! RabbitMQ: the "session has work" queue, the background-review queue and the turn-event
//! exchange.
//!
//! Work messages carry only `(tenant, session)`: Postgres holds the work itself, so a
//! redelivered or duplicated message is harmless and a lost one is found by the reaper.
//! Events go to a topic exchange keyed `t.{tenant}.s.{session}.p.{hub}`: each API or gateway
//! pod has one exclusive queue bound to its own hub id, which it writes on the turns it
//! accepts, so a pod receives exactly the events of the turns it waits on. (Other listeners,
//! such as a client re-attaching through another pod, can bind `t.{tenant}.s.{session}.*`.)
//!
//! With the `test-support` feature, [`Broker::in_memory`] and [`InMemoryBroker`] give the same
//! types on a broker held in this process (see `memory`), for tests of the roles without a
//! RabbitMQ.

mod events;
mod link;
#[cfg(feature = "test-support")]
mod memory;
mod work;

use std::sync::Arc;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use hermes_config::RabbitMqConfig;

pub use events::{EventHub, EventSubscription, SessionWatch};
pub use work::{Delivery, JobConsumer, ReviewJob, SessionWork, WorkConsumer, WorkDelivery};

#[cfg(feature = "test-support")]
pub use memory::InMemoryBroker;

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
    #[error("rabbitmq.url is not an AMQP URL (or a comma-separated list of them): {0}")]
    BadUrl(String),
    #[error("rabbitmq cannot be reached: {0}")]
    Unreachable(String),
    #[error("the connection to rabbitmq was closed")]
    Closed,
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
    pub(crate) fn new(prefix: &str) -> Self {
        Self {
            work_queue: format!("{prefix}.work"),
            review_queue: format!("{prefix}.review"),
            events_exchange: format!("{prefix}.events"),
        }
    }
}

/// The installation's RabbitMQ: one connection at a time, replaced when it drops (see
/// [`link`]).
#[derive(Clone)]
pub struct Broker {
    inner: Arc<BrokerInner>,
}

struct BrokerInner {
    names: Names,
    engine: Engine,
    /// Cancelled by [`Broker::close`]: consumers and hubs end, the supervisor stops.
    closed: CancellationToken,
}

/// What carries the messages. Each operation matches on it.
pub(crate) enum Engine {
    /// RabbitMQ: the current connection and every later one.
    Amqp(link::Links),
    /// This process's stand-in for RabbitMQ: one connection to it.
    #[cfg(feature = "test-support")]
    Memory(memory::Connection),
}

impl Broker {
    /// Connects, declares the work queue (quorum, durable) and the events exchange, and keeps
    /// the connection: after a RabbitMQ restart or a network cut it reconnects by itself, and
    /// consumers and event hubs subscribe again, so no role has to restart. Publishes fail fast
    /// meanwhile ([`PUBLISH_TIMEOUT`]); the work they announce waits in Postgres for the
    /// reaper. The first connection fails at once when nothing listens (the caller retries and
    /// gives up visibly).
    pub async fn connect(cfg: &RabbitMqConfig, connection_name: &str) -> Result<Self> {
        let names = Names::new(&cfg.prefix);
        // Pods start on different nodes of a cluster (by process id), so they spread out.
        let start = std::process::id() as usize;
        let (first, node) = link::open(cfg, &names, connection_name, 0, start).await?;
        let (sender, links) = watch::channel(Arc::new(first));
        let closed = CancellationToken::new();
        hermes_telemetry::tasks::spawn(
            "queue_link_supervisor",
            link::supervise(cfg.clone(), names.clone(), connection_name.to_owned(), sender, closed.clone(), node),
        );
        Ok(Self { inner: Arc::new(BrokerInner { names, engine: Engine::Amqp(links), closed }) })
    }

    /// A broker of its own held in this process, for tests; [`InMemoryBroker`] makes several
    /// connections (pods) to one.
    #[cfg(feature = "test-support")]
    pub fn in_memory() -> Self {
        InMemoryBroker::default().connect("hermes")
    }

    #[cfg(feature = "test-support")]
    pub(crate) fn on_memory(names: Names, connection: memory::Connection) -> Self {
        Self {
            inner: Arc::new(BrokerInner {
                names,
                engine: Engine::Memory(connection),
                closed: CancellationToken::new(),
            }),
        }
    }

    /// Answers when the connection is up.
    pub fn is_connected(&self) -> bool {
        match self.engine() {
            Engine::Amqp(links) => links.borrow().is_connected(),
            #[cfg(feature = "test-support")]
            Engine::Memory(connection) => connection.is_open(),
        }
    }

    pub(crate) fn names(&self) -> &Names {
        &self.inner.names
    }

    pub(crate) fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    pub(crate) fn closed(&self) -> &CancellationToken {
        &self.inner.closed
    }

    /// Deletes this installation's work queue and events exchange (test clean-up).
    pub async fn delete_topology(&self) -> Result<()> {
        match self.engine() {
            Engine::Amqp(links) => {
                let ch = link::current(links).conn.create_channel().await?;
                ch.queue_delete(self.names().work_queue.as_str().into(), Default::default()).await?;
                ch.queue_delete(self.names().review_queue.as_str().into(), Default::default()).await?;
                ch.exchange_delete(self.names().events_exchange.as_str().into(), Default::default()).await?;
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(connection) => connection.delete_topology(self.names()),
        }
        Ok(())
    }

    /// Closes the connection (on shutdown).
    pub async fn close(&self) {
        self.inner.closed.cancel();
        match self.engine() {
            Engine::Amqp(links) => {
                let _ = link::current(links).conn.close(200, "shutdown".into()).await;
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(connection) => connection.close(),
        }
    }
}
