//! A whole Hermes Cloud on real Postgres, Redis, RabbitMQ and Docker, isolated per test: a
//! fresh database, its own queue/exchange and Redis key prefix, its own sandbox names, and a
//! scripted model. Roles run in-process, or as real `hermesd` child processes when a test
//! needs to kill one.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use hermes_cache::Cache;
use hermes_config::HermesConfig;
use hermes_core::TenantId;
use hermes_http::Readiness;
use hermes_queue::Broker;
use hermes_store::{Agent, NewAgent, Store};
use hermes_testkit::ScriptedLlm;
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

mod agents;
mod calls;
mod channels;
mod files;
mod spending;
pub mod stream;
mod team;

pub use calls::{free_port, json_of, kill, sse_data};
pub use channels::unreachable_telegram_bot;
pub use team::Team;

/// Where a test environment's Postgres, Redis and RabbitMQ are: the machine's own (shared by
/// every test), or a test's private ones (`chaos.rs` restarts them).
#[derive(Debug, Clone)]
pub struct Backing {
    pub postgres_port: u16,
    /// A streaming standby of that Postgres: the service is given both servers
    /// (`pg_failover.rs` promotes it).
    pub postgres_standby_port: Option<u16>,
    pub redis_url: String,
    pub amqp_url: String,
}

impl Backing {
    pub fn shared() -> Self {
        Self {
            postgres_port: 5432,
            postgres_standby_port: None,
            redis_url: "redis://127.0.0.1:6379".into(),
            amqp_url: "amqp://guest:guest@127.0.0.1:5672/%2f".into(),
        }
    }
}
pub const SANDBOX_TEST_IMAGE: &str = "hermes-sandbox:test";

/// Which roles run inside the test process.
#[derive(Clone, Copy)]
pub struct Roles {
    pub worker: bool,
    pub scheduler: bool,
}

impl Roles {
    /// Only the API: for tests of what it answers and stores.
    pub const API_ONLY: Self = Self { worker: false, scheduler: false };
    /// The API and the scheduler, no worker: for tests that start their workers as `hermesd`
    /// child processes (to kill one).
    pub const NO_WORKER: Self = Self { worker: false, scheduler: true };
}

impl Default for Roles {
    fn default() -> Self {
        Self { worker: true, scheduler: true }
    }
}

pub struct TestEnv {
    pub config: HermesConfig,
    pub store: Store,
    /// The test's database as its owner (the tables' owner, not subject to row-level security):
    /// for looking at and arranging rows directly.
    pub db: sqlx::PgPool,
    pub llm: ScriptedLlm,
    pub api_url: String,
    pub http: reqwest::Client,
    pub shutdown: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
    db_name: String,
    db_port: u16,
}

/// The stdio MCP test server (`hermes-testkit`'s `hermes-mcp-test-server`):
/// `$HERMES_MCP_TEST_SERVER_BIN`, else the debug build beside this test binary (`.ci/run`
/// builds it first).
pub fn mcp_test_server_bin() -> std::path::PathBuf {
    if let Ok(path) = std::env::var("HERMES_MCP_TEST_SERVER_BIN") {
        return path.into();
    }
    let exe = std::env::current_exe().unwrap();
    exe.parent().and_then(|deps| deps.parent()).unwrap().join("hermes-mcp-test-server")
}

/// sandboxd as the tests run it on the host (local backend): `$HERMES_SANDBOXD_BIN`, else the
/// debug build beside this test binary (`.ci/run` builds it first).
pub fn sandboxd_bin() -> String {
    if let Ok(path) = std::env::var("HERMES_SANDBOXD_BIN") {
        return path;
    }
    let exe = std::env::current_exe().unwrap();
    // target/debug/deps/e2e-<hash> -> target/debug/hermes-sandboxd
    exe.parent().and_then(|deps| deps.parent()).unwrap().join("hermes-sandboxd").display().to_string()
}

/// Lifts the API's per-key and per-tenant limits (tests that send many turns at once).
pub fn no_api_limits(config: &mut HermesConfig) {
    config.api.key_requests_per_minute = 0;
    config.api.tenant_requests_per_minute = 0;
    config.api.key_concurrent_turns = 0;
    config.api.tenant_concurrent_turns = 0;
}

pub fn unique(prefix: &str) -> String {
    let id = uuid::Uuid::now_v7().simple().to_string();
    format!("{prefix}{}", &id[id.len() - 12..])
}

fn init_once() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let _ = tracing_subscriber::fmt()
            .with_env_filter(std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()))
            .with_test_writer()
            .try_init();
    });
}

impl TestEnv {
    pub async fn start() -> Self {
        Self::start_with(Roles::default(), |_| {}).await
    }

    /// Starts the API (always) and the chosen roles in-process.
    pub async fn start_roles(roles: Roles) -> Self {
        Self::start_with(roles, |_| {}).await
    }

    /// Starts the API (always) and the chosen roles in-process; `tweak` edits the config first.
    pub async fn start_with(roles: Roles, tweak: impl FnOnce(&mut HermesConfig)) -> Self {
        Self::start_backed(&Backing::shared(), roles, tweak).await
    }

    /// [`start_with`](Self::start_with) on `backing`'s services.
    pub async fn start_backed(backing: &Backing, roles: Roles, tweak: impl FnOnce(&mut HermesConfig)) -> Self {
        Self::start_full(backing, roles, None, tweak).await
    }

    /// [`start_with`](Self::start_with), the worker's sandboxes on `sandboxes` (another backend
    /// than Docker, such as Kubernetes on the fake API) instead.
    pub async fn start_on(
        sandboxes: Arc<dyn hermes_sandbox::Sandboxes>,
        tweak: impl FnOnce(&mut HermesConfig),
    ) -> Self {
        Self::start_full(&Backing::shared(), Roles::default(), Some(sandboxes), tweak).await
    }

    async fn start_full(
        backing: &Backing,
        roles: Roles,
        sandboxes: Option<Arc<dyn hermes_sandbox::Sandboxes>>,
        tweak: impl FnOnce(&mut HermesConfig),
    ) -> Self {
        init_once();
        let name = unique("t");
        let db_name = format!("hermes_{name}");
        let port = backing.postgres_port;
        let admin = sqlx::PgPool::connect(&format!("postgres://postgres@127.0.0.1:{port}/postgres"))
            .await
            .expect("postgres is running (deploy/dev/ensure-services.sh)");
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {db_name}"))).execute(&admin).await.unwrap();
        admin.close().await;

        let mut config = HermesConfig::default();
        // Bound first, so the console's links name the address the API really serves.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let api_url = format!("http://{}", listener.local_addr().unwrap());
        config.admin.public_url = Some(api_url.clone());
        config.database.url = match backing.postgres_standby_port {
            None => format!("postgres://postgres@127.0.0.1:{port}/{db_name}"),
            Some(standby) => format!(
                "postgres://postgres@127.0.0.1:{port},127.0.0.1:{standby}/{db_name}?target_session_attrs=read-write"
            ),
        };
        config.redis.url = backing.redis_url.clone();
        config.rabbitmq.url = backing.amqp_url.clone();
        config.database.max_connections = 16;
        config.redis.key_prefix = format!("hermes-test:{name}");
        config.rabbitmq.prefix = format!("hermes-test.{name}");
        // A test's queue disappears shortly after the test, even one that failed mid-way.
        config.rabbitmq.queue_expires_seconds = 60;
        config.sandbox.docker.image = SANDBOX_TEST_IMAGE.into();
        config.sandbox.docker.name_prefix = format!("htest-{name}");
        config.sandbox.docker.ipc_dir = format!("/tmp/htest-ipc/{name}");
        config.sandbox.docker.memory_mb = 256;
        // Nearly every test agent has the terminal toolset but most never run a command: no
        // container per turn unless a test asks for prewarming.
        config.sandbox.prewarm = false;
        // Background reviews would take scripted replies meant for the test's own turns; the
        // tests of the learning loop turn them on.
        config.learning.review_enabled = false;
        // Titles written by a model would too; the test of titles turns them on.
        config.llm.session_titles = false;
        config.worker.lease_seconds = 3;
        config.worker.heartbeat_millis = 500;
        config.worker.drain_seconds = 10;
        config.scheduler.reaper_interval_millis = 300;
        config.scheduler.queued_grace_seconds = 5;
        config.scheduler.cron_interval_millis = 200;
        config.api.recheck_seconds = 1;
        config.api.turn_timeout_seconds = 60;
        config.llm.retry_base_millis = 50;
        config.secrets.master_key = Some(hermes_store::SecretBox::generate_master_key().unwrap());
        config.telemetry.log_format = hermes_config::LogFormat::Text;
        tweak(&mut config);
        let config = config.validated().unwrap();

        let store = Store::connect(&config.database.url, config.database.max_connections).await.unwrap();
        store.migrate().await.unwrap();
        // The test's own look at the database: on the first server (a failover test opens its
        // own on the promoted one).
        let db_url = format!("postgres://postgres@127.0.0.1:{port}/{db_name}");
        let db = sqlx::postgres::PgPoolOptions::new().max_connections(4).connect(&db_url).await.unwrap();
        let cache = Cache::connect(&config.redis.url, &config.redis.key_prefix).await.unwrap();
        let broker = Broker::connect(&config.rabbitmq, &name).await.unwrap();
        let llm = ScriptedLlm::start().await.unwrap();
        let shutdown = CancellationToken::new();
        let shared = Arc::new(config.clone());
        let mut tasks = Vec::new();

        let api = hermes_api::router(hermes_api::ApiContext {
            config: shared.clone(),
            store: store.clone(),
            broker: broker.clone(),
            cache: cache.clone(),
            readiness: Readiness::new(),
            secrets: hermes_store::SecretBox::from_config(config.secrets.master_key.as_deref()).unwrap(),
        })
        .await
        .unwrap();
        let token = shutdown.clone();
        tasks.push(tokio::spawn(async move {
            let _ = hermes_http::serve(listener, api, token).await;
        }));
        if roles.worker {
            let sandboxes = match sandboxes {
                Some(sandboxes) => sandboxes,
                None => Arc::new(hermes_sandbox::docker::DockerSandboxes::connect(&config.sandbox).await.unwrap()),
            };
            let ctx = hermes_worker::WorkerContext {
                config: shared.clone(),
                store: store.clone(),
                cache: cache.clone(),
                broker: broker.clone(),
                sandboxes,
                secrets: hermes_store::SecretBox::from_config(config.secrets.master_key.as_deref()).unwrap(),
                http: hermes_llm::http_client(Duration::from_secs(5), Duration::from_secs(60), Default::default())
                    .unwrap(),
            };
            let token = shutdown.clone();
            tasks.push(tokio::spawn(async move {
                hermes_worker::run(ctx, token).await.unwrap();
            }));
        }
        if roles.scheduler {
            let ctx = hermes_scheduler::SchedulerContext {
                config: shared.clone(),
                store: store.clone(),
                broker,
                cache: cache.clone(),
            };
            let token = shutdown.clone();
            tasks.push(tokio::spawn(hermes_scheduler::run(ctx, token)));
        }
        TestEnv {
            config,
            store,
            db,
            llm,
            api_url,
            http: reqwest::Client::new(),
            shutdown,
            tasks,
            db_name,
            db_port: port,
        }
    }

    /// A tenant with one agent on the scripted model and an API key for it.
    pub async fn tenant(&self, tenant: &str, agent: &str) -> (TenantId, Agent, String) {
        self.tenant_with(tenant, self.terminal_agent(agent)).await
    }

    /// An API key each of two tenants named `names` whose one agent is called `agent` in both:
    /// for a test that one team cannot reach what is the other's.
    pub async fn two_tenants(&self, names: [&str; 2], agent: &str) -> [String; 2] {
        let (_, _, first) = self.tenant(names[0], agent).await;
        let (_, _, second) = self.tenant(names[1], agent).await;
        [first, second]
    }

    /// A tenant with `new` as its one agent and an API key for it.
    pub async fn tenant_with(&self, tenant: &str, new: NewAgent) -> (TenantId, Agent, String) {
        let t = self.store.tenancy().create_tenant(tenant).await.unwrap();
        let a = self.add_agent(t.id, new).await;
        let (_, key) = self.store.tenancy().create_api_key(t.id, None, "test", None).await.unwrap();
        (t.id, a, key)
    }

    /// A new tenant-wide API key of the existing tenant named `tenant`.
    pub async fn key_of(&self, tenant: &str) -> String {
        let tenant = self.store.tenancy().tenant_by_name(tenant).await.unwrap().id;
        self.store.tenancy().create_api_key(tenant, None, "k", None).await.unwrap().1
    }

    /// Another agent of `tenant` on the scripted model, with the terminal toolset.
    pub async fn agent(&self, tenant: TenantId, name: &str) -> Agent {
        self.add_agent(tenant, self.terminal_agent(name)).await
    }

    /// POSTs a chat completion.
    pub async fn chat(&self, key: &str, body: Value) -> reqwest::Response {
        self.chat_with(key, body, None).await
    }

    pub async fn chat_with(&self, key: &str, body: Value, session: Option<&str>) -> reqwest::Response {
        let mut req = self.http.post(format!("{}/v1/chat/completions", self.api_url)).bearer_auth(key).json(&body);
        if let Some(s) = session {
            req = req.header("X-Hermes-Session-Id", s);
        }
        req.send().await.unwrap()
    }

    /// Asks agent `model` `text` as `key`, expecting an answer (200): the completion.
    pub async fn answered(&self, key: &str, model: &str, text: impl AsRef<str>) -> Value {
        let resp = self.chat(key, ask(model, text)).await;
        assert_eq!(resp.status(), 200);
        resp.json().await.unwrap()
    }

    /// Sends a chat completion from a background task (for tests that act while it runs).
    pub fn spawn_chat(&self, key: &str, body: Value) -> JoinHandle<reqwest::Response> {
        let (http, url, key) = (self.http.clone(), format!("{}/v1/chat/completions", self.api_url), key.to_owned());
        tokio::spawn(async move { http.post(url).bearer_auth(key).json(&body).send().await.unwrap() })
    }

    /// Tells the workers a session has work (what the API and gateway do after storing a turn).
    pub async fn signal_work(&self, tenant: TenantId, session: hermes_core::SessionId) {
        let broker = Broker::connect(&self.config.rabbitmq, "test-signal").await.unwrap();
        broker.publish_work(&hermes_queue::SessionWork { tenant_id: tenant, session_id: session }).await.unwrap();
        broker.close().await;
    }

    /// Runs one SQL count against the test database.
    pub async fn count(&self, sql: &str) -> i64 {
        sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql.to_owned())).fetch_one(&self.db).await.unwrap()
    }

    /// Runs one SQL count against the test database with `$1` bound to `tenant`.
    pub async fn count_of(&self, tenant: TenantId, sql: &str) -> i64 {
        let query = sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql.to_owned())).bind(tenant.as_uuid());
        query.fetch_one(&self.db).await.unwrap()
    }

    /// Polls a SQL count until it reaches `at_least` ([`PATIENCE`] at most; the caller asserts).
    pub async fn wait_for_count(&self, sql: &str, at_least: i64) {
        poll_until(async || (self.count(sql).await >= at_least).then_some(())).await;
    }

    /// A `hermesd` child process running `roles` against this environment.
    pub fn spawn_hermesd(&self, roles: &[&str], worker_id: &str) -> Child {
        self.spawn_hermesd_with(roles, worker_id, &[])
    }

    /// [`spawn_hermesd`](Self::spawn_hermesd) with more `HERMES__...` settings.
    pub fn spawn_hermesd_with(&self, roles: &[&str], worker_id: &str, settings: &[(&str, String)]) -> Child {
        // Settings this build has and the previous release lacks (it refuses unknown ones, so
        // `spawn_build` of another build must not be given them).
        let mut all = vec![("HERMES__LLM__SESSION_TITLES", self.config.llm.session_titles.to_string())];
        all.extend(settings.iter().cloned());
        self.spawn_build(env!("CARGO_BIN_EXE_hermesd").as_ref(), roles, worker_id, &all)
    }

    /// [`spawn_hermesd_with`](Self::spawn_hermesd_with) of another build's `hermesd` (an
    /// earlier release, in the rolling-upgrade test).
    pub fn spawn_build(&self, hermesd: &Path, roles: &[&str], worker_id: &str, settings: &[(&str, String)]) -> Child {
        let c = &self.config;
        let mut cmd = Command::new(hermesd);
        cmd.args(roles)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HERMES__DATABASE__URL", &c.database.url)
            // As the chart and compose run pods: migrations are a step of their own (the
            // environment ran them), and a previous release refuses to start on a schema with
            // migrations it does not know when asked to migrate.
            .env("HERMES__DATABASE__MIGRATE_ON_START", "false")
            .env("HERMES__REDIS__URL", &c.redis.url)
            .env("HERMES__REDIS__KEY_PREFIX", &c.redis.key_prefix)
            .env("HERMES__RABBITMQ__URL", &c.rabbitmq.url)
            .env("HERMES__RABBITMQ__PREFIX", &c.rabbitmq.prefix)
            .env("HERMES__RABBITMQ__QUEUE_EXPIRES_SECONDS", c.rabbitmq.queue_expires_seconds.to_string())
            .env("HERMES__SANDBOX__DOCKER__IMAGE", &c.sandbox.docker.image)
            .env("HERMES__SANDBOX__DOCKER__NAME_PREFIX", &c.sandbox.docker.name_prefix)
            .env("HERMES__SANDBOX__DOCKER__IPC_DIR", &c.sandbox.docker.ipc_dir)
            .env("HERMES__SANDBOX__PREWARM", c.sandbox.prewarm.to_string())
            .env("HERMES__LEARNING__REVIEW_ENABLED", c.learning.review_enabled.to_string())
            .env("HERMES__WORKER__ID", worker_id)
            .env("HERMES__WORKER__LEASE_SECONDS", c.worker.lease_seconds.to_string())
            .env("HERMES__WORKER__HEARTBEAT_MILLIS", c.worker.heartbeat_millis.to_string())
            .env("HERMES__WORKER__DRAIN_SECONDS", c.worker.drain_seconds.to_string())
            .env("HERMES__LLM__RETRY_BASE_MILLIS", c.llm.retry_base_millis.to_string())
            .env("HERMES__OPS__BIND", "")
            .env("HERMES__TELEMETRY__LOG_FORMAT", "json")
            // Their logs (JSON, on stdout) only when asked: `HERMES_TEST_CHILD_LOGS=1`.
            .stdout(if std::env::var_os("HERMES_TEST_CHILD_LOGS").is_some() { Stdio::inherit() } else { Stdio::null() })
            .stderr(Stdio::inherit());
        for (key, value) in settings {
            cmd.env(key, value);
        }
        cmd.spawn().expect("hermesd starts")
    }

    pub async fn stop(mut self) {
        self.shutdown.cancel();
        for t in self.tasks.drain(..) {
            let _ = tokio::time::timeout(Duration::from_secs(15), t).await;
        }
        if let Ok(broker) = Broker::connect(&self.config.rabbitmq, "test-cleanup").await {
            let _ = broker.delete_topology().await;
            broker.close().await;
        }
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        self.shutdown.cancel();
        let prefix = &self.config.sandbox.docker.name_prefix;
        let ipc = &self.config.sandbox.docker.ipc_dir;
        let _ = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "docker ps -aq --filter label=io.hermes.sandbox.owner={prefix} | xargs -r docker rm -f >/dev/null 2>&1; \
                 docker volume ls -q --filter name={prefix}-ws- | xargs -r docker volume rm >/dev/null 2>&1; \
                 rm -rf {ipc}; \
                 psql -q -h 127.0.0.1 -p {} -U postgres -d postgres -c 'DROP DATABASE IF EXISTS {} WITH (FORCE)' >/dev/null 2>&1",
                self.db_port, self.db_name
            ))
            .status();
    }
}

/// A chat completion request: `text` from the user to agent `model`.
pub fn ask(model: &str, text: impl AsRef<str>) -> Value {
    serde_json::json!({"model": model, "messages": [{"role": "user", "content": text.as_ref()}]})
}

/// The text of a non-streaming completion.
pub fn answer_text(body: &Value) -> &str {
    body.pointer("/choices/0/message/content").and_then(Value::as_str).unwrap_or_default()
}

/// Parses an SSE body into (event name, data) pairs.
pub fn sse_events(text: &str) -> Vec<(Option<String>, String)> {
    let mut out = Vec::new();
    for block in text.split("\n\n") {
        let mut event = None;
        let mut data = Vec::new();
        for line in block.lines() {
            if let Some(e) = line.strip_prefix("event:") {
                event = Some(e.trim().to_owned());
            } else if let Some(d) = line.strip_prefix("data:") {
                data.push(d.strip_prefix(' ').unwrap_or(d).to_owned());
            }
        }
        if !data.is_empty() {
            out.push((event, data.join("\n")));
        }
    }
    out
}

/// How long a test waits for something that happens on its own: generous, because a busy CI
/// machine (a COMMIT taking half a second, a container starting in ten) must not fail a test
/// that is right; a passing wait returns as soon as its condition holds.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// Whether a chat message is the gateway's preview (the tools at work, `⏳ name: gist` or
/// `✓ name: gist` lines, a delegated child's `🔀 [n] name: gist`, or a streamed answer with its
/// cursor) that the answer replaces and
/// removes. On a busy machine a tool runs long enough to get one, so a test counting the bot's
/// messages waits until the preview has gone instead of counting it.
pub fn is_preview(text: &str) -> bool {
    let tool_line = |line: &str| {
        let child =
            line.strip_prefix("🔀 ").map(|l| l.split_once("] ").filter(|_| l.starts_with('[')).map_or(l, |(_, r)| r));
        let Some(rest) = line.strip_prefix("⏳ ").or_else(|| line.strip_prefix("✓ ")).or(child) else {
            return false;
        };
        rest.split_once(':').is_some_and(|(name, _)| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        })
    };
    text.contains(" ▉") || (!text.is_empty() && text.lines().all(tool_line))
}

/// Polls `check` every 50 ms until it gives a value; `None` once [`PATIENCE`] has passed (for a
/// caller that asserts with its own message).
pub(crate) async fn poll_until<T>(mut check: impl AsyncFnMut() -> Option<T>) -> Option<T> {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Some(v) = check().await {
            return Some(v);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Polls `check` until it gives a value, for `what` to happen; fails the test after [`PATIENCE`].
pub(crate) async fn wait_until<T>(what: &str, check: impl AsyncFnMut() -> Option<T>) -> T {
    match poll_until(check).await {
        Some(v) => v,
        None => panic!("timed out after {PATIENCE:?} waiting for {what}"),
    }
}
