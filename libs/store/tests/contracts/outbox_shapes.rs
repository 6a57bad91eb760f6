//! What the store writes into the outbox when a turn ends or parks (its answer, its question)
//! parses as the one shape the gateway reads, `hermes_core::outbox`; it is written by the
//! store's own transaction (v7 ids), and skips a chat whose channel is gone. No trigger writes
//! them any more (migration 0059; `schema.rs` tests its upgrade stop).

use hermes_core::outbox::{AnswerStatus, Destination, OutboxPayload};
use hermes_core::{ChatMessage, InteractionKind, Platform, TurnOutcome};
use hermes_store::{NewTurn, Park, TurnStatus};
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::common;

/// The outbox rows of a tenant, by dedupe key.
async fn outbox(pool: &PgPool, tenant: hermes_core::TenantId) -> Vec<(Destination, OutboxPayload)> {
    let rows: Vec<(Value, Value)> =
        sqlx::query_as("SELECT destination, payload FROM outbox WHERE tenant_id = $1 ORDER BY dedupe_key")
            .bind(tenant.as_uuid())
            .fetch_all(pool)
            .await
            .unwrap();
    rows.into_iter()
        .map(|(dest, payload)| {
            let dest = serde_json::from_value(dest.clone()).unwrap_or_else(|e| panic!("destination {dest}: {e}"));
            let payload = serde_json::from_value(payload.clone()).unwrap_or_else(|e| panic!("payload {payload}: {e}"));
            (dest, payload)
        })
        .collect()
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn an_answer_for_two_chats_is_two_rows_of_the_gateways_shape(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "alpha").await;
    let channel = common::channel(&store, &t, &common::secrets(), "alpha-bot").await.id;
    let mut reply_to = Destination::chat(Platform::Telegram, channel, "42", None);
    reply_to.reply_to = Some(7);
    reply_to.also.push(Destination::chat(Platform::Telegram, channel, "43", Some("9".into())));
    let new = NewTurn { reply_to: Some(reply_to), ..common::turn_in(t.agent, t.session, "hi") };
    let turn = store.turns().enqueue_turn(t.id, new).await.unwrap().1;
    let claimed = common::claim(&store, t.id, t.session, "worker-1", 1).await;
    store
        .conversations()
        .begin_turn(t.id, t.session, claimed.fence, turn, &ChatMessage::user("hi"), "prompt")
        .await
        .unwrap();
    let outcome = common::answered("Hello!");
    store
        .turns()
        .finish_turn(t.id, t.session, turn, "worker-1", claimed.fence, TurnStatus::Completed, &outcome, None, &[])
        .await
        .unwrap();

    let rows = outbox(&pool, t.id).await;
    assert_eq!(rows.len(), 2, "one row per chat");
    let (first, second) = (&rows[0], &rows[1]);
    assert_eq!((first.0.chat_id.as_str(), first.0.reply_to), ("42", Some(7)));
    assert!(first.0.also.is_empty(), "the further chats are rows of their own, not repeated");
    assert_eq!((second.0.chat_id.as_str(), second.0.thread.as_deref()), ("43", Some("9")));
    for (_, payload) in &rows {
        let OutboxPayload::Answer { status, outcome: Some(TurnOutcome { content, .. }) } = payload else {
            panic!("an answer: {payload:?}")
        };
        assert_eq!((*status, content.as_str()), (AnswerStatus::Completed, "Hello!"));
    }
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_parked_chat_turns_question_is_an_interaction_row(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "alpha").await;
    let channel = common::channel(&store, &t, &common::secrets(), "alpha-bot").await.id;
    let reply_to = Destination::chat(Platform::Telegram, channel, "42", None);
    let new = NewTurn { reply_to: Some(reply_to.clone()), ..common::turn_in(t.agent, t.session, "clean up") };
    let turn = store.turns().enqueue_turn(t.id, new).await.unwrap().1;
    let claimed = common::claim(&store, t.id, t.session, "worker-1", 1).await;
    let prompt = json!({"command": "rm -rf build", "pattern_keys": ["rm"]});
    let park = Park {
        agent: t.agent,
        call_id: "call-1",
        kind: InteractionKind::Approval,
        prompt: &prompt,
        timeout: common::LEASE,
    };
    let asked = store.turns().park_turn(t.id, t.session, turn, "worker-1", claimed.fence, &park).await.unwrap();

    let rows = outbox(&pool, t.id).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].0, reply_to);
    let OutboxPayload::Interaction { interaction } = &rows[0].1 else { panic!("a question: {:?}", rows[0].1) };
    assert_eq!((interaction.id, interaction.kind.as_str()), (asked.id, InteractionKind::Approval.as_str()));
    assert_eq!(interaction.prompt, prompt);
}

/// A turn with `reply_to`, claimed and begun by `worker-1`: (turn, fence).
async fn running_chat_turn(
    store: &hermes_store::Store,
    t: &common::Tenant,
    reply_to: Destination,
) -> (hermes_core::TurnId, i64) {
    let new = NewTurn { reply_to: Some(reply_to), ..common::turn_in(t.agent, t.session, "hi") };
    let turn = store.turns().enqueue_turn(t.id, new).await.unwrap().1;
    let claimed = common::claim(store, t.id, t.session, "worker-1", 1).await;
    store
        .conversations()
        .begin_turn(t.id, t.session, claimed.fence, turn, &ChatMessage::user("hi"), "prompt")
        .await
        .unwrap();
    (turn, claimed.fence)
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn the_store_writes_the_answer_row_itself_and_skips_a_chat_whose_channel_is_gone(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "alpha").await;
    let kept = common::channel(&store, &t, &common::secrets(), "alpha-bot").await.id;
    let gone = common::channel(&store, &t, &common::secrets(), "alpha-old-bot").await.id;
    let mut reply_to = Destination::chat(Platform::Telegram, kept, "42", None);
    reply_to.also.push(Destination::chat(Platform::Telegram, gone, "43", None));
    let (turn, fence) = running_chat_turn(&store, &t, reply_to).await;
    assert!(store.chat().delete_channel(t.id, gone).await.unwrap(), "the second bot is removed while the turn runs");
    let outcome = common::answered("Hello!");
    store
        .turns()
        .finish_turn(t.id, t.session, turn, "worker-1", fence, TurnStatus::Failed, &outcome, None, &[])
        .await
        .unwrap();

    let rows: Vec<(uuid::Uuid, String)> = sqlx::query_as("SELECT id, dedupe_key FROM outbox WHERE tenant_id = $1")
        .bind(t.id.as_uuid())
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(rows.len(), 1, "the chat of the removed bot gets no row: {rows:?}");
    assert_eq!(rows[0].1, format!("turn:{}:answer", turn.as_uuid()));
    assert_eq!(rows[0].0.get_version_num(), 7, "written by the store (v7 ids)");
    let OutboxPayload::Answer { status, .. } = &outbox(&pool, t.id).await[0].1 else { panic!("an answer") };
    assert_eq!(*status, AnswerStatus::Failed);
}
