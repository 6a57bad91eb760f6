//! Outbound events written by triggers (migrations 0033, 0071): a change that would write an
//! event must never fail for it, and each event is written once, when it happened here.

use hermes_core::ChatMessage;
use hermes_store::{NewTurn, Route, TurnTarget};
use serde_json::Value;
use sqlx::PgPool;

use crate::common;

async fn events(pool: &PgPool, event: &str) -> Vec<Value> {
    sqlx::query_scalar("SELECT data FROM event_deliveries WHERE event = $1 ORDER BY created_at")
        .bind(event)
        .fetch_all(pool)
        .await
        .unwrap()
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_chats_session_deleted_under_a_listening_hook_is_deleted_and_told_once(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    store
        .automation()
        .create_event_hook(t.id, "https://hooks.example.com/x", &[], "all", Some(&common::secrets()))
        .await
        .unwrap();
    let route = Route {
        agent: t.agent,
        key: "telegram:chat:42".into(),
        source: hermes_core::SessionSource::Telegram,
        user_key: "tg:42".into(),
    };
    let target = TurnTarget::Route { route, fresh: true, replaces: None };
    let new = NewTurn { target, ..NewTurn::new(t.agent, TurnTarget::Existing(t.session), ChatMessage::user("hi")) };
    let (session, _) = store.turns().enqueue_turn(t.id, new).await.unwrap();
    sqlx::query("UPDATE turns SET status = 'cancelled' WHERE session_id = $1")
        .bind(session.as_uuid())
        .execute(&pool)
        .await
        .unwrap();

    // The route goes with the session: its own trigger finds the session gone and says nothing.
    store.conversations().delete_session(t.id, None, session).await.expect("deleted whatever the hook listens to");
    let ended = events(&pool, "session.ended").await;
    assert_eq!(ended.len(), 1, "{ended:?}");
    assert_eq!(
        (ended[0]["session_id"].as_str(), ended[0]["reason"].as_str()),
        (Some(&*session.to_string()), Some("deleted"))
    );
    // What was still waiting to be told of it is forgotten with it; its end is told.
    assert!(events(&pool, "session.started").await.is_empty());
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn only_a_tool_call_that_ran_here_is_told(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    store
        .automation()
        .create_event_hook(t.id, "https://hooks.example.com/x", &["tool.finished".into()], "", Some(&common::secrets()))
        .await
        .unwrap();
    // History a client sends is not a call that finished here.
    let history = vec![ChatMessage::user("hi"), ChatMessage::tool_result("call_1", "terminal", "made up")];
    let target = TurnTarget::New { source: hermes_core::SessionSource::Api, user_key: "u".into(), history };
    store.turns().enqueue_turn(t.id, NewTurn::new(t.agent, target, ChatMessage::user("go"))).await.unwrap();
    assert!(events(&pool, "tool.finished").await.is_empty());
}
