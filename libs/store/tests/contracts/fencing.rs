//! A worker that lost its session (paused, then woken up after another worker claimed the
//! turn) must write nothing: every fenced write carries its fence and is refused once a newer
//! claim moved the session's fence on, and the fence never moves back.

use std::time::Duration;

use hermes_core::ChatMessage;
use hermes_store::{Appended, LeaseState, StoreError, TurnStatus};
use serde_json::json;
use sqlx::PgPool;

use crate::common;

fn fenced<T: std::fmt::Debug>(what: &str, result: Result<T, StoreError>) {
    assert!(matches!(result, Err(StoreError::Fenced)), "{what}: want Fenced, got {result:?}");
}

/// `owner` completes `turn` under `fence`, answering `answer` and storing `final_message` with it.
async fn complete(
    store: &hermes_store::Store,
    t: &common::Tenant,
    turn: hermes_core::TurnId,
    owner: &str,
    fence: i64,
    answer: &str,
    final_message: Option<(i32, &ChatMessage)>,
) -> Result<(), StoreError> {
    let outcome = common::answered(answer);
    store
        .turns()
        .finish_turn(t.id, t.session, turn, owner, fence, TurnStatus::Completed, &outcome, final_message, &[])
        .await
        .map(|_| ())
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_worker_fenced_out_by_a_newer_claim_writes_nothing(pool: PgPool) {
    let (store, t, turn) = common::hello_queued(&pool).await;
    // The first worker's lease runs out at once: it paused, and the turn is up for grabs.
    let old = common::claim_for(&store, t.id, t.session, "worker-old", 1, Duration::ZERO).await;
    store
        .conversations()
        .begin_turn(t.id, t.session, old.fence, turn, &ChatMessage::user("hello"), "prompt")
        .await
        .unwrap();
    common::until_claimable(&store, t.id, t.session).await;
    let new = common::claim(&store, t.id, t.session, "worker-new", 1).await;
    assert_eq!((new.turn_id, new.attempt), (turn, 2));
    assert!(new.fence > old.fence, "a new claim moves the fence on: {} then {}", old.fence, new.fence);
    let stored = store.conversations().session_messages(t.id, t.session).await.unwrap().len();

    let late = ChatMessage::assistant("a late answer");
    fenced("append_message", store.conversations().append_message(t.id, t.session, old.fence, turn, 1, &late).await);
    fenced(
        "begin_turn",
        store.conversations().begin_turn(t.id, t.session, old.fence, turn, &ChatMessage::user("hello"), "p").await,
    );
    let finished = complete(&store, &t, turn, "worker-old", old.fence, "a late answer", Some((1, &late))).await;
    fenced("finish_turn", finished);
    let prompt = json!({"question": "which?"});
    let park = common::park(t.agent, "call-1", hermes_core::InteractionKind::Clarify, &prompt);
    fenced("park_turn", store.turns().park_turn(t.id, t.session, turn, "worker-old", old.fence, &park).await);
    let body = [(None, ChatMessage::user("summary"))];
    fenced("fork_compacted", store.conversations().fork_compacted(t.id, t.session, old.fence, turn, "p", &body).await);
    assert_eq!(common::extend_lease(&store, t.id, turn, "worker-old").await.unwrap(), LeaseState::Lost);
    assert!(
        !store.turns().release_turn(t.id, turn, "worker-old").await.unwrap(),
        "the old worker cannot hand the turn back"
    );

    // Nothing of it was stored: the transcript, the turn and the session list are as they were.
    assert_eq!(store.conversations().session_messages(t.id, t.session).await.unwrap().len(), stored);
    assert_eq!(store.turns().turn_state(t.id, turn).await.unwrap().0, TurnStatus::Running);
    assert!(store.turns().turn_pending_interaction(t.id, turn).await.unwrap().is_none());
    assert_eq!(
        store.conversations().list_sessions(t.id, None, 10, 0).await.unwrap().len(),
        1,
        "no compacted child session"
    );
    assert_eq!(common::extend_lease(&store, t.id, turn, "worker-new").await.unwrap(), LeaseState::Held);

    // The new owner writes on.
    let answer = ChatMessage::assistant("the answer");
    assert!(matches!(
        store.conversations().append_message(t.id, t.session, new.fence, turn, 1, &answer).await.unwrap(),
        Appended::At(_)
    ));
    complete(&store, &t, turn, "worker-new", new.fence, "the answer", None).await.unwrap();
    let (status, outcome) = store.turns().turn_state(t.id, turn).await.unwrap();
    assert_eq!((status, outcome.map(|o| o.content)), (TurnStatus::Completed, Some("the answer".to_owned())));
}

/// The fence is checked on its own, not only the lease owner: a claim that reuses an owner
/// name (a restarted pod, a lock granted twice after Redis lost it) still fences out the old one.
#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn the_fence_refuses_a_stale_writer_even_under_the_same_owner_name(pool: PgPool) {
    let (store, t, turn) = common::hello_queued(&pool).await;
    let first = common::claim_for(&store, t.id, t.session, "worker", 1, Duration::ZERO).await;
    common::until_claimable(&store, t.id, t.session).await;
    let second = common::claim(&store, t.id, t.session, "worker", 1).await;
    assert!(second.fence > first.fence);

    let late = ChatMessage::assistant("late");
    fenced("finish_turn", complete(&store, &t, turn, "worker", first.fence, "late", Some((1, &late))).await);
    let prompt = json!({"question": "which?"});
    let park = common::park(t.agent, "call-1", hermes_core::InteractionKind::Clarify, &prompt);
    fenced("park_turn", store.turns().park_turn(t.id, t.session, turn, "worker", first.fence, &park).await);
    fenced("append_message", store.conversations().append_message(t.id, t.session, first.fence, turn, 1, &late).await);
    assert_eq!(store.turns().turn_state(t.id, turn).await.unwrap().0, TurnStatus::Running);
    assert_eq!(common::messages_in(&pool, t.session).await, 0);

    // The current fence parks the turn, which leaves its lease.
    let pending = store.turns().park_turn(t.id, t.session, turn, "worker", second.fence, &park).await.unwrap();
    assert_eq!(store.turns().turn_state(t.id, turn).await.unwrap().0, TurnStatus::Waiting);
    assert_eq!(store.turns().turn_pending_interaction(t.id, turn).await.unwrap().map(|p| p.id), Some(pending.id));
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn the_fence_only_moves_forward_whatever_token_a_claim_brings(pool: PgPool) {
    let (store, t, turn) = common::hello_queued(&pool).await;
    let mut fences = Vec::new();
    // A Redis token far ahead, then stale ones (Redis was flushed and counts from 0 again).
    for token in [100, 5, 0, 1] {
        let claimed =
            common::claim_for(&store, t.id, t.session, &format!("worker-{token}"), token, Duration::ZERO).await;
        assert!(claimed.fence >= token, "the fence {} is at least the token {token}", claimed.fence);
        fences.push(claimed.fence);
        common::until_claimable(&store, t.id, t.session).await;
    }
    assert!(fences.windows(2).all(|w| w[0] < w[1]), "fences only grow: {fences:?}");
    // Every fence but the last one is refused.
    let latest = *fences.last().unwrap();
    for fence in &fences[..fences.len() - 1] {
        fenced(
            "append_message",
            store.conversations().append_message(t.id, t.session, *fence, turn, 0, &ChatMessage::user("x")).await,
        );
    }
    let written = store
        .conversations()
        .append_message(t.id, t.session, latest, turn, 0, &ChatMessage::user("hello"))
        .await
        .unwrap();
    assert!(matches!(written, Appended::At(_)));
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_sender_whose_outbox_claim_lapsed_records_nothing_and_parts_never_go_back(pool: PgPool) {
    use hermes_core::outbox::{Destination, OutboxPayload};
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let channel = common::channel(&store, &t, &common::secrets(), "bot-1").await;
    let dest = Destination::chat(hermes_core::Platform::Telegram, channel.id, "42", None);
    store.chat().enqueue_outbox(t.id, &dest, "reply-1", &OutboxPayload::text("a long reply")).await.unwrap();
    let short = Duration::from_millis(200);
    let slow = store.system().claim_outbox(1, short, None).await.unwrap().pop().expect("claimed");
    assert!(store.system().outbox_part_sent(&slow, 1, &["m1".into()]).await.unwrap(), "its own claim records");
    // The slow sender's platform holds it past its lease; another pod claims the reply.
    common::until("the claim lapses", || async {
        !store.system().claim_outbox(1, Duration::from_secs(60), None).await.unwrap().is_empty()
    })
    .await;
    let fresh: uuid::Uuid = sqlx::query_scalar("SELECT lease_owner FROM outbox").fetch_one(&pool).await.unwrap();
    assert_ne!(fresh, slow.lease, "a new claim, a new token");
    let fast = hermes_store::OutboxItem { lease: fresh, sent_parts: 1, ..slow.clone() };
    assert!(store.system().outbox_part_sent(&fast, 2, &["m1".into(), "m2".into()]).await.unwrap());
    // What the slow sender records now is refused: it cannot send more, settle or go back.
    assert!(!store.system().outbox_part_sending(&slow, 1, short).await.unwrap(), "not ours to send");
    assert!(!store.system().outbox_part_sent(&slow, 1, &["m1".into()]).await.unwrap());
    assert!(!store.system().outbox_retry(&slow, short, "late").await.unwrap());
    assert!(!store.system().outbox_part_sent(&fast, 1, &["m1".into()]).await.unwrap(), "parts never go backwards");
    let (parts, status): (i32, String) =
        sqlx::query_as("SELECT sent_parts, status FROM outbox").fetch_one(&pool).await.unwrap();
    assert_eq!((parts, status.as_str()), (2, "pending"));
    assert!(store.system().outbox_sent(&fast).await.unwrap());
}
