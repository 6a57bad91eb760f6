//! A worker's heartbeat: one statement extends the leases of all its turns, of every tenant,
//! and says for each what it found; a turn another statement holds is skipped, not waited for.

use std::time::Duration;

use hermes_core::TurnOutcome;
use hermes_store::{HeldLease, LeaseState, TurnStatus};
use sqlx::PgPool;

use crate::common;

const OWNER: &str = "w1/aaaa/1";

async fn lease_ends_in(pool: &PgPool, turn: hermes_core::TurnId) -> f64 {
    sqlx::query_scalar("SELECT extract(epoch FROM lease_expires_at - now())::float8 FROM turns WHERE id = $1")
        .bind(turn.as_uuid())
        .fetch_one(pool)
        .await
        .unwrap()
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn one_statement_extends_every_lease_a_worker_holds_and_says_what_it_found(pool: PgPool) {
    let store = common::store(&pool);
    let (a, b) = (common::tenant(&store, "acme").await, common::tenant(&store, "beta").await);
    let short = Duration::from_secs(5);
    // Held (tenant a), cancel requested (tenant b), ended, another worker's, and a turn named
    // with the wrong tenant.
    common::queue(&store, &a, a.session, "held").await;
    let held = common::claim_for(&store, a.id, a.session, OWNER, 1, short).await.turn_id;
    common::queue(&store, &b, b.session, "cancel me").await;
    let cancelled = common::claim_for(&store, b.id, b.session, OWNER, 1, short).await.turn_id;
    store.turns().request_cancel(b.id, cancelled, &TurnOutcome::cancelled()).await.unwrap();
    let other_session = common::tenant_session(&store, &a).await;
    common::queue(&store, &a, other_session, "someone else's").await;
    let theirs = common::claim_for(&store, a.id, other_session, "w2/bbbb/1", 1, short).await.turn_id;
    let third_session = common::tenant_session(&store, &b).await;
    common::queue(&store, &b, third_session, "done").await;
    let ended = common::claim_for(&store, b.id, third_session, OWNER, 1, short).await;
    store
        .turns()
        .finish_turn(
            b.id,
            third_session,
            ended.turn_id,
            OWNER,
            ended.fence,
            TurnStatus::Completed,
            &common::answered("ok"),
            None,
            &[],
        )
        .await
        .unwrap();

    let leases = [
        HeldLease { tenant: a.id, turn: held, owner: OWNER },
        HeldLease { tenant: b.id, turn: cancelled, owner: OWNER },
        HeldLease { tenant: a.id, turn: theirs, owner: OWNER },
        HeldLease { tenant: b.id, turn: ended.turn_id, owner: OWNER },
        HeldLease { tenant: b.id, turn: held, owner: OWNER },
    ];
    let mut found = store.system().extend_leases(&leases, common::LEASE).await.unwrap();
    found.sort_by_key(|(turn, state)| (*turn, *state as u8));
    let mut want = vec![
        (held, LeaseState::Held),
        (cancelled, LeaseState::CancelRequested),
        (theirs, LeaseState::Lost),
        (ended.turn_id, LeaseState::Ended),
        (held, LeaseState::Lost),
    ];
    want.sort_by_key(|(turn, state)| (*turn, *state as u8));
    assert_eq!(found, want);
    assert!(lease_ends_in(&pool, held).await > 500.0, "the held lease was extended");
    assert!(lease_ends_in(&pool, cancelled).await > 500.0, "a turn asked to stop is still ours until it stops");
    assert!(lease_ends_in(&pool, theirs).await < 10.0, "another worker's lease is left alone");
    assert!(store.system().extend_leases(&[], common::LEASE).await.unwrap().is_empty());
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_turn_whose_row_another_statement_holds_is_skipped_not_waited_for(pool: PgPool) {
    let store = common::store(&pool);
    let a = common::tenant(&store, "acme").await;
    common::queue(&store, &a, a.session, "hello").await;
    let turn = common::claim(&store, a.id, a.session, OWNER, 1).await.turn_id;
    // A finish in progress: its transaction holds the turn's row.
    let mut finishing = pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM turns WHERE id = $1 FOR UPDATE")
        .bind(turn.as_uuid())
        .execute(&mut *finishing)
        .await
        .unwrap();

    let lease = [HeldLease { tenant: a.id, turn, owner: OWNER }];
    let beat = tokio::time::timeout(Duration::from_secs(5), store.system().extend_leases(&lease, common::LEASE));
    let found = beat.await.expect("the heartbeat does not wait for the row").unwrap();
    assert_eq!(found, vec![(turn, LeaseState::Busy)], "still ours, not extended this time");

    finishing.rollback().await.unwrap();
    let found = store.system().extend_leases(&lease, common::LEASE).await.unwrap();
    assert_eq!(found, vec![(turn, LeaseState::Held)]);
}
