//! What is told and shown: turn cancellations, background-process marks and the sandbox census.

use std::time::Duration;

use hermes_cache::Cache;
use hermes_core::census::SandboxReport;
use hermes_core::{SessionId, TenantId, TurnId};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

/// Publishes `turn` until `rx` hears it (a subscription starts listening a moment after it is
/// made, and Redis keeps nothing for late listeners); what else `rx` hears first is skipped.
async fn publish_until_heard(cache: &Cache, rx: &mut UnboundedReceiver<TurnId>, turn: TurnId) {
    for _ in 0..50 {
        cache.cancel_bus().publish(turn).await.unwrap();
        while let Ok(Some(heard)) = tokio::time::timeout(Duration::from_millis(100), rx.recv()).await {
            if heard == turn {
                return;
            }
        }
    }
    panic!("turn {turn} was not heard within 5 s");
}

async fn a_cancellation_reaches_every_subscriber_until_it_shuts_down(cache: Cache) {
    let (first_off, second_off) = (CancellationToken::new(), CancellationToken::new());
    let mut first = cache.cancel_bus().subscribe(first_off.clone());
    let mut second = cache.cancel_bus().subscribe(second_off.clone());
    publish_until_heard(&cache, &mut first, TurnId::new()).await;
    publish_until_heard(&cache, &mut second, TurnId::new()).await;

    let turn = TurnId::new();
    cache.cancel_bus().publish(turn).await.unwrap();
    for rx in [&mut first, &mut second] {
        let heard = async {
            while let Some(id) = rx.recv().await {
                if id == turn {
                    return true;
                }
            }
            false
        };
        assert!(tokio::time::timeout(Duration::from_secs(5), heard).await.unwrap(), "one publish reaches both");
    }

    first_off.cancel();
    let ended = async { while first.recv().await.is_some() {} };
    tokio::time::timeout(Duration::from_secs(5), ended).await.expect("a shut-down subscription ends");
    publish_until_heard(&cache, &mut second, TurnId::new()).await;
}

async fn a_background_mark_lasts_until_cleared_or_expired(cache: Cache) {
    let marks = cache.background_marks();
    let (tenant, session) = (TenantId::mint(), SessionId::new());
    assert!(!marks.is_marked(tenant, session).await.unwrap());
    marks.mark(tenant, session, Duration::from_secs(3600)).await.unwrap();
    assert!(marks.is_marked(tenant, session).await.unwrap());
    assert!(!marks.is_marked(tenant, SessionId::new()).await.unwrap(), "marks are per session");
    assert!(!marks.is_marked(TenantId::mint(), session).await.unwrap(), "marks are per tenant");
    marks.clear(tenant, session).await.unwrap();
    assert!(!marks.is_marked(tenant, session).await.unwrap(), "a cleared mark is gone");

    marks.mark(tenant, session, Duration::from_secs(1)).await.unwrap();
    assert!(marks.is_marked(tenant, session).await.unwrap());
    crate::eventually!("the mark expiring", !marks.is_marked(tenant, session).await.unwrap());
}

fn report(worker: &str, sandboxes: usize) -> SandboxReport {
    let sandbox = serde_json::json!({
        "tenant_id": "0190b0e8-0000-7000-8000-000000000001",
        "agent_id": "0190b0e8-0000-7000-8000-000000000002",
        "backend": "local",
        "name": "sb", "running_execs": 0, "running_processes": 1, "idle_secs": 5,
    });
    serde_json::from_value(serde_json::json!({
        "worker": worker,
        "at": "2026-01-02T03:04:05Z",
        "sandboxes": vec![sandbox; sandboxes],
    }))
    .unwrap()
}

async fn the_census_shows_each_workers_latest_report_until_it_expires(cache: Cache) {
    let census = cache.sandbox_census();
    assert!(census.reports().await.unwrap().is_empty());
    census.publish(&report("w-b", 1), Duration::from_secs(60)).await.unwrap();
    census.publish(&report("w-a", 0), Duration::from_secs(1)).await.unwrap();
    census.publish(&report("w-b", 2), Duration::from_secs(60)).await.unwrap();
    let reports = census.reports().await.unwrap();
    assert_eq!(reports, vec![report("w-a", 0), report("w-b", 2)], "the latest of each worker, by name");
    crate::eventually!("the silent worker dropping out", census.reports().await.unwrap().len() == 1);
    assert_eq!(census.reports().await.unwrap(), vec![report("w-b", 2)]);
}

crate::contract!(
    a_cancellation_reaches_every_subscriber_until_it_shuts_down,
    a_background_mark_lasts_until_cleared_or_expired,
    the_census_shows_each_workers_latest_report_until_it_expires,
);
