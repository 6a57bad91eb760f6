//! Chaos: RabbitMQ restarted, Redis restarted (and so emptied), Postgres restarted, each while
//! turns stream in through the API and a Telegram bot. Every turn completes once, every chat
//! message is answered once, and every role recovers without a restart.
//!
//! The three services are this test's own (a Postgres cluster, a Redis and a RabbitMQ node on
//! free ports, under a temporary directory), so restarting them disturbs no other test. Starting
//! them needs root (Postgres and RabbitMQ run as their own users, as the machine's do).
//!
//! Longer by hand: `HERMES_CHAOS_ROUNDS=5 cargo nextest run -E 'test(chaos)' --no-capture`.

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hermes_testkit::telegram::TelegramEmulator;

use crate::harness::stream::{api_client, assert_each_question_answered_once, assert_every_turn_completed, under_load};
use crate::harness::{Backing, Roles, free_port, poll_until, unique};
use crate::telegram::TOKEN;

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

fn run(what: &str, cmd: &mut Command) {
    let out = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(out.status.success(), "{what} failed: {}", String::from_utf8_lossy(&out.stderr));
}

/// The end of every log under `dir` (the directory goes with the test).
fn log_tail(dir: &std::path::Path) -> String {
    let mut out = String::new();
    for entry in walk(dir) {
        if entry.extension().is_some_and(|e| e == "log") {
            let text = std::fs::read_to_string(&entry).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(40).collect();
            out.push_str(&format!("== {}\n", entry.display()));
            out.extend(tail.into_iter().rev().map(|l| format!("{l}\n")));
        }
    }
    out
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries.flatten().map(|e| e.path()).flat_map(|p| if p.is_dir() { walk(&p) } else { vec![p] }).collect()
}

fn as_user(user: &str, program: &str) -> Command {
    let mut cmd = Command::new("runuser");
    cmd.args(["-u", user, "--", program]);
    cmd
}

/// This test's own Postgres, Redis and RabbitMQ.
struct Private {
    dir: std::path::PathBuf,
    pg_port: u16,
    redis_port: u16,
    redis: Option<Child>,
    rabbit_node: String,
    amqp_port: u16,
}

impl Private {
    fn start() -> Self {
        let dir = std::env::temp_dir().join(unique("hermes-chaos"));
        std::fs::create_dir_all(&dir).unwrap();
        let (pg_port, redis_port, amqp_port, dist_port) = (free_port(), free_port(), free_port(), free_port());
        let rabbit_node = format!("{}@localhost", unique("chaos"));
        let mut me = Self { dir, pg_port, redis_port, redis: None, rabbit_node, amqp_port };
        me.start_postgres();
        me.start_redis();
        me.start_rabbitmq(dist_port);
        me
    }

    fn backing(&self) -> Backing {
        Backing {
            postgres_port: self.pg_port,
            postgres_standby_port: None,
            redis_url: format!("redis://127.0.0.1:{}", self.redis_port),
            amqp_url: format!("amqp://guest:guest@127.0.0.1:{}/%2f", self.amqp_port),
        }
    }

    fn pg_dir(&self) -> std::path::PathBuf {
        self.dir.join("pg")
    }

    fn pg_options(&self) -> String {
        format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200",
            self.pg_port,
            self.pg_dir().display()
        )
    }

    fn start_postgres(&self) {
        let pg = self.pg_dir();
        std::fs::create_dir_all(&pg).unwrap();
        run("chown", Command::new("chown").args(["-R", "postgres", &pg.display().to_string()]));
        let data = pg.join("data").display().to_string();
        run(
            "initdb",
            as_user("postgres", &format!("{PG_BIN}/initdb")).args(["-D", &data, "-U", "postgres", "--auth=trust"]),
        );
        self.pg_ctl("start");
    }

    fn pg_ctl(&self, action: &str) {
        let pg = self.pg_dir();
        let (data, log) = (pg.join("data").display().to_string(), pg.join("log").display().to_string());
        run(
            &format!("pg_ctl {action}"),
            as_user("postgres", &format!("{PG_BIN}/pg_ctl")).args([
                "-D",
                &data,
                "-m",
                "fast",
                "-w",
                "-l",
                &log,
                "-o",
                &self.pg_options(),
                action,
            ]),
        );
    }

    fn start_redis(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.redis_port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.redis = Some(child);
    }

    fn rabbit_env(&self, cmd: &mut Command, dist_port: u16) {
        let base = self.dir.join("rabbit");
        cmd.env("RABBITMQ_NODENAME", &self.rabbit_node)
            .env("RABBITMQ_CONFIG_FILE", base.join("rabbitmq"))
            .env("RABBITMQ_DIST_PORT", dist_port.to_string())
            .env("RABBITMQ_MNESIA_BASE", base.join("mnesia"))
            .env("RABBITMQ_LOG_BASE", base.join("log"))
            .env("RABBITMQ_ENABLED_PLUGINS_FILE", base.join("plugins"))
            .env("RABBITMQ_PID_FILE", base.join("pid"));
    }

    fn start_rabbitmq(&self, dist_port: u16) {
        let base = self.dir.join("rabbit");
        std::fs::create_dir_all(&base).unwrap();
        std::fs::write(base.join("plugins"), "[].\n").unwrap();
        let conf = format!("listeners.tcp.local = 127.0.0.1:{}\nloopback_users = none\n", self.amqp_port);
        std::fs::write(base.join("rabbitmq.conf"), conf).unwrap();
        run("chown", Command::new("chown").args(["-R", "rabbitmq:rabbitmq", &base.display().to_string()]));
        let mut server = Command::new("rabbitmq-server");
        server.current_dir(std::env::temp_dir()).arg("-detached");
        self.rabbit_env(&mut server, dist_port);
        run("rabbitmq-server", &mut server);
        // The node registers with epmd a moment after the detached start returns.
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let ready = Command::new("rabbitmqctl")
                .arg("-n")
                .arg(&self.rabbit_node)
                .args(["await_startup", "--timeout", "30"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the private RabbitMQ node did not start; its log:\n{}",
                log_tail(&base)
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    fn rabbitmqctl(&self, args: &[&str]) {
        run(
            &format!("rabbitmqctl {}", args.join(" ")),
            Command::new("rabbitmqctl").arg("-n").arg(&self.rabbit_node).args(args),
        );
    }

    /// The broker goes away (every connection closed, every non-durable queue gone) and comes
    /// back after `down`.
    fn restart_rabbitmq(&self, down: Duration) {
        self.rabbitmqctl(&["stop_app"]);
        std::thread::sleep(down);
        self.rabbitmqctl(&["start_app"]);
    }

    /// Redis dies and a new, empty one takes its place after `down`.
    fn restart_redis(&mut self, down: Duration) {
        if let Some(mut old) = self.redis.take() {
            let _ = old.kill();
            let _ = old.wait();
        }
        std::thread::sleep(down);
        self.start_redis();
    }

    /// Postgres stops (every connection cut) and starts again.
    fn restart_postgres(&self) {
        self.pg_ctl("restart");
    }
}

impl Drop for Private {
    fn drop(&mut self) {
        if let Some(mut redis) = self.redis.take() {
            let _ = redis.kill();
        }
        let _ = Command::new("rabbitmqctl")
            .arg("-n")
            .arg(&self.rabbit_node)
            .arg("stop")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let data = self.pg_dir().join("data").display().to_string();
        let _ = as_user("postgres", &format!("{PG_BIN}/pg_ctl"))
            .args(["-D", &data, "-m", "immediate", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_survive_rabbitmq_redis_and_postgres_restarts_once_each() {
    let rounds: usize = std::env::var("HERMES_CHAOS_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(1);
    let mut services = Private::start();
    let (env, tg, pod, key) =
        under_load(&services.backing(), Roles::default(), Duration::from_millis(150), "chaos").await;

    // The stream: four API clients asking in turn, and chat users writing to the bot.
    let per_client = 6 * rounds;
    let clients: Vec<_> = (0..4)
        .map(|c| tokio::spawn(api_client(env.http.clone(), env.api_url.clone(), key.clone(), c, per_client)))
        .collect();
    let mut chat_sent: HashMap<i64, String> = HashMap::new();
    let mut user = 1000;
    let mut say = |tg: &TelegramEmulator, chat_sent: &mut HashMap<i64, String>| {
        user += 1;
        let text = format!("chat {user}");
        tg.user_says(TOKEN, user, &text);
        chat_sent.insert(user, text);
    };
    let started = Instant::now();
    for _ in 0..rounds {
        for fault in ["rabbitmq", "redis", "postgres"] {
            say(&tg, &mut chat_sent);
            tokio::time::sleep(Duration::from_millis(700)).await;
            let services = &mut services;
            tokio::task::block_in_place(|| match fault {
                "rabbitmq" => services.restart_rabbitmq(Duration::from_secs(2)),
                "redis" => services.restart_redis(Duration::from_secs(1)),
                _ => services.restart_postgres(),
            });
            say(&tg, &mut chat_sent);
            tokio::time::sleep(Duration::from_millis(1500)).await;
        }
    }
    let mut api = Vec::new();
    for client in clients {
        api.extend(client.await.unwrap());
    }

    // Every role came back: a new question and a new chat message are answered at once.
    let (_, _, late) = env.tenant("after", "ops").await;
    let fresh = api_client(env.http.clone(), env.api_url.clone(), late, 99, 1).await;
    assert_eq!(fresh[0].2, 1, "answered at the first try after the faults");
    say(&tg, &mut chat_sent);

    assert_each_question_answered_once(&env.db, &api, api.len() + 1).await;

    // Chat: every message answered, exactly once (the assertions below name any that is not).
    let expected = chat_sent.len();
    poll_until(async || (tg.sent(TOKEN).len() >= expected).then_some(())).await;
    // Anything doubled would arrive just behind; give it the outbox's poll to show.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let answers = tg.sent(TOKEN);
    let mut per_chat: HashMap<i64, Vec<String>> = HashMap::new();
    for m in &answers {
        per_chat.entry(m.chat_id.parse().unwrap()).or_default().push(m.text.clone());
    }
    for (user, text) in &chat_sent {
        let statuses: Vec<(String, String)> = sqlx::query_as(
            "SELECT t.status::text, t.input::text FROM turns t JOIN sessions s ON s.id = t.session_id
             WHERE s.source = 'telegram' AND t.input::text LIKE '%' || $1 || '%'",
        )
        .bind(text)
        .fetch_all(&env.db)
        .await
        .unwrap_or_default();
        assert_eq!(
            per_chat.get(user),
            Some(&vec![format!("echo: {text}")]),
            "chat {user}: one answer (its turns: {statuses:?}; outbox: {:?})",
            sqlx::query_as::<_, (String, i32)>("SELECT status, attempts FROM outbox").fetch_all(&env.db).await
        );
    }
    assert_every_turn_completed(&env.db).await;
    let retried: u32 = api.iter().map(|(_, _, tries)| tries - 1).sum();
    eprintln!(
        "chaos: {} rounds in {:.1} s; {} API questions ({retried} retries), {} chat messages; lost 0, doubled 0",
        rounds,
        started.elapsed().as_secs_f64(),
        api.len() + 1,
        expected
    );
    pod.stop_with(env).await;
}
