//! Redis as an HA install runs it: a primary with two replicas behind three Sentinels
//! (`deploy/dev/redis-sentinel.sh`), every pod given the Sentinels in a `redis+sentinel://`
//! URL. While turns stream in through the API and a Telegram bot, the primary is SIGKILLed,
//! then handed over while alive (demoted to a replica): every question and chat message is
//! answered exactly once. And when the new primary lacks the latest writes (the replicas
//! missed them), a session lock lost in the failover cannot let two workers write one session,
//! and the credential pool works on from what the new primary has (docs/CHAOS.md).

use std::time::{Duration, Instant};

use hermes_cache::{Cache, KeyState};
use hermes_core::{ChatMessage, SessionSource};
use hermes_store::{NewTurn, StoreError, TurnTarget};

use crate::harness::stream::{
    ChatStream, DevNodes, Workers, api_client, assert_each_chat_answered_once, assert_each_question_answered_once,
    assert_every_turn_completed, under_load,
};
use crate::harness::{Backing, Roles, TestEnv, poll_until};

const SENTINEL_URL: &str = "redis+sentinel://127.0.0.1:26391,127.0.0.1:26392,127.0.0.1:26393/hermes";

fn sentinel_backing() -> Backing {
    Backing { redis_url: SENTINEL_URL.into(), ..Backing::shared() }
}

/// Runs `args` on the nodes' script off the async threads.
fn nodes(redis: &DevNodes, args: &[&str]) -> String {
    tokio::task::block_in_place(|| redis.run(args))
}

/// Times a question asked right after a failover began until it is answered.
async fn probe(env: &TestEnv, key: &str, client: usize) -> Duration {
    let asked = Instant::now();
    let answered = tokio::time::timeout(
        Duration::from_secs(90),
        api_client(env.http.clone(), env.api_url.clone(), key.to_owned(), client, 1),
    )
    .await
    .expect("a question asked during the failover is answered within 90 s");
    assert_eq!(answered[0].1, format!("echo: {}", answered[0].0));
    asked.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_stream_through_a_redis_failover_and_a_handover_answered_once() {
    let redis = tokio::task::block_in_place(|| DevNodes::start("redis-sentinel.sh", "HERMES_REDIS_DIR", &[]));
    let (env, tg, pod, key) = under_load(&sentinel_backing(), Roles::NO_WORKER, Duration::from_millis(200), "ha").await;
    let _workers =
        Workers(vec![env.spawn_hermesd(&["worker"], "worker-a"), env.spawn_hermesd(&["worker"], "worker-b")]);
    let clients: Vec<_> =
        (0..3).map(|c| tokio::spawn(api_client(env.http.clone(), env.api_url.clone(), key.clone(), c, 10))).collect();
    let mut chats = ChatStream::default();

    chats.say(&tg, 3001);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    chats.say(&tg, 3002);
    let killed = nodes(&redis, &["kill-primary"]);
    chats.say(&tg, 3003);
    let after_kill = probe(&env, &key, 90).await;
    nodes(&redis, &["wait-moved", &killed]);
    nodes(&redis, &["start-node", &killed]);
    chats.say(&tg, 3004);

    let handed_over = nodes(&redis, &["failover"]);
    chats.say(&tg, 3005);
    let after_handover = probe(&env, &key, 91).await;
    nodes(&redis, &["wait-moved", &handed_over]);
    chats.say(&tg, 3006);

    let mut api = Vec::new();
    for client in clients {
        api.extend(client.await.unwrap());
    }
    api.push((String::from("api 90-0"), String::from("echo: api 90-0"), 1));
    api.push((String::from("api 91-0"), String::from("echo: api 91-0"), 1));
    assert_each_question_answered_once(&env.db, &api, api.len()).await;
    assert_each_chat_answered_once(&tg, &chats.sent).await;
    assert_every_turn_completed(&env.db).await;
    let retried: u32 = api.iter().map(|(_, _, tries)| tries - 1).sum();
    eprintln!(
        "redis sentinel: {} API questions ({retried} retries), {} chat messages; lost 0, doubled 0",
        api.len(),
        chats.sent.len()
    );
    eprintln!("  primary killed: a question asked at the kill answered after {:.2} s", after_kill.as_secs_f64());
    eprintln!(
        "  primary handed over alive: a question asked at the handover answered after {:.2} s",
        after_handover.as_secs_f64()
    );
    pod.stop_with(env).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_lost_in_a_failover_cannot_let_two_workers_write_one_session() {
    let redis = tokio::task::block_in_place(|| DevNodes::start("redis-sentinel.sh", "HERMES_REDIS_DIR", &[]));
    let env = TestEnv::start_backed(&sentinel_backing(), Roles::API_ONLY, |_| {}).await;
    let (tenant, agent, _) = env.tenant("acme", "helper").await;
    let cache = Cache::connect(SENTINEL_URL, &env.config.redis.key_prefix).await.unwrap();
    let (locks, pools) = (cache.session_locks(), cache.key_pools());
    let keys = [String::from("k1"), String::from("k2")];

    // Replicated before the replicas stop: k1 cools down for two minutes.
    pools.report(tenant, "openai", "k1", Some(Duration::from_secs(120))).await.unwrap();
    let primary = nodes(&redis, &["primary"]);
    nodes(&redis, &["wait-replicated"]);

    // From here on, writes reach the primary only.
    nodes(&redis, &["freeze-replicas"]);
    let new = NewTurn::new(
        agent.id,
        TurnTarget::New { source: SessionSource::Api, user_key: "u".into(), history: vec![] },
        ChatMessage::user("hi"),
    );
    let (session, turn) = env.store.turns().enqueue_turn(tenant, new).await.unwrap();
    // Worker A holds the session's lock for a minute; its lease in Postgres is short, as if
    // A stalled right after claiming.
    let a_lock = locks.try_acquire(session, "worker-a", Duration::from_secs(60)).await.unwrap().expect("free");
    let lease = Duration::from_millis(400);
    let a = env.store.turns().claim_next_turn(tenant, session, "worker-a", lease, a_lock.token).await.unwrap().unwrap();
    env.store
        .conversations()
        .append_message(tenant, session, a.fence, turn, 0, &ChatMessage::user("hi"))
        .await
        .unwrap();
    pools.report(tenant, "openai", "k2", None).await.unwrap();

    nodes(&redis, &["kill-primary"]);
    let killed = Instant::now();
    nodes(&redis, &["thaw-replicas"]);
    nodes(&redis, &["wait-moved", &primary]);

    // The new primary never saw A's lock, nor the fence counter it bumped: B gets the lock,
    // with A's own token.
    let b_lock = poll_until(async || locks.try_acquire(session, "worker-b", Duration::from_secs(60)).await.ok()?)
        .await
        .expect("B takes the session lock on the new primary");
    let followed = killed.elapsed();
    assert_eq!(b_lock.token, a_lock.token, "the token counter went back with the lost writes");
    let b = env
        .store
        .turns()
        .claim_next_turn(tenant, session, "worker-b", Duration::from_secs(30), b_lock.token)
        .await
        .unwrap()
        .expect("A's lease ran out: B takes the turn");
    assert!(b.fence > a.fence, "Postgres moved the fence past A's whatever token B brought");
    let late =
        env.store.conversations().append_message(tenant, session, a.fence, turn, 1, &ChatMessage::assistant("A")).await;
    assert!(matches!(late, Err(StoreError::Fenced)), "A is fenced out: {late:?}");
    env.store
        .conversations()
        .append_message(tenant, session, b.fence, turn, 1, &ChatMessage::assistant("B"))
        .await
        .unwrap();
    let texts = env.session_texts(tenant, session).await;
    assert_eq!(texts, ["hi", "B"], "one writer");

    // The pool works from what the new primary has: k1's replicated cooldown holds; k2's
    // dead mark was lost, so k2 is back in rotation until it fails again.
    let health = pools.health(tenant, "openai", &keys).await.unwrap();
    assert_eq!((health[0].state, health[1].state), (KeyState::CoolingDown, KeyState::Ready), "{health:?}");
    assert_eq!(pools.select(tenant, "openai", "fill_first", &keys).await.unwrap().as_deref(), Some("k2"));
    pools.report(tenant, "openai", "k2", None).await.unwrap();
    assert_eq!(pools.select(tenant, "openai", "fill_first", &keys).await.unwrap(), None, "k2 relearned as dead");
    eprintln!("redis sentinel: the cache followed the new primary {:.2} s after the kill", followed.as_secs_f64());
    env.stop().await;
}
