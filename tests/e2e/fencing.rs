//! The session lock (Redis) and the fence (Postgres): a paused "zombie" worker cannot write
//! after another worker took the session over, even if Redis lost the fencing counter.

use std::time::Duration;

use hermes_cache::Cache;
use hermes_core::ChatMessage;
use hermes_store::{NewTurn, StoreError, TurnStatus, TurnTarget};

use crate::harness::{Roles, Team};

#[tokio::test]
async fn a_zombie_worker_is_fenced_out_of_the_session_after_a_takeover() {
    let Team { env, tenant, agent, .. } = Team::start(Roles::API_ONLY, "helper").await;
    let cache = Cache::connect(&env.config.redis.url, &env.config.redis.key_prefix).await.unwrap();
    let locks = cache.session_locks();
    let new = NewTurn::new(
        agent.id,
        TurnTarget::New { source: hermes_core::SessionSource::Api, user_key: "test-user".into(), history: vec![] },
        ChatMessage::user("hi"),
    );
    let (session, turn) = env.store.turns().enqueue_turn(tenant, new).await.unwrap();

    // Worker A takes the lock and the turn, writes, then stalls past its lock and lease.
    let short = Duration::from_millis(400);
    let a_lock = locks.try_acquire(session, "worker-a", short).await.unwrap().expect("free lock");
    assert!(locks.try_acquire(session, "worker-b", short).await.unwrap().is_none(), "one holder at a time");
    let a = env.store.turns().claim_next_turn(tenant, session, "worker-a", short, a_lock.token).await.unwrap().unwrap();
    env.store
        .conversations()
        .append_message(tenant, session, a.fence, turn, 0, &ChatMessage::user("hi"))
        .await
        .unwrap();
    // A stalls past its 400 ms lock and lease: the sleep is the behaviour under test.
    tokio::time::sleep(Duration::from_millis(600)).await;

    // Worker B takes over after expiry.
    let b_lock =
        locks.try_acquire(session, "worker-b", Duration::from_secs(5)).await.unwrap().expect("expired lock is free");
    assert!(b_lock.token > a_lock.token);
    assert!(!locks.extend(&a_lock, short).await.unwrap(), "A cannot extend B's lock");
    locks.release(&a_lock).await.unwrap();
    assert!(locks.try_acquire(session, "worker-c", short).await.unwrap().is_none(), "A's release left B's lock alone");
    let b = env
        .store
        .turns()
        .claim_next_turn(tenant, session, "worker-b", Duration::from_secs(5), b_lock.token)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(b.turn_id, turn);
    assert_eq!(b.attempt, 2);
    assert!(b.fence > a.fence);

    // The zombie wakes up: every write is refused.
    let late = env
        .store
        .conversations()
        .append_message(tenant, session, a.fence, turn, 1, &ChatMessage::assistant("late"))
        .await;
    assert!(matches!(late, Err(StoreError::Fenced)), "{late:?}");
    let outcome = hermes_core::TurnOutcome {
        content: "late".into(),
        finish_reason: hermes_core::FinishReason::Stop,
        usage: Default::default(),
        error: None,
        error_code: None,
        session_id: None,
    };
    let paid = hermes_store::ModelCall {
        purpose: hermes_core::CallPurpose::Main,
        provider: "openai".into(),
        model: "gpt-4o-mini".into(),
        key_id: Some("k1".into()),
        usage: hermes_core::Usage {
            prompt_tokens: 12,
            completion_tokens: 3,
            total_tokens: 15,
            cached_tokens: 8,
            cache_write_tokens: 0,
            reasoning_tokens: 2,
            priority: true,
        },
        latency_ms: 250,
    };
    let finish = env
        .store
        .turns()
        .finish_turn(
            tenant,
            session,
            turn,
            "worker-a",
            a.fence,
            TurnStatus::Completed,
            &outcome,
            Some((1, &ChatMessage::assistant("late"))),
            std::slice::from_ref(&paid),
        )
        .await;
    assert!(matches!(finish, Err(StoreError::Fenced)), "{finish:?}");
    // A's model call was paid for: it is metered even though A's answer is refused.
    assert_eq!(env.store.tenancy().turn_model_calls(tenant, turn).await.unwrap(), vec![paid]);
    let stale = hermes_store::HeldLease { tenant, turn, owner: "worker-a" };
    assert_eq!(
        env.store.system().extend_leases(&[stale], short).await.unwrap(),
        vec![(turn, hermes_store::LeaseState::Lost)]
    );
    // A's stale finish stored nothing: not the answer, not the outcome.
    assert_eq!(
        env.store.conversations().session_messages(tenant, session).await.unwrap().len(),
        1,
        "only the user input so far"
    );

    // B writes; a replayed step is stored once.
    let answer = ChatMessage::assistant("from B");
    env.store.conversations().append_message(tenant, session, b.fence, turn, 1, &answer).await.unwrap();
    let again = env.store.conversations().append_message(tenant, session, b.fence, turn, 1, &answer).await.unwrap();
    assert_eq!(again, hermes_store::Appended::AlreadyStored);
    env.store
        .turns()
        .finish_turn(tenant, session, turn, "worker-b", b.fence, TurnStatus::Completed, &outcome, None, &[])
        .await
        .unwrap();
    let texts = env.session_texts(tenant, session).await;
    assert_eq!(texts, ["hi", "from B"]);

    // If Redis forgets the counter, Postgres still moves the fence forward.
    let (_, turn2) = env
        .store
        .turns()
        .enqueue_turn(tenant, NewTurn::new(agent.id, TurnTarget::Existing(session), ChatMessage::user("more")))
        .await
        .unwrap();
    let c = env.store.turns().claim_next_turn(tenant, session, "worker-c", short, 1).await.unwrap().unwrap();
    assert_eq!(c.turn_id, turn2);
    assert!(c.fence > b.fence, "the fence never goes back: {} <= {}", c.fence, b.fence);
    env.stop().await;
}
