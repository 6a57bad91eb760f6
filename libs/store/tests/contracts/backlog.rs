//! The backlog the scheduler's gauges (and the worker autoscaler) read: queued turns that are
//! due and how long the oldest waited, running turns, replies waiting, late cron jobs. Counts
//! across every tenant, and nothing that is done.

use std::time::Duration;

use hermes_core::Platform;
use hermes_core::outbox::{Destination, OutboxPayload};
use sqlx::PgPool;

use crate::common;

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn the_backlog_counts_what_waits_across_tenants_and_not_what_is_done(pool: PgPool) {
    let store = common::store(&pool);
    assert_eq!(store.system().backlog().await.unwrap(), hermes_store::Backlog::default(), "an empty installation");

    let a = common::tenant(&store, "alpha").await;
    let b = common::tenant(&store, "beta").await;
    let other_session =
        store.conversations().create_session(b.id, b.agent, hermes_core::SessionSource::Api, "u", None).await.unwrap();
    common::queue(&store, &a, a.session, "one").await;
    common::queue(&store, &b, b.session, "two").await;
    common::queue(&store, &b, other_session, "three").await;
    // A turn deferred to later is not waiting yet.
    sqlx::query("UPDATE turns SET not_before = now() + interval '1 hour' WHERE session_id = $1")
        .bind(other_session.as_uuid())
        .execute(&pool)
        .await
        .unwrap();
    // The oldest due turn has waited a minute.
    sqlx::query("UPDATE turns SET created_at = now() - interval '60 seconds' WHERE session_id = $1")
        .bind(a.session.as_uuid())
        .execute(&pool)
        .await
        .unwrap();
    let backlog = store.system().backlog().await.unwrap();
    assert_eq!(backlog.turns_queued, 2, "both tenants' due turns; not the deferred one");
    assert!((59.0..120.0).contains(&backlog.oldest_queued_seconds), "{backlog:?}");
    assert_eq!(backlog.turns_running, 0);

    common::claim_for(&store, a.id, a.session, "w1", 1, Duration::from_secs(600)).await;
    let backlog = store.system().backlog().await.unwrap();
    assert_eq!((backlog.turns_queued, backlog.turns_running), (1, 1), "a claimed turn runs, no longer waits");
    assert!(backlog.oldest_queued_seconds < 59.0, "the oldest waiting is now beta's: {backlog:?}");

    let channel = common::channel(&store, &a, &common::secrets(), "alpha-bot").await.id;
    let dest = Destination::chat(Platform::Telegram, channel, "42", None);
    store.chat().enqueue_outbox(a.id, &dest, "reply-1", &OutboxPayload::text("hello")).await.unwrap();
    store.chat().enqueue_outbox(a.id, &dest, "reply-2", &OutboxPayload::text("again")).await.unwrap();
    sqlx::query("UPDATE outbox SET status = 'sent' WHERE dedupe_key = 'reply-2'").execute(&pool).await.unwrap();
    let backlog = store.system().backlog().await.unwrap();
    assert_eq!(backlog.outbox_waiting, 1, "a sent reply waits no longer");
    assert!(backlog.oldest_outbox_seconds >= 0.0);

    let now = chrono::Utc::now();
    store.automation().create_job(a.id, &common::job(&a, "late", now - chrono::Duration::minutes(5))).await.unwrap();
    store
        .automation()
        .create_job(a.id, &common::job(&a, "just-due", now - chrono::Duration::seconds(5)))
        .await
        .unwrap();
    store.automation().create_job(b.id, &common::job(&b, "later", now + chrono::Duration::hours(1))).await.unwrap();
    assert_eq!(
        store.system().backlog().await.unwrap().cron_jobs_late,
        1,
        "only a job more than a minute overdue is late"
    );
}
