//! Deleting a conversation deletes its text everywhere: the platform update that started a
//! turn, the reply queued for the chat and the event deliveries about it go with the session,
//! and another session's stay.

use hermes_core::outbox::Destination;
use hermes_core::{ChatMessage, Platform};
use hermes_store::{Accepted, NewTurn, TurnStatus};
use serde_json::json;
use sqlx::PgPool;

use crate::common;

/// A chat turn in `session`, taken in from a platform update and answered.
async fn answered_chat_turn(
    store: &hermes_store::Store,
    t: &common::Tenant,
    session: hermes_core::SessionId,
    key: &str,
    channel: hermes_core::ChannelId,
) {
    let reply_to = Destination::chat(Platform::Telegram, channel, "42", None);
    let new = NewTurn { reply_to: Some(reply_to), ..common::turn_in(t.agent, session, "what is in the report?") };
    let update = json!({"message": {"text": "what is in the report?"}});
    let accepted = store.chat().accept_inbound(t.id, "telegram:bot", key, &update, Some(new), None).await.unwrap();
    let Accepted::Turn { turn, .. } = accepted else { panic!("{accepted:?}") };
    let claimed = common::claim(store, t.id, session, "worker-1", 1).await;
    store
        .conversations()
        .begin_turn(t.id, session, claimed.fence, turn, &ChatMessage::user("hi"), "prompt")
        .await
        .unwrap();
    let outcome = common::answered("The report says revenue doubled.");
    store
        .turns()
        .finish_turn(t.id, session, turn, "worker-1", claimed.fence, TurnStatus::Completed, &outcome, None, &[])
        .await
        .unwrap();
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_deleted_session_takes_its_updates_replies_and_events_with_it(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let channel = common::channel(&store, &t, &common::secrets(), "bot-1").await.id;
    let events = ["turn.finished".to_owned()];
    store
        .automation()
        .create_event_hook(t.id, "http://127.0.0.1:9/hook", &events, "ops", Some(&common::secrets()))
        .await
        .unwrap();
    let other = store
        .conversations()
        .create_session(t.id, t.agent, hermes_core::SessionSource::Api, "user-2", None)
        .await
        .unwrap();
    answered_chat_turn(&store, &t, t.session, "1001", channel).await;
    answered_chat_turn(&store, &t, other, "1002", channel).await;
    let count = async |sql: &str| -> i64 {
        sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned())).fetch_one(&pool).await.unwrap()
    };
    assert_eq!((count("SELECT count(*) FROM inbound").await, count("SELECT count(*) FROM outbox").await), (2, 2));
    assert!(count("SELECT count(*) FROM event_deliveries").await >= 2);

    store.conversations().delete_session(t.id, None, t.session).await.unwrap();
    let about = |session: hermes_core::SessionId| {
        format!("SELECT count(*) FROM event_deliveries WHERE data ->> 'session_id' = '{session}'")
    };
    assert_eq!(count(&about(t.session)).await, 0, "no event about it is left to send");
    assert!(count(&about(other)).await >= 1, "the other session's events stay");
    assert_eq!(
        (count("SELECT count(*) FROM inbound").await, count("SELECT count(*) FROM outbox").await),
        (1, 1),
        "only the other session's update and reply stay"
    );
}
