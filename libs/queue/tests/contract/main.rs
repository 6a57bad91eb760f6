//! The queue's contract: every test body is written once, as `async fn x(site: Site)`, and runs
//! twice, on RabbitMQ (127.0.0.1:5672, under queue and exchange names of its own) and on the
//! in-memory broker (`InMemoryBroker`), so the two cannot drift apart on what callers rely on.
//! A [`Site`] is one installation; each `connect` is another pod's connection to it.
//!
//! Run: `cargo nextest run -p hermes-queue` (RabbitMQ must be up: `deploy/dev/ensure-services.sh`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a failed unwrap is a failed test"
)]

mod events;
mod jobs;
mod nodes;

use std::future::Future;
use std::time::Duration;

use hermes_config::RabbitMqConfig;
use hermes_queue::{Broker, InMemoryBroker};

/// The RabbitMQ every developer machine and CI job has (see `deploy/dev/ensure-services.sh`).
const AMQP_URL: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";

/// How long a test waits for something that should come.
pub const PATIENCE: Duration = Duration::from_secs(5);

/// One installation on one engine.
#[derive(Clone)]
pub enum Site {
    Rabbit(RabbitMqConfig),
    Memory(InMemoryBroker, String),
}

impl Site {
    /// A new connection (a pod) to the installation.
    pub async fn connect(&self) -> Broker {
        match self {
            Site::Rabbit(cfg) => Broker::connect(cfg, "hermes-queue-contract").await.unwrap_or_else(|e| {
                panic!("the queue contract needs RabbitMQ at {AMQP_URL} (deploy/dev/ensure-services.sh starts it): {e}")
            }),
            Site::Memory(broker, prefix) => broker.connect(prefix),
        }
    }
}

/// Runs `body` on RabbitMQ with names no other test uses, then deletes its queues and exchange
/// (they also expire a minute after their last consumer, should the test fail first).
pub async fn on_rabbit<F, Fut>(body: F)
where
    F: FnOnce(Site) -> Fut,
    Fut: Future<Output = ()>,
{
    let prefix = format!("hermes-contract.{}", uuid::Uuid::now_v7().simple());
    let cfg = RabbitMqConfig { url: AMQP_URL.into(), prefix, queue_expires_seconds: 60 };
    let site = Site::Rabbit(cfg);
    body(site.clone()).await;
    let broker = site.connect().await;
    broker.delete_topology().await.unwrap();
    broker.close().await;
}

/// Runs `body` on a fresh in-memory broker.
pub async fn in_memory<F, Fut>(body: F)
where
    F: FnOnce(Site) -> Fut,
    Fut: Future<Output = ()>,
{
    body(Site::Memory(InMemoryBroker::default(), "hermes".into())).await;
}

/// Awaits `fut` for at most [`PATIENCE`], failing the test with `what` when it takes longer.
pub async fn soon<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, fut).await.unwrap_or_else(|_| panic!("{what} did not happen within 5 s"))
}

/// The roles move these across tasks, so on either engine they must be `Send` (and shared ones
/// `Sync`); this fails to compile otherwise.
const _: fn() = || {
    fn shared<T: Send + Sync>() {}
    fn sent<T: Send>() {}
    shared::<Broker>();
    shared::<hermes_queue::EventHub>();
    sent::<hermes_queue::WorkConsumer>();
    sent::<hermes_queue::WorkDelivery>();
    sent::<hermes_queue::EventSubscription>();
    sent::<hermes_queue::SessionWatch>();
};

/// Generates, for each named body in the calling module, one `#[tokio::test]` per engine:
/// `rabbitmq::name` and `memory::name`.
#[macro_export]
macro_rules! contract {
    ($($name:ident),+ $(,)?) => {
        mod rabbitmq {
            $(
                #[tokio::test]
                async fn $name() {
                    $crate::on_rabbit(super::$name).await;
                }
            )+
        }
        mod memory {
            $(
                #[tokio::test]
                async fn $name() {
                    $crate::in_memory(super::$name).await;
                }
            )+
        }
    };
}
