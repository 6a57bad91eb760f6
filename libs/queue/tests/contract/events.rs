//! Turn events: each pod's hub gets the events addressed to it, and those of the sessions it
//! watches, once each and in order.

use hermes_core::{SessionId, TenantId, TurnEvent, TurnEventKind, TurnId};
use hermes_queue::{Broker, EventSubscription};

use crate::{Site, soon};

fn event(tenant: TenantId, session: SessionId, turn: TurnId, text: &str) -> TurnEvent {
    TurnEvent {
        tenant_id: tenant,
        session_id: session,
        turn_id: turn,
        attempt: 1,
        kind: TurnEventKind::Delta { text: text.into() },
    }
}

fn text(e: &TurnEvent) -> &str {
    match &e.kind {
        TurnEventKind::Delta { text } => text,
        other => panic!("unexpected {other:?}"),
    }
}

async fn next_text(sub: &mut EventSubscription) -> String {
    text(&soon("an event", sub.next()).await.expect("the hub is up")).to_owned()
}

async fn a_hub_receives_the_events_addressed_to_it_in_order(site: Site) {
    let (pod_a, pod_b, worker) = (site.connect().await, site.connect().await, site.connect().await);
    let (hub_a, hub_b) = (pod_a.event_hub().await.unwrap(), pod_b.event_hub().await.unwrap());
    let (tenant, session, turn) = (TenantId::mint(), SessionId::new(), TurnId::new());
    let mut at_a = hub_a.subscribe(turn);
    let mut at_b = hub_b.subscribe(turn);

    worker.publish_event(&event(tenant, session, turn, "to nobody"), None).await.unwrap();
    worker.publish_event(&event(tenant, session, turn, "to b"), Some(hub_b.id())).await.unwrap();
    for n in ["a1", "a2", "a3"] {
        worker.publish_event(&event(tenant, session, turn, n), Some(hub_a.id())).await.unwrap();
    }
    for expected in ["a1", "a2", "a3"] {
        assert_eq!(next_text(&mut at_a).await, expected, "only what is addressed to a, in order");
    }
    assert_eq!(next_text(&mut at_b).await, "to b");
    for broker in [pod_a, pod_b, worker] {
        broker.close().await;
    }
}

async fn every_subscriber_of_a_turn_gets_every_event_and_turns_stay_apart(site: Site) {
    let (pod, worker) = (site.connect().await, site.connect().await);
    let hub = pod.event_hub().await.unwrap();
    let (tenant, session, turn, other_turn) = (TenantId::mint(), SessionId::new(), TurnId::new(), TurnId::new());
    let (mut first, mut second, mut other) = (hub.subscribe(turn), hub.subscribe(turn), hub.subscribe(other_turn));
    worker.publish_event(&event(tenant, session, other_turn, "other"), Some(hub.id())).await.unwrap();
    worker.publish_event(&event(tenant, session, turn, "one"), Some(hub.id())).await.unwrap();
    worker.publish_event(&event(tenant, session, turn, "two"), Some(hub.id())).await.unwrap();
    for sub in [&mut first, &mut second] {
        assert_eq!(next_text(sub).await, "one", "a subscriber sees its own turn only");
        assert_eq!(next_text(sub).await, "two");
    }
    assert_eq!(next_text(&mut other).await, "other");
    pod.close().await;
    worker.close().await;
}

/// Publishes `n` of the watched session with no hub, then `n` addressed to `hub` (a marker), and
/// says whether the watched one arrived: the marker always does, and always after it.
async fn watch_still_bound(
    worker: &Broker,
    hub: &str,
    sub: &mut EventSubscription,
    ids: (TenantId, SessionId, TurnId),
    n: u32,
) -> bool {
    let (tenant, session, turn) = ids;
    let watched = format!("watched {n}");
    let marker = format!("marker {n}");
    worker.publish_event(&event(tenant, session, turn, &watched), None).await.unwrap();
    worker.publish_event(&event(tenant, session, turn, &marker), Some(hub)).await.unwrap();
    let first = next_text(sub).await;
    if first == marker {
        return false;
    }
    assert_eq!(first, watched);
    assert_eq!(next_text(sub).await, marker);
    true
}

async fn a_session_watch_gets_the_sessions_events_once_until_the_last_watch_goes(site: Site) {
    let (pod, worker) = (site.connect().await, site.connect().await);
    let hub = pod.event_hub().await.unwrap();
    let ids @ (tenant, session, turn) = (TenantId::mint(), SessionId::new(), TurnId::new());
    let mut sub = hub.subscribe(turn);
    let first_watch = hub.watch_session(tenant, session).await.unwrap();
    let second_watch = hub.watch_session(tenant, session).await.unwrap();

    worker.publish_event(&event(tenant, session, turn, "via watch"), None).await.unwrap();
    assert_eq!(next_text(&mut sub).await, "via watch", "a watched session's events come from any pod");
    worker.publish_event(&event(tenant, session, turn, "both"), Some(hub.id())).await.unwrap();
    worker.publish_event(&event(tenant, session, turn, "after"), Some(hub.id())).await.unwrap();
    assert_eq!(next_text(&mut sub).await, "both");
    assert_eq!(next_text(&mut sub).await, "after", "an event matching two bindings comes once");

    drop(first_watch);
    assert!(watch_still_bound(&worker, hub.id(), &mut sub, ids, 0).await, "another watch of it remains");
    drop(second_watch);
    let mut n = 1;
    while watch_still_bound(&worker, hub.id(), &mut sub, ids, n).await {
        assert!(n < 50, "the last watch's binding was never removed");
        n += 1;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    pod.close().await;
    worker.close().await;
}

async fn a_closed_broker_ends_its_hub(site: Site) {
    let pod = site.connect().await;
    let hub = pod.event_hub().await.unwrap();
    pod.close().await;
    soon("the hub ending", hub.ended()).await;
}

crate::contract!(
    a_hub_receives_the_events_addressed_to_it_in_order,
    every_subscriber_of_a_turn_gets_every_event_and_turns_stay_apart,
    a_session_watch_gets_the_sessions_events_once_until_the_last_watch_goes,
    a_closed_broker_ends_its_hub,
);
