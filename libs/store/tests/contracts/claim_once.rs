//! Work that several replicas compete for (a session's next turn, outbox replies, event
//! deliveries, due cron jobs, stranded turns) goes to one claimer only, however many race.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use hermes_core::Platform;
use hermes_core::outbox::{Destination, OutboxPayload};
use hermes_store::Store;
use hermes_store::cron::Plan;
use sqlx::PgPool;
use tokio::sync::Barrier;

use crate::common;

/// Runs `n` claimers at once (released together by a barrier) and returns what each got.
async fn race<T, F, Fut>(store: &Store, n: usize, claimer: F) -> Vec<T>
where
    T: Send + 'static,
    F: Fn(Store, usize) -> Fut,
    Fut: Future<Output = T> + Send + 'static,
{
    let start = Arc::new(Barrier::new(n));
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let (start, work) = (start.clone(), claimer(store.clone(), i));
            tokio::spawn(async move {
                start.wait().await;
                work.await
            })
        })
        .collect();
    let mut got = Vec::with_capacity(n);
    for task in tasks {
        got.push(task.await.unwrap());
    }
    got
}

/// Asserts every claimed id is claimed once and all of `expected` were claimed.
fn claimed_once<I: Copy + Eq + std::hash::Hash + std::fmt::Debug>(claims: Vec<Vec<I>>, expected: &HashSet<I>) {
    let all: Vec<I> = claims.into_iter().flatten().collect();
    let distinct: HashSet<I> = all.iter().copied().collect();
    assert_eq!(distinct.len(), all.len(), "an item was claimed twice: {all:?}");
    assert_eq!(&distinct, expected, "every item is claimed by someone");
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn workers_racing_for_a_sessions_turn_never_both_get_it(pool: PgPool) {
    let (store, t, turn) = common::hello_queued(&pool).await;
    // Hold the turn's row so that every claim is in flight at once, then let them go together.
    let mut blocker = pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM turns WHERE id = $1 FOR UPDATE")
        .bind(turn.as_uuid())
        .execute(&mut *blocker)
        .await
        .unwrap();
    let (tenant, session) = (t.id, t.session);
    // Three claims, the blocker and the poll use the test pool's five connections.
    let claims: Vec<_> = (0..3)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                store.turns().claim_next_turn(tenant, session, &format!("worker-{i}"), common::LEASE, 1).await.unwrap()
            })
        })
        .collect();
    common::until("the three claims wait for the turn's row", || async {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(&pool)
        .await
        .unwrap();
        waiting >= 3
    })
    .await;
    blocker.commit().await.unwrap();
    let mut winners = Vec::new();
    for claim in claims {
        winners.extend(claim.await.unwrap());
    }
    assert_eq!(winners.len(), 1, "exactly one worker runs the turn: {winners:?}");
    assert_eq!((winners[0].turn_id, winners[0].attempt), (turn, 1));
    // While its lease holds, nobody else gets it.
    assert!(store.turns().claim_next_turn(t.id, t.session, "late", common::LEASE, 1).await.unwrap().is_none());
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn an_outbox_reply_goes_to_one_sender_at_a_time(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let channel = common::channel(&store, &t, &common::secrets(), "bot-1").await;
    for i in 0..12 {
        let payload = OutboxPayload::text(format!("part {i}"));
        let dest = Destination::chat(Platform::Telegram, channel.id, "42", None);
        store.chat().enqueue_outbox(t.id, &dest, &format!("reply-{i}"), &payload).await.unwrap();
    }
    let claims = race(&store, 6, |store, _| async move {
        store.system().claim_outbox(3, common::LEASE, None).await.unwrap().into_iter().map(|o| o.id).collect::<Vec<_>>()
    })
    .await;
    let swept: Vec<_> =
        store.system().claim_outbox(100, common::LEASE, None).await.unwrap().into_iter().map(|o| o.id).collect();
    let expected: HashSet<_> = claims.iter().chain([&swept]).flatten().copied().collect();
    assert_eq!(expected.len(), 12);
    claimed_once(claims.into_iter().chain([swept]).collect(), &expected);
    assert!(
        store.system().claim_outbox(100, common::LEASE, None).await.unwrap().is_empty(),
        "claimed replies wait for their lease"
    );
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn an_event_delivery_goes_to_one_sender_at_a_time(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let events = ["turn.finished".to_owned()];
    let (hook, _) = store
        .automation()
        .create_event_hook(t.id, "http://127.0.0.1:9/hook", &events, "ops", Some(&common::secrets()))
        .await
        .unwrap();
    let mut pings = HashSet::new();
    for _ in 0..10 {
        pings.insert(store.automation().ping_event_hook(t.id, hook.id).await.unwrap());
    }
    let claims = race(&store, 5, |store, _| async move {
        store.system().claim_events(3, common::LEASE).await.unwrap().into_iter().map(|e| e.id).collect::<Vec<_>>()
    })
    .await;
    let swept: Vec<_> =
        store.system().claim_events(100, common::LEASE).await.unwrap().into_iter().map(|e| e.id).collect();
    claimed_once(claims.into_iter().chain([swept]).collect(), &pings);
    assert!(
        store.system().claim_events(100, common::LEASE).await.unwrap().is_empty(),
        "claimed events wait for their lease"
    );
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_due_cron_job_is_run_by_one_scheduler(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let due = Utc::now() - chrono::Duration::minutes(1);
    let mut jobs = HashSet::new();
    for i in 0..8 {
        jobs.insert(store.automation().create_job(t.id, &common::job(&t, &format!("job-{i}"), due)).await.unwrap().id);
    }
    let now = Utc::now();
    let next_hour = move |_: &hermes_store::cron::Job| Plan {
        run: true,
        next_run_at: Some(now + chrono::Duration::hours(1)),
        state: hermes_core::JobState::Scheduled,
        error: None,
    };
    let claims = race(&store, 4, move |store, i| async move {
        let runs = store.system().claim_due_jobs(&format!("scheduler-{i}"), now, 3, 100, next_hour).await.unwrap();
        runs.into_iter().map(|r| r.job.id).collect::<Vec<_>>()
    })
    .await;
    let swept: Vec<_> = store
        .system()
        .claim_due_jobs("sweeper", now, 100, 100, next_hour)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.job.id)
        .collect();
    claimed_once(claims.into_iter().chain([swept]).collect(), &jobs);
    assert!(store.system().claim_due_jobs("late", now, 100, 100, next_hour).await.unwrap().is_empty());
}

/// Even when a job is still due after a claim (a plan that did not move it on), its slot is
/// run once: the run ledger is unique per job and scheduled time.
#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_cron_slot_runs_once_even_when_its_job_stays_due(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let due = Utc::now() - chrono::Duration::minutes(1);
    let job = store.automation().create_job(t.id, &common::job(&t, "report", due)).await.unwrap();
    let stay = |j: &hermes_store::cron::Job| Plan {
        run: true,
        next_run_at: j.next_run_at,
        state: hermes_core::JobState::Scheduled,
        error: None,
    };
    let now = Utc::now();
    assert_eq!(store.system().claim_due_jobs("scheduler-1", now, 10, 100, stay).await.unwrap().len(), 1);
    assert!(store.system().claim_due_jobs("scheduler-2", now, 10, 100, stay).await.unwrap().is_empty());
    assert_eq!(store.automation().job_runs(t.id, job.id, 10).await.unwrap().len(), 1, "one run in the ledger");
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn reapers_never_republish_the_same_stranded_turn_twice(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let mut turns = HashSet::new();
    for i in 0..6 {
        let session = store
            .conversations()
            .create_session(t.id, t.agent, hermes_core::SessionSource::Api, "user-1", None)
            .await
            .unwrap();
        turns.insert(common::queue(&store, &t, session, &format!("lost message {i}")).await.as_uuid());
    }
    let backoff = Duration::from_secs(3600);
    let claims = race(&store, 4, move |store, _| async move {
        let stranded = store.system().reap_stranded_turns(Duration::ZERO, backoff, 2).await.unwrap();
        stranded.into_iter().map(|s| s.turn_id.as_uuid()).collect::<Vec<_>>()
    })
    .await;
    let swept: Vec<_> = store
        .system()
        .reap_stranded_turns(Duration::ZERO, backoff, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.turn_id.as_uuid())
        .collect();
    claimed_once(claims.into_iter().chain([swept]).collect(), &turns);
    assert!(
        store.system().reap_stranded_turns(Duration::ZERO, backoff, 100).await.unwrap().is_empty(),
        "once per backoff"
    );
}
