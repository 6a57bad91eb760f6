//! Typed configuration for every role, layered: built-in defaults < optional TOML file <
//! environment variables `HERMES__SECTION__KEY` (e.g. `HERMES__DATABASE__URL`).

use std::path::Path;

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

mod admin;
mod browser;
mod choices;
mod image_gen;
mod mcp;
mod memory;
mod outbound;
mod retention;
mod sandbox;
mod stt;
mod tts;
mod web;

pub use admin::{AdminConfig, OidcConfig};
pub use browser::BrowserConfig;
pub use choices::{AnthropicCacheTtl, LogFormat, OnDisconnect, OtlpProtocol, SandboxBackend};
pub use image_gen::{ImageGenConfig, ImageGenEndpoint, ImageGenProvider};
pub use mcp::McpConfig;
pub use memory::{LearningConfig, MemoryConfig, SkillsConfig};
pub use outbound::{OutboundConfig, PlatformsConfig};
pub use retention::RetentionConfig;
pub use sandbox::{
    DockerSandboxConfig, KubernetesSandboxConfig, LocalSandboxConfig, SandboxConfig, SandboxImage, SandboxMaxima,
};
pub use stt::{SttConfig, SttEndpoint};
pub use tts::{EDGE_DEFAULT_URL, TtsConfig, TtsProvider};
pub use web::{UPSTREAM_ENV, WebBackend, WebConfig};

/// Configuration could not be loaded or is invalid.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot load configuration: {0}")]
    Load(#[from] Box<figment::Error>),
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

/// The whole configuration of a `hermesd` process.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct HermesConfig {
    pub http: HttpConfig,
    pub ops: OpsConfig,
    pub database: DatabaseConfig,
    pub redis: RedisConfig,
    pub rabbitmq: RabbitMqConfig,
    pub api: ApiConfig,
    pub admin: AdminConfig,
    pub worker: WorkerConfig,
    pub scheduler: SchedulerConfig,
    /// How long tenants' data is kept unless the tenant says otherwise.
    pub retention: RetentionConfig,
    pub gateway: GatewayConfig,
    /// Where requests on someone else's behalf may go.
    pub outbound: OutboundConfig,
    /// The chat platforms' API bases (operator settings).
    pub platforms: PlatformsConfig,
    pub sandbox: SandboxConfig,
    /// The `web` toolset: search and extract services, keys, budget, quotas.
    pub web: WebConfig,
    /// Voice notes to text.
    pub stt: SttConfig,
    /// The `browser` toolset's Chromium.
    pub browser: BrowserConfig,
    /// Speech: `text_to_speech` and voice replies.
    pub tts: TtsConfig,
    /// The `image_generate` tool's service.
    pub image_gen: ImageGenConfig,
    /// The MCP client.
    pub mcp: McpConfig,
    pub memory: MemoryConfig,
    pub skills: SkillsConfig,
    pub learning: LearningConfig,
    pub llm: LlmConfig,
    pub secrets: SecretsConfig,
    pub telemetry: TelemetryConfig,
}

/// The public HTTP listener of the `api` role.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct HttpConfig {
    /// Address the API listens on.
    pub bind: String,
    /// Largest accepted request body; larger ones get 413.
    pub max_body_bytes: usize,
    /// The API's address as clients reach it (`https://hermes.example.com`), in the links to
    /// files agents make (`/v1/files/.../content`); unset: the console's address.
    pub public_url: Option<String>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self { bind: "127.0.0.1:8080".into(), max_body_bytes: 10 * 1024 * 1024, public_url: None }
    }
}

/// The operations listener (`/healthz`, `/readyz`, `/metrics`) every role serves, so
/// worker and scheduler pods can be probed too.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct OpsConfig {
    /// Address of the ops listener; empty disables it (the api role serves the same paths).
    pub bind: String,
}

impl Default for OpsConfig {
    fn default() -> Self {
        Self { bind: "127.0.0.1:9090".into() }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct DatabaseConfig {
    pub url: String,
    pub max_connections: u32,
    /// Apply pending migrations when a role starts.
    pub migrate_on_start: bool,
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        Self { url: "postgres://postgres@127.0.0.1:5432/hermes".into(), max_connections: 32, migrate_on_start: true }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct RedisConfig {
    pub url: String,
    /// Prefix of every key, so several installations (or test runs) can share one Redis.
    pub key_prefix: String,
}

impl Default for RedisConfig {
    fn default() -> Self {
        Self { url: "redis://127.0.0.1:6379".into(), key_prefix: "hermes".into() }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct RabbitMqConfig {
    /// One AMQP URL, or the nodes of a cluster as URLs separated by commas: a connection tries
    /// them in turn, and after losing one starts with the next.
    pub url: String,
    /// Prefix of exchange and queue names.
    pub prefix: String,
    /// Delete the work queue after it has had no consumer for this long (0 = never). Only for
    /// throw-away installations such as test runs; a real installation keeps its queue.
    pub queue_expires_seconds: u64,
}

impl RabbitMqConfig {
    /// The nodes of [`url`](Self::url), in order.
    pub fn urls(&self) -> Vec<&str> {
        self.url.split(',').map(str::trim).filter(|u| !u.is_empty()).collect()
    }
}

impl Default for RabbitMqConfig {
    fn default() -> Self {
        Self { url: "amqp://guest:guest@127.0.0.1:5672/%2f".into(), prefix: "hermes".into(), queue_expires_seconds: 0 }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ApiConfig {
    /// How long a request waits for its turn before answering 504 (the turn goes on).
    pub turn_timeout_seconds: u64,
    /// How often a waiting request re-reads the turn from Postgres, in case an event was lost.
    pub recheck_seconds: u64,
    /// SSE keepalive comment interval.
    pub keepalive_seconds: u64,
    /// When a client goes away mid-turn: `interrupt` (stop the turn, as upstream Hermes does)
    /// or `finish` (let it finish in the background; the answer stays in the session).
    pub on_disconnect: OnDisconnect,
    /// Default limits; tenants and keys may have their own (0: unlimited). Requests per
    /// minute count every authenticated request; turns are those in flight.
    pub tenant_requests_per_minute: u32,
    pub key_requests_per_minute: u32,
    pub tenant_concurrent_turns: u32,
    pub key_concurrent_turns: u32,
}

impl Default for ApiConfig {
    fn default() -> Self {
        Self {
            turn_timeout_seconds: 900,
            recheck_seconds: 5,
            keepalive_seconds: 15,
            on_disconnect: OnDisconnect::Interrupt,
            tenant_requests_per_minute: 1_200,
            key_requests_per_minute: 600,
            tenant_concurrent_turns: 64,
            key_concurrent_turns: 32,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct WorkerConfig {
    /// Stable name of this worker in leases and logs; defaults to host name and pid.
    pub id: Option<String>,
    /// Turns this worker runs at once (also the RabbitMQ prefetch).
    pub max_concurrent_turns: u16,
    /// A turn's lease and session lock live this long without a heartbeat: how soon a dead
    /// worker's turn is taken over (with the reaper's tick), about 9 s by default.
    pub lease_seconds: u64,
    /// Heartbeat period; well under `lease_seconds` (four per lease: three may be missed
    /// before a live worker's turn is taken over, and fencing refuses the slow one's writes).
    pub heartbeat_millis: u64,
    /// On SIGTERM, how long running turns may take to finish before they are handed back.
    pub drain_seconds: u64,
    /// Iteration budget of a main agent.
    pub max_iterations: u32,
    /// How deep `delegate_task` may nest (1: children cannot delegate; at most 3).
    pub delegation_max_depth: u32,
    /// How long a dangerous-command approval waits for the user before it counts as denied.
    pub approval_timeout_seconds: u64,
    /// How long a `clarify` question waits for the user before the turn goes on without.
    pub clarify_timeout_seconds: u64,
    /// Delegated children one tenant may run at once across all workers.
    pub max_children_per_tenant: u32,
    /// The longest a background child (`delegate_task(background=true)`) may work, in
    /// seconds, before it is stopped and reported as failed.
    pub child_timeout_seconds: u64,
    /// The longest a cron job's `script` may run, in seconds (upstream's
    /// `cron.script_timeout_seconds`), before it is killed and the run fails.
    pub cron_script_timeout_seconds: u64,
    /// An unattended run (cron, webhook) with no activity (tokens, tool calls) this long fails.
    pub unattended_inactivity_seconds: u64,
    /// Turns a standing goal (`/goal`) may take before it pauses.
    pub goal_max_turns: u32,
    /// The share of this worker's slots one tenant may hold at once (at least one slot), so a
    /// tenant's flood of chat, webhook or cron turns leaves room for the others. 1.0: no limit.
    pub tenant_share: f64,
    /// A delivery of a tenant at its share goes back to the queue after this pause (its turn
    /// waits in Postgres meanwhile).
    pub defer_millis: u64,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        Self {
            id: None,
            max_concurrent_turns: 64,
            lease_seconds: 8,
            heartbeat_millis: 2_000,
            drain_seconds: 30,
            max_iterations: 90,
            delegation_max_depth: 1,
            approval_timeout_seconds: 300,
            clarify_timeout_seconds: 600,
            max_children_per_tenant: 8,
            child_timeout_seconds: 1_800,
            cron_script_timeout_seconds: 120,
            unattended_inactivity_seconds: 600,
            goal_max_turns: 20,
            tenant_share: 0.5,
            defer_millis: 500,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SchedulerConfig {
    /// How often the lease reaper looks for abandoned turns.
    pub reaper_interval_millis: u64,
    /// A queued turn nobody claimed for this long is published again (its queue message was lost).
    pub queued_grace_seconds: u64,
    /// How often data past its retention (`retention`, and each tenant's) is deleted.
    pub prune_interval_seconds: u64,
    /// How often due cron jobs are looked for.
    pub cron_interval_millis: u64,
    /// Cron runs open at once across the installation, and per tenant.
    pub cron_max_parallel: u32,
    pub cron_max_parallel_per_tenant: u32,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        Self {
            reaper_interval_millis: 1_000,
            queued_grace_seconds: 20,
            prune_interval_seconds: 3_600,
            cron_interval_millis: 1_000,
            cron_max_parallel: 64,
            cron_max_parallel_per_tenant: 8,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct GatewayConfig {
    /// Address of the chat-platform webhook listener.
    pub bind: String,
    /// Long-poll wait of one `getUpdates` call.
    pub poll_timeout_seconds: u64,
    /// How long a pod's hold on a bot's connection lasts without renewal (renewed every third).
    pub lease_seconds: u64,
    /// How often the gateway looks for bots to poll that no pod holds.
    pub rebalance_seconds: u64,
    /// How often the outbox is checked for replies to send.
    pub outbox_poll_millis: u64,
    /// How long a pod may take to deliver a claimed reply before another pod may.
    pub outbox_lease_seconds: u64,
    /// Deliveries of a reply before it is given up (platform errors that may pass).
    pub outbox_max_attempts: i32,
    /// How often a kept socket (Slack Socket Mode, a WeCom AI bot) is pinged; WeCom's SDK pings
    /// every 30 s and calls the socket dead after two unanswered pings.
    pub socket_heartbeat_seconds: u64,
    /// The gateway's address as senders on the internet reach it (`https://hooks.example.com`),
    /// shown in webhook URLs.
    pub public_url: Option<String>,
    /// First retry delay of an outbound event; later ones are 3, 12, 60, 180, 360, 1080 times it.
    pub events_retry_base_millis: u64,
    /// Let event endpoints be private addresses (a receiver inside the cluster); off: public only.
    pub events_allow_private_targets: bool,
    /// Requests per minute one bot's (or webhook's) route takes, counted before it is looked up
    /// (0: unlimited).
    pub inbound_requests_per_minute: u32,
    /// The largest file (other than images and voice) a person may send, in MB, under each
    /// platform's own limit (Telegram and WeCom 20 MB, Slack 100 MB here).
    pub max_file_mb: u64,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            bind: "127.0.0.1:8081".into(),
            poll_timeout_seconds: 25,
            lease_seconds: 15,
            rebalance_seconds: 5,
            outbox_poll_millis: 200,
            outbox_lease_seconds: 60,
            outbox_max_attempts: 8,
            socket_heartbeat_seconds: 30,
            public_url: None,
            events_retry_base_millis: 10_000,
            events_allow_private_targets: false,
            inbound_requests_per_minute: 6_000,
            max_file_mb: 20,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    /// Whole-request timeout of one provider call.
    pub request_timeout_seconds: u64,
    /// Timeout to connect and to receive the first byte.
    pub connect_timeout_seconds: u64,
    /// Retries of a retryable provider error (5xx, 429, transport) before the turn fails.
    pub max_retries: u32,
    /// First backoff delay; doubles each retry (up to 120 s), with jitter.
    pub retry_base_millis: u64,
    /// How long Anthropic keeps cached prompt prefixes: `5m` or `1h` (costs more to write).
    pub anthropic_cache_ttl: AnthropicCacheTtl,
    /// Hosts of OpenAI-compatible gateways that pass Anthropic's `cache_control` breakpoints on
    /// to Claude (OpenRouter always does): Claude there is sent the native caching layout.
    pub prompt_cache_gateways: Vec<String>,
    /// After a chat session's first exchange, a model titles it in the background (its `title`
    /// side task's models, else the auxiliary model, else the main one), as upstream does.
    pub session_titles: bool,
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            request_timeout_seconds: 600,
            connect_timeout_seconds: 15,
            max_retries: 3,
            retry_base_millis: 5000,
            anthropic_cache_ttl: AnthropicCacheTtl::FiveMinutes,
            prompt_cache_gateways: Vec::new(),
            session_titles: true,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SecretsConfig {
    /// Base64 of 32 random bytes that encrypts tenant secrets at rest (AES-256-GCM).
    /// Set it from the environment (`HERMES__SECRETS__MASTER_KEY`) or a Kubernetes Secret.
    pub master_key: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetryConfig {
    /// `json` (one object per line) or `text` (for a terminal).
    pub log_format: LogFormat,
    /// A `tracing` filter such as `info,hermes=debug`; `RUST_LOG` wins when set.
    pub log_filter: String,
    /// Where traces go over OTLP (`http://collector:4317` for gRPC, `http://collector:4318`
    /// for HTTP). Unset: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT`,
    /// and with neither no traces are exported.
    pub otlp_endpoint: Option<String>,
    /// `grpc` or `http/protobuf`. Unset: `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` /
    /// `OTEL_EXPORTER_OTLP_PROTOCOL`, else `http/protobuf` (the specification's default).
    pub otlp_protocol: Option<OtlpProtocol>,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self { log_format: LogFormat::Json, log_filter: "info".into(), otlp_endpoint: None, otlp_protocol: None }
    }
}

impl HermesConfig {
    /// Loads defaults, then upstream Hermes's web variables (`SEARXNG_URL`, ...), then `file`
    /// if given, then `HERMES__*` environment variables.
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        Self::figment(file).extract::<Self>().map_err(|e| ConfigError::Load(Box::new(e)))?.validated()
    }

    /// Where people reach the console: `admin.public_url`, else the API's own address.
    pub fn console_url(&self) -> String {
        match self.admin.public_url.as_deref().map(str::trim).filter(|u| !u.is_empty()) {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => format!("http://{}", self.http.bind.replace("0.0.0.0", "127.0.0.1")),
        }
    }

    /// Where API clients reach the API: `http.public_url`, else the console's address (the
    /// same server unless an operator split them).
    pub fn api_url(&self) -> String {
        match self.http.public_url.as_deref().map(str::trim).filter(|u| !u.is_empty()) {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => self.console_url(),
        }
    }

    /// A console link carrying a one-time token (`page`: `link` to sign in, `invite` to join).
    /// The token rides in the fragment, which browsers never send to a server: no proxy log
    /// or link scanner sees it, and the page posts it to the admin API itself.
    pub fn console_link(&self, page: &str, token: &str) -> String {
        format!("{}/console/{page}#{token}", self.console_url())
    }

    /// The layered sources, for callers that add their own layer on top.
    pub fn figment(file: Option<&Path>) -> Figment {
        let upstream = Env::raw().only(&UPSTREAM_ENV.map(|(var, _)| var)).map(|var| {
            let field = UPSTREAM_ENV.iter().find(|(v, _)| var == *v).map_or("", |(_, field)| field);
            field.to_owned().into()
        });
        let mut fig = Figment::from(Serialized::defaults(HermesConfig::default())).merge(upstream);
        if let Some(path) = file {
            fig = fig.merge(Toml::file_exact(path));
        }
        fig.merge(Env::prefixed("HERMES__").split("__"))
    }

    /// Checks values that would otherwise fail late and obscurely.
    pub fn validated(self) -> Result<Self, ConfigError> {
        let w = &self.worker;
        if w.max_concurrent_turns == 0 {
            return Err(ConfigError::Invalid("worker.max_concurrent_turns must be at least 1".into()));
        }
        if w.heartbeat_millis == 0 || w.heartbeat_millis >= w.lease_seconds * 1000 {
            return Err(ConfigError::Invalid(
                "worker.heartbeat_millis must be above 0 and below worker.lease_seconds".into(),
            ));
        }
        if !(w.tenant_share > 0.0 && w.tenant_share <= 1.0) {
            return Err(ConfigError::Invalid("worker.tenant_share must be above 0 and at most 1".into()));
        }
        if w.child_timeout_seconds < 10 {
            return Err(ConfigError::Invalid("worker.child_timeout_seconds must be at least 10".into()));
        }
        // A script runs as one sandbox command: no longer than the longest command may.
        if !(1..=3_600).contains(&w.cron_script_timeout_seconds) {
            return Err(ConfigError::Invalid("worker.cron_script_timeout_seconds must be 1 to 3600".into()));
        }
        if !(1..=3).contains(&w.delegation_max_depth) {
            return Err(ConfigError::Invalid("worker.delegation_max_depth must be 1, 2 or 3".into()));
        }
        if self.rabbitmq.urls().is_empty() {
            return Err(ConfigError::Invalid("rabbitmq.url must name at least one node".into()));
        }
        if self.database.max_connections == 0 {
            return Err(ConfigError::Invalid("database.max_connections must be at least 1".into()));
        }
        self.retention.check().map_err(ConfigError::Invalid)?;
        Ok(self)
    }

    /// The effective configuration as TOML, with the master key and the services' keys masked
    /// (a key that is set shows as `<redacted>`, so a dump still tells set from unset).
    pub fn to_toml_redacted(&self) -> String {
        let mut copy = self.clone();
        let HermesConfig { secrets, web, stt, image_gen, tts, admin, database, redis, rabbitmq, .. } = &mut copy;
        for url in [&mut database.url, &mut redis.url] {
            *url = without_password(url);
        }
        rabbitmq.url = rabbitmq.urls().into_iter().map(without_password).collect::<Vec<_>>().join(",");
        let keys = std::iter::once(&mut secrets.master_key)
            .chain(std::iter::once(&mut admin.oidc.client_secret))
            .chain(web.keys_mut())
            .chain(stt.keys_mut())
            .chain(image_gen.keys_mut())
            .chain(tts.keys_mut());
        for key in keys.filter(|key| key.is_some()) {
            *key = Some("<redacted>".into());
        }
        toml::to_string_pretty(&copy).unwrap_or_else(|e| format!("# cannot render config: {e}\n"))
    }
}

/// `url` with the password of its user info (`scheme://user:password@host/...`) masked.
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let (authority, tail) = rest.split_at(rest.find(['/', '?', '#']).unwrap_or(rest.len()));
    match authority.rsplit_once('@').and_then(|(userinfo, host)| Some((userinfo.split_once(':')?.0, host))) {
        Some((user, host)) => format!("{scheme}://{user}:<redacted>@{host}{tail}"),
        None => url.to_owned(),
    }
}

#[cfg(test)]
#[expect(clippy::result_large_err, reason = "figment::Jail's closure signature")]
mod tests {
    use super::*;

    #[test]
    fn layers_apply_in_order_defaults_file_env() {
        figment::Jail::expect_with(|jail| {
            jail.create_file("hermes.toml", "[database]\nurl = \"postgres://file/db\"\nmax_connections = 7\n")?;
            jail.set_env("HERMES__DATABASE__URL", "postgres://env/db");
            let cfg = HermesConfig::load(Some(Path::new("hermes.toml"))).unwrap();
            assert_eq!(cfg.database.url, "postgres://env/db", "env beats file");
            assert_eq!(cfg.database.max_connections, 7, "file beats defaults");
            assert_eq!(cfg.redis.url, "redis://127.0.0.1:6379", "defaults fill the rest");
            assert_eq!(cfg.http.bind, "127.0.0.1:8080");
            Ok(())
        });
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused_with_the_key_named() {
        figment::Jail::expect_with(|jail| {
            jail.create_file("bad.toml", "[database]\nurll = \"x\"\n")?;
            let err = HermesConfig::load(Some(Path::new("bad.toml"))).unwrap_err().to_string();
            assert!(err.contains("urll"), "{err}");
            jail.clear_env();
            jail.set_env("HERMES__WORKER__HEARTBEAT_MILLIS", "999999");
            let err = HermesConfig::load(None).unwrap_err().to_string();
            assert!(err.contains("heartbeat"), "{err}");
            Ok(())
        });
    }

    #[test]
    fn named_values_load_by_their_names_and_a_bad_one_lists_the_allowed() {
        figment::Jail::expect_with(|jail| {
            jail.create_file(
                "named.toml",
                "[sandbox]\nbackend = \"kubernetes\"\n[llm]\nanthropic_cache_ttl = \"1h\"\n[telemetry]\nlog_format = \"text\"\n",
            )?;
            jail.set_env("HERMES__API__ON_DISCONNECT", "finish");
            let cfg = HermesConfig::load(Some(Path::new("named.toml"))).unwrap();
            assert_eq!(cfg.sandbox.backend, SandboxBackend::Kubernetes);
            assert_eq!(cfg.llm.anthropic_cache_ttl, AnthropicCacheTtl::OneHour);
            assert_eq!(cfg.telemetry.log_format, LogFormat::Text);
            assert_eq!(cfg.api.on_disconnect, OnDisconnect::Finish);
            let dumped = cfg.to_toml_redacted();
            for line in [
                "backend = \"kubernetes\"",
                "anthropic_cache_ttl = \"1h\"",
                "log_format = \"text\"",
                "on_disconnect = \"finish\"",
            ] {
                assert!(dumped.contains(line), "{line} in {dumped}");
            }
            let reloaded: HermesConfig = toml::from_str(&dumped).unwrap();
            assert_eq!(reloaded.sandbox.backend, SandboxBackend::Kubernetes, "the dump loads back");

            jail.set_env("HERMES__SANDBOX__BACKEND", "podman");
            let err = HermesConfig::load(None).unwrap_err().to_string();
            assert!(err.contains("podman") && err.contains("docker") && err.contains("kubernetes"), "{err}");
            assert!(err.to_lowercase().contains("sandbox.backend"), "the key is named: {err}");
            jail.clear_env();
            jail.set_env("HERMES__LLM__ANTHROPIC_CACHE_TTL", "2h");
            let err = HermesConfig::load(None).unwrap_err().to_string();
            assert!(err.contains("5m") && err.contains("1h"), "{err}");
            jail.clear_env();
            // The chart lists sandbox images in one variable.
            jail.set_env(
                "HERMES__SANDBOX__IMAGES",
                r#"[{name="node",reference="hermes-sandbox:node",carries="Node 20 and npx"}]"#,
            );
            jail.set_env("HERMES__SANDBOX__MAX__CPUS", "4");
            let loaded = HermesConfig::load(None).unwrap();
            assert_eq!(loaded.sandbox.image_reference(Some("node")).as_deref(), Some("hermes-sandbox:node"));
            assert_eq!(loaded.sandbox.images_offered()[0].name, "default", "the backend's own image stays offered");
            assert_eq!(loaded.sandbox.max.cpus, 4.0, "a whole number of CPUs, as the chart writes it");
            jail.set_env("HERMES__SANDBOX__IMAGES", "[]");
            assert!(HermesConfig::load(None).unwrap().sandbox.images.is_empty(), "compose's default: none more");
            Ok(())
        });
    }

    #[test]
    fn upstream_web_variables_fill_the_web_section_and_hermes_ones_win() {
        figment::Jail::expect_with(|jail| {
            jail.set_env("SEARXNG_URL", "http://searxng.search:8080");
            jail.set_env("TAVILY_API_KEY", "tvly-upstream-key");
            jail.set_env("FIRECRAWL_API_URL", "http://firecrawl:3002");
            let cfg = HermesConfig::load(None).unwrap();
            assert_eq!(cfg.web.searxng_url.as_deref(), Some("http://searxng.search:8080"));
            assert_eq!(cfg.web.tavily_api_key.as_deref(), Some("tvly-upstream-key"));
            assert_eq!(cfg.web.firecrawl_api_url.as_deref(), Some("http://firecrawl:3002"));
            assert_eq!(cfg.web.exa_api_key, None);
            jail.set_env("GROQ_API_KEY", "gsk-upstream");
            let cfg = HermesConfig::load(None).unwrap();
            assert_eq!(cfg.stt.endpoint().unwrap().api_key.as_deref(), Some("gsk-upstream"));
            let dumped = cfg.to_toml_redacted();
            assert!(!dumped.contains("tvly-upstream-key") && dumped.contains("searxng.search"), "{dumped}");
            assert!(!dumped.contains("gsk-upstream"), "{dumped}");
            jail.set_env("HERMES__WEB__SEARXNG_URL", "http://other:8888");
            jail.set_env("HERMES__WEB__EXTRACT_BACKEND", "brave-free");
            let cfg = HermesConfig::load(None).unwrap();
            assert_eq!(cfg.web.searxng_url.as_deref(), Some("http://other:8888"));
            assert_eq!(cfg.web.extract_backend, Some(WebBackend::Brave), "upstream's name for Brave is accepted");
            Ok(())
        });
    }

    #[test]
    fn dump_masks_the_master_key_the_sso_secret_and_connection_passwords() {
        let mut cfg = HermesConfig::default();
        cfg.secrets.master_key = Some("c2VjcmV0".into());
        cfg.admin.oidc.client_secret = Some("oidc-client-secret".into());
        cfg.database.url = "postgres://hermes:db-pass@db.internal:5432/hermes?sslmode=require".into();
        cfg.redis.url = "redis://:redis-pass@cache:6379/0".into();
        cfg.rabbitmq.url = "amqp://guest:mq-pass@mq-0:5672/%2f, amqp://guest:mq-pass2@mq-1:5672/%2f".into();
        let out = cfg.to_toml_redacted();
        assert!(out.contains("amqp://guest:<redacted>@mq-0:5672/%2f,amqp://guest:<redacted>@mq-1:5672/%2f"), "{out}");
        for secret in ["c2VjcmV0", "oidc-client-secret", "db-pass", "redis-pass", "mq-pass"] {
            assert!(!out.contains(secret), "{secret} in {out}");
        }
        assert!(out.contains("postgres://hermes:<redacted>@db.internal:5432/hermes?sslmode=require"), "{out}");
        assert!(out.contains("redis://:<redacted>@cache:6379/0"), "{out}");
        assert_eq!(super::without_password("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379", "no password");
        assert_eq!(super::without_password("postgres://me@db/x"), "postgres://me@db/x", "a user alone");
    }
}
