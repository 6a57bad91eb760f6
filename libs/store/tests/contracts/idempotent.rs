//! What arrives twice is done once: a resumed turn's steps and tool results, a chat update the
//! platform sends again, a request retried with its Idempotency-Key, a webhook delivery retried
//! by its sender, an outbox message queued twice.

use hermes_core::outbox::{Destination, OutboxPayload};
use hermes_core::{ChatMessage, Platform, Role};
use hermes_store::webhooks::{Started, WebhookStart};
use hermes_store::{Accepted, Appended, Enqueued, Idempotency, StoreError, TurnStatus};
use serde_json::json;
use sqlx::PgPool;

use crate::common;

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_resumed_turn_writing_its_steps_again_stores_each_once(pool: PgPool) {
    let (store, t, turn) = common::hello_queued(&pool).await;
    let w = common::claim(&store, t.id, t.session, "worker", 1).await;
    let (s, f) = (t.session, w.fence);
    let input = ChatMessage::user("hello");
    assert_eq!(store.conversations().begin_turn(t.id, s, f, turn, &input, "prompt one").await.unwrap(), "prompt one");
    // Resumed: the input is not stored again and the first frozen prompt wins.
    assert_eq!(store.conversations().begin_turn(t.id, s, f, turn, &input, "prompt two").await.unwrap(), "prompt one");

    // Every step below is appended by the same worker to the same turn.
    let append = async |step: i32, msg: &ChatMessage| {
        store.conversations().append_message(t.id, s, f, turn, step, msg).await.unwrap()
    };
    let calling = ChatMessage::assistant("let me look");
    assert!(matches!(append(1, &calling).await, Appended::At(_)));
    assert_eq!(append(1, &calling).await, Appended::AlreadyStored);
    let result = ChatMessage::tool_result("call-1", "terminal", "a.txt");
    assert!(matches!(append(1, &result).await, Appended::At(_)));
    assert_eq!(append(1, &result).await, Appended::AlreadyStored);
    // Another call of the same model response, and a call id reused by a later response
    // (ids are unique only within one response), are results of their own.
    let other = ChatMessage::tool_result("call-2", "terminal", "b.txt");
    assert!(matches!(append(1, &other).await, Appended::At(_)));
    let later = ChatMessage::tool_result("call-1", "terminal", "c.txt");
    assert!(matches!(append(2, &later).await, Appended::At(_)));

    // The final answer was stored before a crash; finishing stores it with the outcome once.
    let answer = ChatMessage::assistant("done");
    assert!(matches!(append(3, &answer).await, Appended::At(_)));
    store
        .turns()
        .finish_turn(
            t.id,
            s,
            turn,
            "worker",
            f,
            TurnStatus::Completed,
            &common::answered("done"),
            Some((3, &answer)),
            &[],
        )
        .await
        .unwrap();

    let stored: Vec<_> = store
        .conversations()
        .session_messages(t.id, s)
        .await
        .unwrap()
        .into_iter()
        .map(|m| (m.turn_step, m.message.role, m.message.text()))
        .collect();
    assert_eq!(
        stored,
        vec![
            (Some(0), Role::User, "hello".to_owned()),
            (Some(1), Role::Assistant, "let me look".to_owned()),
            (Some(1), Role::Tool, "a.txt".to_owned()),
            (Some(1), Role::Tool, "b.txt".to_owned()),
            (Some(2), Role::Tool, "c.txt".to_owned()),
            (Some(3), Role::Assistant, "done".to_owned()),
        ]
    );
    assert_eq!(store.turns().turn_state(t.id, turn).await.unwrap().0, TurnStatus::Completed);
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_chat_update_sent_twice_is_taken_in_once(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let payload = json!({"update_id": 7, "text": "hi"});
    let take_in = async || {
        let turn = common::turn_in(t.agent, t.session, "hi");
        store.chat().accept_inbound(t.id, "telegram:bot-1", "update-7", &payload, Some(turn), None).await.unwrap()
    };
    let first = take_in().await;
    assert!(matches!(first, Accepted::Turn { session, .. } if session == t.session), "{first:?}");
    assert!(store.chat().inbound_seen(t.id, "telegram:bot-1", "update-7").await.unwrap());
    let again = take_in().await;
    assert_eq!(again, Accepted::Duplicate);
    assert_eq!(common::turns_in(&pool, t.session).await, 1, "one turn for the update");
    // The dedupe key is the tenant's: another tenant's update with the same key is new.
    let other = common::tenant(&store, "other").await;
    assert!(!store.chat().inbound_seen(other.id, "telegram:bot-1", "update-7").await.unwrap());
    assert_eq!(
        store.chat().accept_inbound(other.id, "telegram:bot-1", "update-7", &payload, None, None).await.unwrap(),
        Accepted::Stored
    );
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_request_retried_with_its_idempotency_key_joins_the_first_turn(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let (key, _) = store.tenancy().create_api_key(t.id, None, "ci", None).await.unwrap();
    let idem = Idempotency { api_key: key.id, key: "retry-1".into(), fingerprint: "request-a".into() };
    // Two pods take the same retried request at once.
    let (a, b) = tokio::join!(
        store.turns().enqueue_turn_once(t.id, common::turn_in(t.agent, t.session, "hi"), &idem),
        store.turns().enqueue_turn_once(t.id, common::turn_in(t.agent, t.session, "hi"), &idem),
    );
    let ids = |e: Enqueued| match e {
        Enqueued::New { session, turn } => (true, session, turn),
        Enqueued::Replay { session, turn } => (false, session, turn),
    };
    let (a, b) = (ids(a.unwrap()), ids(b.unwrap()));
    assert!(a.0 != b.0, "one is new and one joins it: {a:?} {b:?}");
    assert_eq!((a.1, a.2), (b.1, b.2), "both answer with the same turn");
    assert_eq!(common::turns_in(&pool, t.session).await, 1);

    let reused = Idempotency { fingerprint: "request-b".into(), ..idem.clone() };
    let refused = store.turns().enqueue_turn_once(t.id, common::turn_in(t.agent, t.session, "other"), &reused).await;
    assert!(matches!(refused, Err(StoreError::Invalid(_))), "a key reused for another request: {refused:?}");
    assert_eq!(common::turns_in(&pool, t.session).await, 1);
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_webhook_delivery_retried_by_its_sender_starts_once(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let (hook, _) = store
        .automation()
        .create_webhook(t.id, &common::webhook(&t, "github"), Some(&common::secrets()))
        .await
        .unwrap();
    let start = || WebhookStart::Turn(Box::new(common::turn_in(t.agent, t.session, "a push")));
    let first = store.system().accept_webhook(&hook, &["delivery-1".into()], "push", start()).await.unwrap();
    assert!(matches!(first, Some(Started::Turn { session, .. }) if session == t.session), "{first:?}");
    assert!(
        store.system().accept_webhook(&hook, &["delivery-1".into()], "push", start()).await.unwrap().is_none(),
        "a retry starts nothing"
    );
    assert!(
        store.system().accept_webhook(&hook, &["delivery-2".into()], "push", start()).await.unwrap().is_some(),
        "a new delivery starts"
    );
    assert_eq!(common::turns_in(&pool, t.session).await, 2);
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn an_outbox_message_queued_twice_under_one_key_is_sent_once(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let channel = common::channel(&store, &t, &common::secrets(), "bot-1").await;
    let dest = Destination::chat(Platform::Telegram, channel.id, "42", None);
    let payload = OutboxPayload::text("paired");
    store.chat().enqueue_outbox(t.id, &dest, "pairing:42", &payload).await.unwrap();
    store.chat().enqueue_outbox(t.id, &dest, "pairing:42", &payload).await.unwrap();
    let claimed = store.system().claim_outbox(10, common::LEASE, None).await.unwrap();
    assert_eq!(claimed.len(), 1, "{claimed:?}");
    assert_eq!(claimed[0].payload, payload);
}
