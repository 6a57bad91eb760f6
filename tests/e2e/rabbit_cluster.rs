//! RabbitMQ as a cluster runs it: three nodes (`deploy/dev/rabbitmq-cluster.sh`), the work
//! queue a quorum queue replicated on all three, every pod given all three addresses. While
//! turns stream in through the API and a Telegram bot, the node leading the work queue is
//! killed, then the node a worker is connected to; each comes back. Every question and chat
//! message is answered exactly once, and the test prints how long each failure stopped new
//! turns for (docs/CHAOS.md).
//!
//! Longer by hand: `HERMES_CHAOS_ROUNDS=5 cargo nextest run -E 'test(rabbit_cluster)' --no-capture`.

use std::time::{Duration, Instant};

use crate::harness::stream::{
    ChatStream, DevNodes, Workers, api_client, assert_each_chat_answered_once, assert_each_question_answered_once,
    assert_every_turn_completed, under_load,
};
use crate::harness::{Backing, Roles, TestEnv};

fn amqp_urls() -> String {
    (1..=3).map(|n| format!("amqp://guest:guest@127.0.0.1:{}/%2f", 5700 + n)).collect::<Vec<_>>().join(",")
}

/// Kills `node`, then times a new question asked right after the kill until it is answered.
async fn kill_and_time(cluster: &DevNodes, node: &str, env: &TestEnv, key: &str, probe: usize) -> Duration {
    let killed = Instant::now();
    tokio::task::block_in_place(|| cluster.run(&["kill", node]));
    let asked = api_client(env.http.clone(), env.api_url.clone(), key.to_owned(), probe, 1);
    let answered = tokio::time::timeout(Duration::from_secs(90), asked)
        .await
        .unwrap_or_else(|_| panic!("a question asked when node {node} was killed unanswered after 90 s"));
    assert_eq!(answered[0].1, format!("echo: {}", answered[0].0));
    killed.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_survive_killing_the_work_queues_leader_and_a_workers_node() {
    let rounds: usize = std::env::var("HERMES_CHAOS_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(1);
    let cluster = tokio::task::block_in_place(|| DevNodes::start("rabbitmq-cluster.sh", "HERMES_RMQ_DIR", &[]));
    let backing = Backing { amqp_url: amqp_urls(), ..Backing::shared() };
    let (env, tg, pod, key) = under_load(&backing, Roles::NO_WORKER, Duration::from_millis(150), "cluster").await;
    let workers = Workers(vec![env.spawn_hermesd(&["worker"], "worker-a"), env.spawn_hermesd(&["worker"], "worker-b")]);

    let per_client = 8 * rounds;
    let clients: Vec<_> = (0..3)
        .map(|c| tokio::spawn(api_client(env.http.clone(), env.api_url.clone(), key.clone(), c, per_client)))
        .collect();
    let mut chats = ChatStream::default();
    let work_queue = format!("{}.work", env.config.rabbitmq.prefix);
    let mut recoveries = Vec::new();
    for round in 0..rounds {
        let user = 1000 + 10 * round as i64;
        chats.say(&tg, user);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let leader = tokio::task::block_in_place(|| cluster.run(&["leader", &work_queue]));
        let took = kill_and_time(&cluster, &leader, &env, &key, 100 + 2 * round).await;
        recoveries.push(("the work queue's leader", took));
        chats.say(&tg, user + 1);
        tokio::task::block_in_place(|| cluster.run(&["start-node", &leader]));

        chats.say(&tg, user + 2);
        let worker = &workers.0[round % 2];
        let node = tokio::task::block_in_place(|| cluster.run(&["node-of", &format!("hermesd-{}", worker.id())]));
        let took = kill_and_time(&cluster, &node, &env, &key, 101 + 2 * round).await;
        recoveries.push(("a worker's node", took));
        chats.say(&tg, user + 3);
        tokio::task::block_in_place(|| cluster.run(&["start-node", &node]));
    }
    let mut api = Vec::new();
    for client in clients {
        api.extend(client.await.unwrap());
    }

    assert_each_question_answered_once(&env.db, &api, api.len() + recoveries.len()).await;

    assert_each_chat_answered_once(&tg, &chats.sent).await;
    assert_every_turn_completed(&env.db).await;
    let retried: u32 = api.iter().map(|(_, _, tries)| tries - 1).sum();
    eprintln!(
        "rabbit cluster: {rounds} round(s); {} API questions ({retried} retries), {} chat messages; lost 0, doubled 0",
        api.len() + recoveries.len(),
        chats.sent.len(),
    );
    for (what, took) in &recoveries {
        eprintln!("  killed {what}: a question asked at the kill answered after {:.2} s", took.as_secs_f64());
    }
    drop(workers);
    pod.stop_with(env).await;
}
