//! A new conversation of one message is written in one statement, the rest in a transaction:
//! both must store the same session and turn, and neither may use another tenant's agent.

use hermes_core::{ChatMessage, SessionSource};
use hermes_store::{NewTurn, TurnTarget};
use sqlx::{PgPool, Row};

use crate::common;

fn new_conversation(agent: hermes_core::AgentId, history: Vec<ChatMessage>) -> NewTurn {
    NewTurn {
        target: TurnTarget::New { source: SessionSource::Api, user_key: "user-9".into(), history },
        instructions: Some("be brief".into()),
        stream: true,
        notify_hub: Some("hub-1".into()),
        ..common::turn_in(agent, hermes_core::SessionId::new(), "what is the weather like in Lisbon")
    }
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_one_message_conversation_stores_what_the_transaction_stores(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let (fast_session, fast_turn) = store.turns().enqueue_turn(t.id, new_conversation(t.agent, vec![])).await.unwrap();
    let seeded = vec![ChatMessage::user("earlier"), ChatMessage::assistant("noted")];
    let (tx_session, tx_turn) = store.turns().enqueue_turn(t.id, new_conversation(t.agent, seeded)).await.unwrap();

    let session = |id: hermes_core::SessionId| {
        sqlx::query("SELECT tenant_id, agent_id, source, next_seq, user_key, title FROM sessions WHERE id = $1")
            .bind(id.as_uuid())
            .fetch_one(&pool)
    };
    let (fast, seeded) = (session(fast_session).await.unwrap(), session(tx_session).await.unwrap());
    for col in ["tenant_id", "agent_id"] {
        assert_eq!(fast.get::<uuid::Uuid, _>(col), seeded.get::<uuid::Uuid, _>(col), "{col}");
    }
    for col in ["source", "user_key"] {
        assert_eq!(fast.get::<Option<String>, _>(col), seeded.get::<Option<String>, _>(col), "{col}");
    }
    let title = fast.get::<Option<String>, _>("title");
    assert_eq!(title.as_deref(), Some("what is the weather like in Lisbon"), "titled by its first message");
    assert_eq!(seeded.get::<Option<String>, _>("title").as_deref(), Some("earlier"));
    assert_eq!(fast.get::<i32, _>("next_seq"), 1, "the input will be message 1");
    assert_eq!(seeded.get::<i32, _>("next_seq"), 3, "after two seeded messages");

    let turn = |id: hermes_core::TurnId| {
        sqlx::query(
            "SELECT session_id, input, instructions, stream, notify_hub, status::text AS status FROM turns WHERE id = $1",
        )
        .bind(id.as_uuid())
        .fetch_one(&pool)
    };
    let (fast, seeded) = (turn(fast_turn).await.unwrap(), turn(tx_turn).await.unwrap());
    assert_eq!(fast.get::<uuid::Uuid, _>("session_id"), fast_session.as_uuid());
    for col in ["instructions", "notify_hub", "status"] {
        assert_eq!(fast.get::<Option<String>, _>(col), seeded.get::<Option<String>, _>(col), "{col}");
    }
    assert_eq!(fast.get::<serde_json::Value, _>("input"), seeded.get::<serde_json::Value, _>("input"));
    assert!(fast.get::<bool, _>("stream"));

    // The worker claims it like any other.
    let claimed = common::claim(&store, t.id, fast_session, "w1", 1).await;
    assert_eq!(claimed.turn_id, fast_turn);
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_one_message_conversation_cannot_name_another_tenants_agent(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let other = common::tenant(&store, "globex").await;
    let refused = store.turns().enqueue_turn(t.id, new_conversation(other.agent, vec![])).await;
    assert!(refused.is_err(), "a session of tenant A under tenant B's agent must not be stored");
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM turns").fetch_one(&pool).await.unwrap();
    assert_eq!(stored, 0, "nothing half-written");
}
