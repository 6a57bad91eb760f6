//! A worker's presence lock tells the reaper a dead worker from a slow one: the running turns
//! of a worker whose lock is free are handed on before their lease runs out, a present
//! worker's are not, and the gone worker's late writes are fenced off.

use hermes_core::ChatMessage;
use hermes_store::{Store, StoreError};
use sqlx::PgPool;

use crate::common::{self, Tenant};

/// A tenant whose one turn runs under `owner` with a lease that outlasts the test.
async fn running_under(store: &Store, name: &str, owner: &str) -> (Tenant, i64) {
    let t = common::tenant(store, name).await;
    common::queue(store, &t, t.session, "hello").await;
    let claimed = common::claim(store, t.id, t.session, owner, 1).await;
    (t, claimed.fence)
}

async fn gone(store: &Store) -> Vec<String> {
    store.system().gone_workers().await.unwrap().workers
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_gone_workers_turns_are_handed_on_before_their_lease_runs_out_and_a_present_workers_stay(pool: PgPool) {
    let store = common::store(&pool);
    let (alive_t, _) = running_under(&store, "acme", "w-alive/aaaa/1").await;
    let (dead_t, dead_fence) = running_under(&store, "beta", "w-dead/bbbb/2").await;
    let _alive = store.hold_presence("w-alive/aaaa").await.unwrap().expect("a free presence lock is taken");
    let dead = store.hold_presence("w-dead/bbbb").await.unwrap().expect("a free presence lock is taken");
    assert!(store.hold_presence("w-alive/aaaa").await.unwrap().is_none(), "one holder per worker");
    assert_eq!(gone(&store).await, Vec::<String>::new(), "both workers are present");
    // The reaper tells servers apart (a failover or restart drops every lock): the same one
    // is named the same on every look, whichever connection asked.
    let (first, second) = (store.system().gone_workers().await.unwrap(), store.system().gone_workers().await.unwrap());
    assert!(first.server.split(' ').count() >= 2, "address or port, and start: {}", first.server);
    assert_eq!(first.server, second.server);

    // The process dies: its connection closes and Postgres drops the lock.
    drop(dead);
    common::until("the dead worker's lock is free", || async { gone(&store).await == ["w-dead/bbbb"] }).await;
    assert!(!store.turns().has_claimable_turn(dead_t.id, dead_t.session).await.unwrap(), "its lease still runs");

    let everyone = ["w-dead/bbbb".to_owned(), "w-alive/aaaa".to_owned()];
    let orphans = store.system().release_turns_of_gone_workers(&everyone).await.unwrap();
    let owners: Vec<_> = orphans.iter().map(|o| (o.turn.tenant_id, o.lease_owner.as_str())).collect();
    assert_eq!(owners, [(dead_t.id, "w-dead/bbbb/2")], "only the gone worker's turn is handed on");
    assert!(store.turns().has_claimable_turn(dead_t.id, dead_t.session).await.unwrap(), "claimable at once");
    assert!(
        !store.turns().has_claimable_turn(alive_t.id, alive_t.session).await.unwrap(),
        "the present worker keeps it"
    );

    let next = common::claim(&store, dead_t.id, dead_t.session, "w-next/cccc/3", 2).await;
    assert_eq!(next.attempt, 2, "the next worker resumes the same turn");
    let late = store
        .conversations()
        .append_message(dead_t.id, dead_t.session, dead_fence, next.turn_id, 1, &ChatMessage::assistant("late"))
        .await;
    assert!(matches!(late, Err(StoreError::Fenced)), "the gone worker's late write is refused: {late:?}");
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_worker_that_takes_its_lock_back_before_the_release_keeps_its_turns(pool: PgPool) {
    let store = common::store(&pool);
    let (t, _) = running_under(&store, "acme", "w-back/dddd/1").await;
    assert_eq!(gone(&store).await, ["w-back/dddd"], "no lock held: judged gone");
    // Its presence connection comes back (after a Postgres restart, say) before the reaper's
    // second look: the release tries the lock again and leaves the turn alone.
    let _back = store.hold_presence("w-back/dddd").await.unwrap().expect("taken back");
    let orphans = store.system().release_turns_of_gone_workers(&["w-back/dddd".to_owned()]).await.unwrap();
    assert!(orphans.is_empty(), "{orphans:?}");
    assert!(!store.turns().has_claimable_turn(t.id, t.session).await.unwrap());
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_worker_of_a_build_before_presence_is_judged_by_its_lease_alone(pool: PgPool) {
    let store = common::store(&pool);
    // Mid rolling upgrade: the previous release's worker names no incarnation and holds no lock.
    let (old_t, _) = running_under(&store, "acme", "old-worker/1a2b3c4d").await;
    assert_eq!(gone(&store).await, Vec::<String>::new(), "a worker without a presence lock is not judged gone");
    let orphans = store.system().release_turns_of_gone_workers(&["old-worker".to_owned()]).await.unwrap();
    assert!(orphans.is_empty(), "its turn stays with it: {orphans:?}");
    assert!(!store.turns().has_claimable_turn(old_t.id, old_t.session).await.unwrap(), "until its lease runs out");
}
