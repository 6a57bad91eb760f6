//! Postgres as an HA install runs it: a primary and a synchronous streaming standby
//! (`deploy/dev/postgres-standby.sh`), every pod given both servers in one multi-host
//! `database.url` with `target_session_attrs=read-write`. While turns stream in through the
//! API and a Telegram bot, the primary is SIGKILLed and the standby promoted, as an HA manager
//! would. Every question and chat message is answered exactly once, and the test prints how
//! long after the promotion the turns in flight were answered (docs/CHAOS.md).

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use hermes_testkit::telegram::TelegramEmulator;

use crate::chaos::api_client;
use crate::harness::{Backing, Roles, TestEnv, poll_until, unique};
use crate::telegram::{Pod, TOKEN, open_bot};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/dev/postgres-standby.sh");

/// The primary and standby of `deploy/dev/postgres-standby.sh`, removed when dropped.
struct Pair {
    dir: PathBuf,
}

impl Pair {
    fn start() -> Self {
        let me = Self { dir: std::env::temp_dir().join(unique("hermes-pg")) };
        me.script(&["start"]);
        me
    }

    fn script(&self, args: &[&str]) -> String {
        let out = Command::new(SCRIPT)
            .args(args)
            .env("HERMES_PG_DIR", &self.dir)
            .env("HERMES_PG_SYNC", "1")
            .output()
            .unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "postgres-standby.sh {args:?}: {stdout}{stderr}");
        stdout.trim().to_owned()
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        let _ = Command::new(SCRIPT).arg("stop").env("HERMES_PG_DIR", &self.dir).output();
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_in_flight_are_answered_once_after_the_standby_is_promoted() {
    let pair = tokio::task::block_in_place(Pair::start);
    let backing = Backing { postgres_port: 5441, postgres_standby_port: Some(5442), ..Backing::shared() };
    let env = TestEnv::start_backed(&backing, Roles::NO_WORKER, |c| {
        crate::harness::no_api_limits(c);
        c.worker.tenant_share = 1.0;
    })
    .await;
    env.llm.set_default_latency(Duration::from_millis(300));
    let _workers =
        Workers(vec![env.spawn_hermesd(&["worker"], "worker-a"), env.spawn_hermesd(&["worker"], "worker-b")]);
    let (tg, _) = open_bot(&env).await;
    let (_, _, key) = env.tenant("failover", "ops").await;
    let pod = Pod::start(&env).await;

    let clients: Vec<_> =
        (0..3).map(|c| tokio::spawn(api_client(env.http.clone(), env.api_url.clone(), key.clone(), c, 10))).collect();
    let mut chat_sent: HashMap<i64, String> = HashMap::new();
    let mut say = |tg: &TelegramEmulator, user: i64| {
        let text = format!("chat {user}");
        tg.user_says(TOKEN, user, &text);
        chat_sent.insert(user, text);
    };
    say(&tg, 2001);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    say(&tg, 2002);
    tokio::task::block_in_place(|| pair.script(&["kill-primary"]));
    say(&tg, 2003);
    tokio::time::sleep(Duration::from_millis(500)).await;
    tokio::task::block_in_place(|| pair.script(&["promote"]));
    let promoted = Instant::now();
    let db_name = env.config.database.url.rsplit('/').next().unwrap().split('?').next().unwrap().to_owned();
    let db = sqlx::PgPool::connect(&format!("postgres://postgres@127.0.0.1:5442/{db_name}")).await.unwrap();
    let promoted_at: chrono::DateTime<chrono::Utc> = sqlx::query_scalar("SELECT now()").fetch_one(&db).await.unwrap();
    say(&tg, 2004);
    let probe = api_client(env.http.clone(), env.api_url.clone(), key.clone(), 99, 1).await;
    let probe_took = promoted.elapsed();
    assert_eq!(probe[0].1, format!("echo: {}", probe[0].0));
    let mut api = probe;
    for client in clients {
        api.extend(client.await.unwrap());
    }
    let all_answered = promoted.elapsed();

    // What is left on the promoted server.
    for (question, answer, _) in &api {
        assert_eq!(answer, &format!("echo: {question}"), "{question}");
    }
    let turns: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM turns t JOIN sessions s ON s.id = t.session_id WHERE s.source = 'api'",
    )
    .fetch_one(&db)
    .await
    .unwrap();
    assert_eq!(turns as usize, api.len(), "one turn per question: none lost, none doubled");
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
        sqlx::query_scalar("SELECT count(*) FROM turns WHERE status <> 'completed'").fetch_one(&db).await.unwrap();
    assert_eq!(unfinished, 0, "every turn completed");
    // The turns created before the promotion: how long after it the last of them finished.
    let in_flight: Option<f64> = sqlx::query_scalar(
        "SELECT extract(epoch FROM max(finished_at) - $1)::float8 FROM turns WHERE created_at < $1 AND finished_at > $1",
    )
    .bind(promoted_at)
    .fetch_one(&db)
    .await
    .unwrap();
    let retried: u32 = api.iter().map(|(_, _, tries)| tries - 1).sum();
    eprintln!(
        "pg failover: {} API questions ({retried} retries), {expected} chat messages; lost 0, doubled 0; \
         the last turn in flight at the promotion finished {:.2} s after it; a question asked at the \
         promotion answered after {:.2} s, every question after {:.2} s",
        api.len(),
        in_flight.unwrap_or_default(),
        probe_took.as_secs_f64(),
        all_answered.as_secs_f64(),
    );
    pod.stop_with(env).await;
}
