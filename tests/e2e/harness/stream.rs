//! What failure tests run through the service while they break it: API clients asking in
//! turn and chat users writing to a Telegram bot; the checks that each was answered exactly
//! once; and the extra engine nodes of `deploy/dev/` they break (`rabbit_cluster.rs`,
//! `pg_failover.rs`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::Duration;

use serde_json::Value;

use hermes_testkit::telegram::TelegramEmulator;

use super::{Backing, Roles, TestEnv, answer_text, ask, poll_until, unique};
use crate::telegram::{Pod, TOKEN, open_bot};

/// What a failure test breaks the service under: its environment on `backing` (no API limits,
/// every worker slot for one tenant, a model answering after `latency`), a Telegram bot open
/// to anyone with a gateway pod, and an API key of tenant `tenant`.
pub async fn under_load(
    backing: &Backing,
    roles: Roles,
    latency: Duration,
    tenant: &str,
) -> (TestEnv, TelegramEmulator, Pod, String) {
    let env = TestEnv::start_backed(backing, roles, |c| {
        super::no_api_limits(c);
        c.worker.tenant_share = 1.0;
    })
    .await;
    env.llm.set_default_latency(latency);
    let (tg, _) = open_bot(&env).await;
    let (_, _, key) = env.tenant(tenant, "ops").await;
    let pod = Pod::start(&env).await;
    (env, tg, pod, key)
}

/// One API client: asks `n` questions in turn, each with its own Idempotency-Key, retrying a
/// question (same key) until it is answered. Returns each question's answer and tries.
pub async fn api_client(
    http: reqwest::Client,
    url: String,
    key: String,
    client: usize,
    n: usize,
) -> Vec<(String, String, u32)> {
    let mut answers = Vec::new();
    for i in 0..n {
        let question = format!("api {client}-{i}");
        let idempotency = format!("chaos-{client}-{i}");
        let body = ask("ops", &question);
        let mut tries = 0;
        let answer = loop {
            tries += 1;
            assert!(tries <= 60, "{question}: not answered after {tries} tries");
            let sent = http
                .post(format!("{url}/v1/chat/completions"))
                .bearer_auth(&key)
                .header("Idempotency-Key", &idempotency)
                .timeout(Duration::from_secs(30))
                .json(&body)
                .send()
                .await;
            match sent {
                Ok(resp) if resp.status() == 200 => break answer_text(&resp.json::<Value>().await.unwrap()).to_owned(),
                Ok(resp) => {
                    // A failure must be a clean, structured one.
                    let status = resp.status();
                    let body: Value = resp.json().await.unwrap_or(Value::Null);
                    assert!(
                        status.is_server_error() || status == 429 || status == 409,
                        "{question}: unexpected {status}: {body}"
                    );
                    assert!(body["error"]["message"].is_string(), "{question}: {status} without an error body: {body}");
                }
                Err(_) => {}
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        };
        answers.push((question, answer, tries));
    }
    answers
}

/// Every question of `api` answered with its own echo, and the API's turns in `db` exactly
/// `turns`: none lost, none doubled.
pub async fn assert_each_question_answered_once(db: &sqlx::PgPool, api: &[(String, String, u32)], turns: usize) {
    for (question, answer, _) in api {
        assert_eq!(answer, &format!("echo: {question}"), "{question}");
    }
    let stored: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM turns t JOIN sessions s ON s.id = t.session_id WHERE s.source = 'api'",
    )
    .fetch_one(db)
    .await
    .unwrap();
    assert_eq!(stored as usize, turns, "one turn per question: none lost, none doubled");
}

/// What chat users wrote to the test's Telegram bot, by user.
#[derive(Default)]
pub struct ChatStream {
    pub sent: HashMap<i64, String>,
}

impl ChatStream {
    /// User `user` writes `chat {user}` to the bot.
    pub fn say(&mut self, tg: &TelegramEmulator, user: i64) {
        let text = format!("chat {user}");
        tg.user_says(TOKEN, user, &text);
        self.sent.insert(user, text);
    }
}

/// No turn in `db` is left queued, running or failed.
pub async fn assert_every_turn_completed(db: &sqlx::PgPool) {
    let unfinished: i64 =
        sqlx::query_scalar("SELECT count(*) FROM turns WHERE status <> 'completed'").fetch_one(db).await.unwrap();
    assert_eq!(unfinished, 0, "every turn completed");
}

/// Every chat message of `sent` (user to text) answered with its echo, exactly once.
pub async fn assert_each_chat_answered_once(tg: &TelegramEmulator, sent: &HashMap<i64, String>) {
    poll_until(async || (tg.sent(TOKEN).len() >= sent.len()).then_some(())).await;
    // Anything doubled would arrive just behind; give it the outbox's poll to show.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut per_chat: HashMap<i64, Vec<String>> = HashMap::new();
    for m in tg.sent(TOKEN) {
        per_chat.entry(m.chat_id.parse().unwrap()).or_default().push(m.text.clone());
    }
    for (user, text) in sent {
        assert_eq!(per_chat.get(user), Some(&vec![format!("echo: {text}")]), "chat {user}: one answer");
    }
}

/// Extra nodes of an engine run by a `deploy/dev/` script (`start`, `stop`, and its own
/// commands) in a directory of their own; stopped and removed when dropped.
pub struct DevNodes {
    script: String,
    env: Vec<(&'static str, String)>,
}

impl DevNodes {
    /// Starts `script`'s nodes with their directory in `dir_var` and `env` set.
    pub fn start(script: &str, dir_var: &'static str, env: &[(&'static str, &str)]) -> Self {
        let dir: PathBuf = std::env::temp_dir().join(unique("hermes-nodes"));
        let mut all = vec![(dir_var, dir.display().to_string())];
        all.extend(env.iter().map(|(k, v)| (*k, (*v).to_owned())));
        let me = Self { script: format!("{}/../../deploy/dev/{script}", env!("CARGO_MANIFEST_DIR")), env: all };
        me.run(&["start"]);
        me
    }

    /// Runs the script and returns what it printed; fails the test when it fails.
    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new(&self.script).args(args).envs(self.env.iter().cloned()).output().unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{} {args:?}: {stdout}{stderr}", self.script);
        stdout.trim().to_owned()
    }
}

impl Drop for DevNodes {
    fn drop(&mut self) {
        let _ = Command::new(&self.script).arg("stop").envs(self.env.iter().cloned()).output();
    }
}

/// Worker processes, killed when the test ends, however it ends.
pub struct Workers(pub Vec<Child>);

impl Drop for Workers {
    fn drop(&mut self) {
        for worker in &mut self.0 {
            let _ = worker.kill();
            let _ = worker.wait();
        }
    }
}
