//! Session titles written by a model: only over the title the service made from a new
//! session's first message, only in its first exchange, never over a person's, never in
//! another tenant's session.

use hermes_core::{ChatMessage, SessionId, SessionSource};
use hermes_store::{NewTurn, Store, StoreError, TurnTarget};
use sqlx::PgPool;

use crate::common::{self, Tenant};

/// A new chat session begun by `text`.
async fn chat_session(store: &Store, t: &Tenant, text: &str) -> SessionId {
    let target = TurnTarget::New { source: SessionSource::Telegram, user_key: "tg:42".into(), history: Vec::new() };
    store.turns().enqueue_turn(t.id, NewTurn::new(t.agent, target, ChatMessage::user(text))).await.unwrap().0
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_model_titles_only_a_new_sessions_first_exchange_and_never_over_a_person(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let other = common::tenant(&store, "globex").await;
    let conversations = store.conversations();
    assert!(!conversations.awaits_model_title(t.id, t.session).await.unwrap(), "a title given at creation stays");

    let session = chat_session(&store, &t, "help me plan a trip to lisbon").await;
    assert_eq!(
        conversations.session(t.id, session).await.unwrap().title.as_deref(),
        Some("help me plan a trip to lisbon")
    );
    assert!(conversations.awaits_model_title(t.id, session).await.unwrap());
    assert!(matches!(conversations.awaits_model_title(other.id, session).await, Err(StoreError::NotFound)));
    assert!(!conversations.set_model_title(other.id, session, "Stolen").await.unwrap(), "not another tenant's");
    assert!(conversations.set_model_title(t.id, session, "Lisbon trip").await.unwrap());
    assert!(!conversations.awaits_model_title(t.id, session).await.unwrap(), "titled once");
    assert!(!conversations.set_model_title(t.id, session, "Again").await.unwrap());
    assert_eq!(conversations.session(t.id, session).await.unwrap().title.as_deref(), Some("Lisbon trip"));

    // A person's rename before the model answers wins, and a model's title may be renamed.
    let renamed = chat_session(&store, &t, "what is rust").await;
    conversations.set_session_title(t.id, renamed, Some("My Rust notes")).await.unwrap();
    assert!(!conversations.set_model_title(t.id, renamed, "Learning Rust").await.unwrap());
    assert_eq!(conversations.session(t.id, renamed).await.unwrap().title.as_deref(), Some("My Rust notes"));
    conversations.set_session_title(t.id, session, Some("Mine now")).await.unwrap();
    assert_eq!(conversations.session(t.id, session).await.unwrap().title.as_deref(), Some("Mine now"));

    // Past the first exchange (or its retry after a failure), and in a fork, no model titles it.
    let long = chat_session(&store, &t, "first").await;
    common::queue(&store, &t, long, "second").await;
    assert!(conversations.awaits_model_title(t.id, long).await.unwrap(), "a second turn may follow a failed first");
    common::queue(&store, &t, long, "third").await;
    assert!(!conversations.awaits_model_title(t.id, long).await.unwrap());
    let fork = conversations.fork_session(t.id, session, None, None).await.unwrap();
    assert!(!conversations.awaits_model_title(t.id, fork).await.unwrap());
    assert!(conversations.set_model_title(t.id, fork, " ").await.is_err(), "an empty title is refused");
}
