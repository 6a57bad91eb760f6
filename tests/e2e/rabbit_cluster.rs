//! RabbitMQ as a cluster runs it: three nodes (`deploy/dev/rabbitmq-cluster.sh`), the work
//! queue a quorum queue replicated on all three, every pod given all three addresses. While
//! turns stream in through the API and a Telegram bot, the node leading the work queue is
//! killed, then the node a worker is connected to; each comes back. Every question and chat
//! message is answered exactly once, and the test prints how long each failure stopped new
//! turns for (docs/CHAOS.md).
//!
//! Longer by hand: `HERMES_CHAOS_ROUNDS=5 cargo nextest run -E 'test(rabbit_cluster)' --no-capture`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use hermes_testkit::telegram::TelegramEmulator;

use crate::chaos::api_client;
use crate::harness::{Backing, Roles, TestEnv, poll_until, unique};
use crate::telegram::{Pod, TOKEN, open_bot};

/// The cluster of `deploy/dev/rabbitmq-cluster.sh`, stopped and removed when dropped.
struct Cluster {
    dir: PathBuf,
}

impl Cluster {
    fn start() -> Self {
        let me = Self { dir: std::env::temp_dir().join(unique("hermes-rmq")) };
        me.script(&["start"]);
        me
    }

    /// Runs the script and returns what it printed; fails the test when it fails.
    fn script(&self, args: &[&str]) -> String {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/dev/rabbitmq-cluster.sh");
        let out = Command::new(script).args(args).env("HERMES_RMQ_DIR", &self.dir).output().unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "rabbitmq-cluster.sh {args:?}: {stdout}{stderr}");
        stdout.trim().to_owned()
    }

    fn amqp_urls() -> String {
        (1..=3).map(|n| format!("amqp://guest:guest@127.0.0.1:{}/%2f", 5700 + n)).collect::<Vec<_>>().join(",")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/dev/rabbitmq-cluster.sh");
        let _ = Command::new(script).arg("stop").env("HERMES_RMQ_DIR", &self.dir).output();
    }
}

/// Worker processes, killed when the test ends, however it ends.
struct Workers(Vec<std::process::Child>);

impl Drop for Workers {
    fn drop(&mut self) {
        for worker in &mut self.0 {
            let _ = worker.kill();
            let _ = worker.wait();
        }
    }
}

/// Kills `node`, then times a new question asked right after the kill until it is answered.
async fn kill_and_time(cluster: &Cluster, node: &str, env: &TestEnv, key: &str, probe: usize) -> Duration {
    let killed = Instant::now();
    tokio::task::block_in_place(|| cluster.script(&["kill", node]));
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
    let cluster = tokio::task::block_in_place(Cluster::start);
    let backing = Backing { amqp_url: Cluster::amqp_urls(), ..Backing::shared() };
    let env = TestEnv::start_backed(&backing, Roles::NO_WORKER, |c| {
        crate::harness::no_api_limits(c);
        c.worker.tenant_share = 1.0;
    })
    .await;
    env.llm.set_default_latency(Duration::from_millis(150));
    let workers = Workers(vec![env.spawn_hermesd(&["worker"], "worker-a"), env.spawn_hermesd(&["worker"], "worker-b")]);
    let (tg, _) = open_bot(&env).await;
    let (_, _, key) = env.tenant("cluster", "ops").await;
    let pod = Pod::start(&env).await;

    let per_client = 8 * rounds;
    let clients: Vec<_> = (0..3)
        .map(|c| tokio::spawn(api_client(env.http.clone(), env.api_url.clone(), key.clone(), c, per_client)))
        .collect();
    let mut chat_sent: HashMap<i64, String> = HashMap::new();
    let mut say = |tg: &TelegramEmulator, user: i64| {
        let text = format!("chat {user}");
        tg.user_says(TOKEN, user, &text);
        chat_sent.insert(user, text);
    };
    let work_queue = format!("{}.work", env.config.rabbitmq.prefix);
    let mut recoveries = Vec::new();
    for round in 0..rounds {
        let user = 1000 + 10 * round as i64;
        say(&tg, user);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let leader = tokio::task::block_in_place(|| cluster.script(&["leader", &work_queue]));
        let took = kill_and_time(&cluster, &leader, &env, &key, 100 + 2 * round).await;
        recoveries.push(("the work queue's leader", took));
        say(&tg, user + 1);
        tokio::task::block_in_place(|| cluster.script(&["start-node", &leader]));

        say(&tg, user + 2);
        let worker = &workers.0[round % 2];
        let node = tokio::task::block_in_place(|| cluster.script(&["node-of", &format!("hermesd-{}", worker.id())]));
        let took = kill_and_time(&cluster, &node, &env, &key, 101 + 2 * round).await;
        recoveries.push(("a worker's node", took));
        say(&tg, user + 3);
        tokio::task::block_in_place(|| cluster.script(&["start-node", &node]));
    }
    let mut api = Vec::new();
    for client in clients {
        api.extend(client.await.unwrap());
    }

    // API: each question answered with its own answer, by exactly one turn.
    for (question, answer, _) in &api {
        assert_eq!(answer, &format!("echo: {question}"), "{question}");
    }
    let turns: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM turns t JOIN sessions s ON s.id = t.session_id WHERE s.source = 'api'",
    )
    .fetch_one(&env.db)
    .await
    .unwrap();
    assert_eq!(turns as usize, api.len() + recoveries.len(), "one turn per question: none lost, none doubled");

    // Chat: every message answered, exactly once.
    let expected = chat_sent.len();
    poll_until(async || (tg.sent(TOKEN).len() >= expected).then_some(())).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut per_chat: HashMap<i64, Vec<String>> = HashMap::new();
    for m in tg.sent(TOKEN) {
        per_chat.entry(m.chat_id.parse().unwrap()).or_default().push(m.text.clone());
    }
    for (user, text) in &chat_sent {
        assert_eq!(per_chat.get(user), Some(&vec![format!("echo: {text}")]), "chat {user}: one answer");
    }
    let unfinished: i64 =
        sqlx::query_scalar("SELECT count(*) FROM turns WHERE status <> 'completed'").fetch_one(&env.db).await.unwrap();
    assert_eq!(unfinished, 0, "every turn completed");
    let retried: u32 = api.iter().map(|(_, _, tries)| tries - 1).sum();
    eprintln!(
        "rabbit cluster: {rounds} round(s); {} API questions ({retried} retries), {expected} chat messages; lost 0, doubled 0",
        api.len() + recoveries.len(),
    );
    for (what, took) in &recoveries {
        eprintln!("  killed {what}: a question asked at the kill answered after {:.2} s", took.as_secs_f64());
    }
    drop(workers);
    pod.stop_with(env).await;
}
