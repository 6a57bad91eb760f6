//! Who may hold what: leases, session locks (with their fencing tokens) and capped slots.

use std::time::Duration;

use hermes_cache::Cache;
use hermes_core::SessionId;

const LONG: Duration = Duration::from_secs(30);
const SHORT: Duration = Duration::from_secs(1);

async fn a_lease_is_one_holders_until_released(cache: Cache) {
    let leases = cache.leases();
    let a = leases.try_acquire("bot", "pod-a", LONG).await.unwrap().expect("a free lease is taken");
    assert!(leases.try_acquire("bot", "pod-b", LONG).await.unwrap().is_none(), "a held lease is refused");
    assert!(leases.try_acquire("other-bot", "pod-b", LONG).await.unwrap().is_some(), "leases are per name");
    assert!(leases.renew(&a, LONG).await.unwrap(), "the holder renews");

    leases.release(&a).await.unwrap();
    let b = leases.try_acquire("bot", "pod-b", LONG).await.unwrap().expect("a released lease is free at once");
    assert!(!leases.renew(&a, LONG).await.unwrap(), "the old holder cannot renew the new holder's lease");
    leases.release(&a).await.unwrap();
    assert!(
        leases.try_acquire("bot", "pod-c", LONG).await.unwrap().is_none(),
        "the old holder's release leaves the new holder's lease alone"
    );
    assert!(leases.renew(&b, LONG).await.unwrap());
}

async fn a_lease_lapses_when_its_holder_stops_renewing(cache: Cache) {
    let leases = cache.leases();
    let a = leases.try_acquire("bot", "pod-a", SHORT).await.unwrap().expect("a free lease is taken");
    assert!(leases.try_acquire("bot", "pod-b", LONG).await.unwrap().is_none());
    let mut b;
    crate::eventually!("another pod taking the lapsed lease", {
        b = leases.try_acquire("bot", "pod-b", LONG).await.unwrap();
        b.is_some()
    });
    assert!(!leases.renew(&a, LONG).await.unwrap(), "a lapsed lease cannot be renewed");
}

async fn a_pod_takes_only_free_leases_and_renews_only_what_it_still_holds(cache: Cache) {
    let leases = cache.leases();
    let held = leases.try_acquire("bot-2", "pod-b", LONG).await.unwrap().expect("a free lease is taken");
    let taken = leases.try_acquire_all(&["bot-1", "bot-2", "bot-3"], "pod-a", LONG).await.unwrap();
    assert_eq!(taken.iter().map(Option::is_some).collect::<Vec<_>>(), [true, false, true], "a held one is skipped");
    let mine: Vec<_> = taken.into_iter().flatten().collect();
    assert_eq!(leases.holder("bot-2").await.unwrap().as_deref(), Some("pod-b"));
    assert_eq!(leases.holder("bot-3").await.unwrap().as_deref(), Some("pod-a"));
    assert_eq!(leases.holder("bot-4").await.unwrap(), None);

    leases.release(&mine[1]).await.unwrap();
    let renewed = leases.renew_all(&[mine[0].clone(), mine[1].clone(), held.clone()], LONG).await.unwrap();
    assert_eq!(renewed, [true, false, true], "a given-back lease is not renewed; the others are, each by its holder");
    assert!(leases.renew_all(&[], LONG).await.unwrap().is_empty());
}

async fn the_census_counts_the_pods_that_announced_themselves_lately(cache: Cache) {
    let leases = cache.leases();
    assert_eq!(leases.census("telegram:poll", "pod-a", LONG).await.unwrap(), 1, "a pod counts itself");
    assert_eq!(leases.census("telegram:poll", "pod-b", SHORT).await.unwrap(), 2);
    assert_eq!(leases.census("telegram:poll", "pod-a", LONG).await.unwrap(), 2, "announcing again counts once");
    assert_eq!(leases.census("slack:socket", "pod-a", LONG).await.unwrap(), 1, "groups are apart");
    crate::eventually!("a pod that stopped announcing itself dropping out", {
        leases.census("telegram:poll", "pod-a", LONG).await.unwrap() == 1
    });
    leases.census("telegram:poll", "pod-c", LONG).await.unwrap();
    leases.leave("telegram:poll", "pod-c").await.unwrap();
    assert_eq!(leases.census("telegram:poll", "pod-a", LONG).await.unwrap(), 1, "a pod that left is not counted");
}

async fn a_session_lock_is_exclusive_and_each_holding_gets_a_higher_token(cache: Cache) {
    let locks = cache.session_locks();
    let session = SessionId::new();
    let first = locks.try_acquire(session, "w1", LONG).await.unwrap().expect("a free lock is taken");
    assert_eq!(first.session_id, session);
    assert!(locks.try_acquire(session, "w2", LONG).await.unwrap().is_none(), "a held lock is refused");
    assert!(locks.try_acquire(SessionId::new(), "w2", LONG).await.unwrap().is_some(), "locks are per session");
    assert!(locks.extend(&first, LONG).await.unwrap(), "the holder extends");

    locks.release(&first).await.unwrap();
    let second = locks.try_acquire(session, "w2", LONG).await.unwrap().expect("a released lock is free at once");
    assert!(second.token > first.token, "fencing tokens grow: {} then {}", first.token, second.token);
    assert!(!locks.extend(&first, LONG).await.unwrap(), "a stale holder cannot extend");
    locks.release(&first).await.unwrap();
    assert!(
        locks.try_acquire(session, "w3", LONG).await.unwrap().is_none(),
        "a stale holder's release leaves the new holder's lock alone"
    );
    // A heartbeat extends all its locks at once and learns which it lost.
    let other = locks.try_acquire(SessionId::new(), "w1", SHORT).await.unwrap().expect("a free lock is taken");
    let beat = locks.extend_all(&[first.clone(), other.clone(), second.clone()], LONG).await.unwrap();
    assert_eq!(beat, vec![false, true, true], "only the stale holding is refused, in the order asked");
    tokio::time::sleep(SHORT + Duration::from_millis(300)).await;
    assert!(locks.try_acquire(other.session_id, "w2", LONG).await.unwrap().is_none(), "extended past its short ttl");
    assert!(locks.extend_all(&[], LONG).await.unwrap().is_empty());
}

async fn a_lapsed_session_lock_goes_to_the_next_worker_with_a_higher_token(cache: Cache) {
    let locks = cache.session_locks();
    let session = SessionId::new();
    let first = locks.try_acquire(session, "w1", SHORT).await.unwrap().expect("a free lock is taken");
    let mut second;
    crate::eventually!("another worker taking the lapsed lock", {
        second = locks.try_acquire(session, "w2", LONG).await.unwrap();
        second.is_some()
    });
    let second = second.unwrap();
    assert!(second.token > first.token, "fencing tokens grow: {} then {}", first.token, second.token);
    assert!(!locks.extend(&first, LONG).await.unwrap(), "the lapsed holder cannot extend");
    assert!(locks.extend(&second, LONG).await.unwrap());
}

async fn the_reaper_breaks_a_session_lock_only_of_the_gone_owner_it_names(cache: Cache) {
    let locks = cache.session_locks();
    let session = SessionId::new();
    let held = locks.try_acquire(session, "w1-4f/a1b2/c3d4", LONG).await.unwrap().expect("a free lock is taken");
    for other in ["w1-4f/a1b2/c3", "w1-4f/a1b2", "w2/x/y"] {
        assert!(!locks.break_abandoned(session, other).await.unwrap(), "{other} does not hold the lock");
    }
    assert!(locks.try_acquire(session, "w2/x/y", LONG).await.unwrap().is_none(), "still held");
    assert!(locks.break_abandoned(session, "w1-4f/a1b2/c3d4").await.unwrap(), "its owner's lock is broken");
    let next = locks.try_acquire(session, "w2/x/y", LONG).await.unwrap().expect("the next worker takes it at once");
    assert!(next.token > held.token, "the fence still grows: {} then {}", held.token, next.token);
    assert!(!locks.break_abandoned(session, "w1-4f/a1b2/c3d4").await.unwrap(), "the new holder's lock stays");
    assert!(!locks.extend(&held, LONG).await.unwrap(), "the gone holder cannot extend");
}

async fn slots_cap_what_runs_at_once_per_scope_and_kind(cache: Cache) {
    let children = cache.child_slots();
    assert!(children.try_acquire("t1", "a", 2, LONG).await.unwrap());
    assert!(children.try_acquire("t1", "b", 2, LONG).await.unwrap());
    assert!(!children.try_acquire("t1", "c", 2, LONG).await.unwrap(), "the third of a cap of two is refused");
    assert!(!children.try_acquire("t1", "a", 2, LONG).await.unwrap(), "a full scope refuses a held id too");
    assert!(children.try_acquire("t2", "c", 2, LONG).await.unwrap(), "scopes are counted apart");
    assert!(cache.turn_slots().try_acquire("t1", "c", 2, LONG).await.unwrap(), "kinds are counted apart");

    children.release("t1", "a").await.unwrap();
    assert!(children.try_acquire("t1", "c", 2, LONG).await.unwrap(), "a released slot is free at once");
    assert!(!children.try_acquire("t1", "d", 2, LONG).await.unwrap());
}

async fn a_slot_lapses_when_its_holder_stops(cache: Cache) {
    let turns = cache.turn_slots();
    assert!(turns.try_acquire("key", "a", 1, SHORT).await.unwrap());
    assert!(!turns.try_acquire("key", "b", 1, LONG).await.unwrap());
    crate::eventually!("the lapsed slot freeing up", turns.try_acquire("key", "b", 1, LONG).await.unwrap());
}

crate::contract!(
    a_lease_is_one_holders_until_released,
    a_lease_lapses_when_its_holder_stops_renewing,
    a_pod_takes_only_free_leases_and_renews_only_what_it_still_holds,
    the_census_counts_the_pods_that_announced_themselves_lately,
    a_session_lock_is_exclusive_and_each_holding_gets_a_higher_token,
    a_lapsed_session_lock_goes_to_the_next_worker_with_a_higher_token,
    the_reaper_breaks_a_session_lock_only_of_the_gone_owner_it_names,
    slots_cap_what_runs_at_once_per_scope_and_kind,
    a_slot_lapses_when_its_holder_stops,
);
