//! The job queues: at-least-once delivery of work and review jobs, with ack, requeue, prefetch,
//! cancel and close behaving as the worker relies on.

use std::time::{Duration, SystemTime};

use hermes_core::{AgentId, SessionId, TenantId, TurnId};
use hermes_queue::{ReviewJob, SessionWork};

use crate::{Site, soon};

fn work() -> SessionWork {
    SessionWork { tenant_id: TenantId::mint(), session_id: SessionId::new() }
}

async fn published_work_is_delivered_and_gone_once_acknowledged(site: Site) {
    let broker = site.connect().await;
    let mut consumer = broker.consume_work(10, "c1").await.unwrap();
    let (first, second, third) = (work(), work(), work());
    broker.publish_work(&first).await.unwrap();
    let d = soon("the first delivery", consumer.next()).await.unwrap();
    assert_eq!(d.work, first);
    assert!(!d.redelivered);
    let sent = d.sent_at.expect("the publish time rides along");
    assert!(SystemTime::now().duration_since(sent).unwrap_or_default() < Duration::from_secs(60));
    d.ack().await;

    broker.publish_work(&second).await.unwrap();
    let d = soon("the second delivery", consumer.next()).await.unwrap();
    assert_eq!(d.work, second, "an acknowledged message does not come again");
    d.ack().await;
    broker.close().await;

    let pod = site.connect().await;
    let mut consumer = pod.consume_work(10, "c2").await.unwrap();
    pod.publish_work(&third).await.unwrap();
    let d = soon("the delivery on another connection", consumer.next()).await.unwrap();
    assert_eq!(d.work, third, "nothing acknowledged comes again after a reconnect");
    d.ack().await;
    pod.close().await;
}

async fn requeued_work_comes_back_marked_redelivered(site: Site) {
    let broker = site.connect().await;
    let mut consumer = broker.consume_work(10, "c1").await.unwrap();
    let w = work();
    broker.publish_work(&w).await.unwrap();
    let first = soon("the delivery", consumer.next()).await.unwrap();
    first.requeue().await;
    let again = soon("the redelivery", consumer.next()).await.unwrap();
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
    let unacked = soon("the first delivery", held.next()).await.unwrap();
    assert_eq!(unacked.work, w);

    let mut waiting = other.consume_work(10, "other").await.unwrap();
    let marker = work();
    other.publish_work(&marker).await.unwrap();
    let d = soon("the marker", waiting.next()).await.unwrap();
    assert_eq!(d.work, marker, "a message held unacknowledged goes to nobody else");
    d.ack().await;

    holder.close().await;
    assert!(soon("the closed pod's consumer ending", held.next()).await.is_none());
    unacked.ack().await; // too late: the closed connection gave it back already
    let d = soon("the redelivery", waiting.next()).await.unwrap();
    assert_eq!(d.work, w, "the dead pod's work goes to another pod");
    assert!(d.redelivered);
    d.ack().await;
    other.close().await;
}

async fn prefetch_bounds_what_a_consumer_holds_unacknowledged(site: Site) {
    let broker = site.connect().await;
    let mut consumer = broker.consume_work(1, "c1").await.unwrap();
    let (first, second) = (work(), work());
    broker.publish_work(&first).await.unwrap();
    broker.publish_work(&second).await.unwrap();
    let d = soon("the first delivery", consumer.next()).await.unwrap();
    assert_eq!(d.work, first, "one queue is first in, first out");
    let early = tokio::time::timeout(Duration::from_millis(500), consumer.next()).await;
    assert!(early.is_err(), "with prefetch 1 nothing more comes while one is unacknowledged");
    d.ack().await;
    let d = soon("the second delivery", consumer.next()).await.unwrap();
    assert_eq!(d.work, second);
    d.ack().await;
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
    let r = soon("the review job", reviews.next()).await.unwrap();
    assert_eq!(r.work, job, "the review queue holds reviews only");
    r.ack().await;
    let mut jobs = broker.consume_work(1, "w").await.unwrap();
    let d = soon("the work", jobs.next()).await.unwrap();
    assert_eq!(d.work, w);
    d.ack().await;
    broker.close().await;
}

async fn a_cancelled_consumer_ends_and_its_deliveries_can_still_be_acknowledged(site: Site) {
    let broker = site.connect().await;
    let mut consumer = broker.consume_work(10, "c1").await.unwrap();
    let (first, second) = (work(), work());
    broker.publish_work(&first).await.unwrap();
    let d = soon("the delivery", consumer.next()).await.unwrap();
    consumer.cancel().await;
    assert!(soon("the cancelled consumer ending", consumer.next()).await.is_none());
    d.ack().await;
    drop(consumer);

    let mut next = broker.consume_work(10, "c2").await.unwrap();
    broker.publish_work(&second).await.unwrap();
    let d = soon("the next delivery", next.next()).await.unwrap();
    assert_eq!(d.work, second, "the acknowledgement after cancel counted");
    d.ack().await;
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
