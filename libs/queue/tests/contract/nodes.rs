//! A cluster given as several AMQP addresses: a connection takes the first node that answers,
//! and says which failed (without their passwords) when none does. RabbitMQ only: the
//! in-memory broker has no addresses.

use hermes_config::RabbitMqConfig;
use hermes_core::{SessionId, TenantId};
use hermes_queue::{Broker, QueueError, SessionWork};

use crate::{AMQP_URL, soon};

/// Nothing listens on port 1.
const DEAD_NODE: &str = "amqp://guest:dead-node-pass@127.0.0.1:1/%2f";

fn cluster(url: String) -> RabbitMqConfig {
    let prefix = format!("hermes-contract.{}", uuid::Uuid::now_v7().simple());
    RabbitMqConfig { url, prefix, queue_expires_seconds: 60 }
}

#[tokio::test]
async fn a_broker_given_several_nodes_works_through_the_first_that_answers() {
    // Whichever node a pod starts with (by its process id), a dead one is passed over.
    for url in [format!("{DEAD_NODE}, {AMQP_URL}"), format!("{AMQP_URL},{DEAD_NODE}")] {
        let cfg = cluster(url);
        let broker = Broker::connect(&cfg, "hermes-queue-contract").await.expect("one node answers");
        let mut consumer = broker.consume_work(1, "nodes").await.unwrap();
        let work = SessionWork { tenant_id: TenantId::mint(), session_id: SessionId::new() };
        broker.publish_work(&work).await.unwrap();
        let got = soon("the work", consumer.next()).await.expect("a delivery");
        assert_eq!(got.work, work);
        got.ack().await;
        consumer.cancel().await;
        broker.delete_topology().await.unwrap();
        broker.close().await;
    }
}

#[tokio::test]
async fn a_broker_whose_nodes_all_refuse_names_each_without_its_password() {
    let cfg = cluster(format!("{DEAD_NODE},amqp://guest:other-pass@127.0.0.1:2/%2f"));
    let Err(QueueError::Unreachable(why)) = Broker::connect(&cfg, "hermes-queue-contract").await else {
        panic!("no node answers");
    };
    assert!(why.contains("127.0.0.1:1/") && why.contains("127.0.0.1:2/"), "{why}");
    assert!(!why.contains("pass"), "{why}");
}
