//! The job queues: at-least-once delivery of work and review jobs, with ack, requeue, prefetch,
//! cancel and close behaving as the worker relies on.

use std::time::{Duration, SystemTime};

use hermes_core::{AgentId, SessionId, TenantId, TurnId};
use hermes_queue::{Broker, Delivery, JobConsumer, ReviewJob, SessionWork, WorkConsumer};
use serde::de::DeserializeOwned;

use crate::{Site, soon};

/// The next delivery on `consumer`, failing the test when none comes in time.
async fn next<T: DeserializeOwned>(what: &str, consumer: &mut JobConsumer<T>) -> Delivery<T> {
    soon(what, consumer.next()).await.unwrap()
}

/// A new connection to `site` with a work consumer ("c1") holding at most `prefetch` unacknowledged.
async fn consuming(site: &Site, prefetch: u16) -> (Broker, WorkConsumer) {
    let broker = site.connect().await;
    let consumer = broker.consume_work(prefetch, "c1").await.unwrap();
    (broker, consumer)
}

/// Publishes `w` and takes it back from `consumer` (see [`take`]).
async fn round_trip(broker: &Broker, consumer: &mut WorkConsumer, w: &SessionWork, what: &str, why: &str) {
    broker.publish_work(w).await.unwrap();
    take(what, consumer, w, why).await;
}

/// Takes the next delivery, checks it is `expected` (`why` says why it must be) and acknowledges it.
async fn take<T>(what: &str, consumer: &mut JobConsumer<T>, expected: &T, why: &str)
where
    T: DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let d = next(what, consumer).await;
    assert_eq!(&d.work, expected, "{why}");
    d.ack().await;
}

fn work() -> SessionWork {
    SessionWork { tenant_id: TenantId::mint(), session_id: SessionId::new() }
}

async fn published_work_is_delivered_and_gone_once_acknowledged(site: Site) {
    let (broker, mut consumer) = consuming(&site, 10).await;
    let (first, second, third) = (work(), work(), work());
    broker.publish_work(&first).await.unwrap();
    let d = next("the first delivery", &mut consumer).await;
    assert_eq!(d.work, first);
    assert!(!d.redelivered);
    let sent = d.sent_at.expect("the publish time rides along");
    assert!(SystemTime::now().duration_since(sent).unwrap_or_default() < Duration::from_secs(60));
    d.ack().await;

    round_trip(&broker, &mut consumer, &second, "the second delivery", "an acknowledged message does not come again")
        .await;
    broker.close().await;

    let pod = site.connect().await;
    let mut consumer = pod.consume_work(10, "c2").await.unwrap();
    round_trip(
        &pod,
        &mut consumer,
        &third,
        "the delivery on another connection",
        "nothing acknowledged comes again after a reconnect",
    )
    .await;
    pod.close().await;
}

async fn requeued_work_comes_back_marked_redelivered(site: Site) {
    let (broker, mut consumer) = consuming(&site, 10).await;
    let w = work();
    broker.publish_work(&w).await.unwrap();
    let first = next("the delivery", &mut consumer).await;
    first.requeue().await;
    let again = next("the redelivery", &mut consumer).await;
    assert_eq!(again.work, w);
    assert!(again.redelivered, "a requeued message is marked redelivered");
    again.ack().await;
    broker.close().await;
}

async fn work_left_unacknowledged_goes_to_another_pod_when_its_holder_goes_away(site: Site) {
    let (holder, other) = (site.connect().await, site.connect().await);
    let mut held = holder.consume_work(1, "holder").await.unwrap();
    let w = work();
    holder.publish_work(&w).await.unwrap();
    let unacked = next("the first delivery", &mut held).await;
    assert_eq!(unacked.work, w);

    let mut waiting = other.consume_work(10, "other").await.unwrap();
    let marker = work();
    round_trip(&other, &mut waiting, &marker, "the marker", "a message held unacknowledged goes to nobody else").await;

    holder.close().await;
    assert!(soon("the closed pod's consumer ending", held.next()).await.is_none());
    unacked.ack().await; // too late: the closed connection gave it back already
    let d = next("the redelivery", &mut waiting).await;
    assert_eq!(d.work, w, "the dead pod's work goes to another pod");
    assert!(d.redelivered);
    d.ack().await;
    other.close().await;
}

async fn prefetch_bounds_what_a_consumer_holds_unacknowledged(site: Site) {
    let (broker, mut consumer) = consuming(&site, 1).await;
    let (first, second) = (work(), work());
    broker.publish_work(&first).await.unwrap();
    broker.publish_work(&second).await.unwrap();
    let d = next("the first delivery", &mut consumer).await;
    assert_eq!(d.work, first, "one queue is first in, first out");
    let early = tokio::time::timeout(Duration::from_millis(500), consumer.next()).await;
    assert!(early.is_err(), "with prefetch 1 nothing more comes while one is unacknowledged");
    d.ack().await;
    take("the second delivery", &mut consumer, &second, "the one published").await;
    broker.close().await;
}

async fn reviews_and_work_travel_in_queues_of_their_own(site: Site) {
    let broker = site.connect().await;
    let w = work();
    let job = ReviewJob {
        tenant_id: TenantId::mint(),
        agent_id: AgentId::new(),
        session_id: SessionId::new(),
        turn_id: TurnId::new(),
    };
    broker.publish_work(&w).await.unwrap();
    broker.publish_review(&job).await.unwrap();
    let mut reviews = broker.consume_reviews(1, "r").await.unwrap();
    take("the review job", &mut reviews, &job, "the review queue holds reviews only").await;
    let mut jobs = broker.consume_work(1, "w").await.unwrap();
    take("the work", &mut jobs, &w, "the one published").await;
    broker.close().await;
}

async fn a_cancelled_consumer_ends_and_its_deliveries_can_still_be_acknowledged(site: Site) {
    let (broker, mut consumer) = consuming(&site, 10).await;
    let (first, second) = (work(), work());
    broker.publish_work(&first).await.unwrap();
    let d = next("the delivery", &mut consumer).await;
    consumer.cancel().await;
    assert!(soon("the cancelled consumer ending", consumer.next()).await.is_none());
    d.ack().await;
    drop(consumer);

    let mut later = broker.consume_work(10, "c2").await.unwrap();
    round_trip(&broker, &mut later, &second, "the next delivery", "the acknowledgement after cancel counted").await;
    broker.close().await;
}

async fn a_closed_broker_refuses_to_publish_and_ends_its_consumers(site: Site) {
    let broker = site.connect().await;
    assert!(broker.is_connected());
    let mut consumer = broker.consume_work(10, "c1").await.unwrap();
    broker.close().await;
    assert!(!broker.is_connected());
    assert!(broker.publish_work(&work()).await.is_err(), "publishing on a closed connection fails");
    assert!(soon("the consumer ending", consumer.next()).await.is_none());
}

crate::contract!(
    published_work_is_delivered_and_gone_once_acknowledged,
    requeued_work_comes_back_marked_redelivered,
    work_left_unacknowledged_goes_to_another_pod_when_its_holder_goes_away,
    prefetch_bounds_what_a_consumer_holds_unacknowledged,
    reviews_and_work_travel_in_queues_of_their_own,
    a_cancelled_consumer_ends_and_its_deliveries_can_still_be_acknowledged,
    a_closed_broker_refuses_to_publish_and_ends_its_consumers,
);
