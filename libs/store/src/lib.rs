//! Postgres repositories. Every function that touches tenant data takes a [`TenantId`], and
//! every query filters by it, so another tenant's rows are simply not found. Each is a method of
//! one of the store's [`views`] (`store.turns()`, ...), in the module of what it stores; the
//! headings below are the views.
//!
//! What is where:
//! - Tenants and their access: [`tenants`], [`api_keys`] (authentication: where a tenant
//!   comes from), [`budgets`], [`credentials`] (pooled provider keys), [`secrets`] (sealing at
//!   rest), [`pricing`] (installation-wide prices, the tenant's usage report), [`usage`],
//!   [`retention_policy`] (how long the tenant keeps its data).
//! - Agents and what they know: [`agents`], [`skills`], [`skill_usage`], [`memory`].
//! - Conversations: [`sessions`], [`session_admin`] (sessions as API resources),
//!   [`session_find`] (tenant-wide listing and search for the admin plane),
//!   [`session_policy`], [`routes`] (a chat's current session), [`messages`], [`search`] and
//!   [`search_text`], [`export`], [`goals`], [`goal_control`], [`chat_admin`], [`steer`].
//! - Turns: [`turns`] (enqueue, claim, lease, fenced finish), [`idempotency`],
//!   [`interactions`] (what a parked turn waits on), [`responses`] (the Responses API),
//!   [`turn_files`], [`delegations`] (background children and their report).
//! - Chat platforms: [`channels`], [`pairing`], [`inbound`] (messages taken in exactly once),
//!   [`streams`] (answer previews), [`outbox`] (replies queued for delivery).
//! - Unattended runs: [`cron`] and [`cron_fires`] (jobs, fired runs), [`webhooks`] (inbound
//!   triggers), [`deliveries`] (where a run's answer goes), [`event_hooks`] (outbound events),
//!   [`process_watches`] (background processes that wake the agent).
//! - A tenant's whole data: [`tenant_tables`] (where its rows are, read from the schema),
//!   [`tenant_export`] (all of them, as JSON lines); its deletion is in [`system`].
//! - [`system`]: the queries that span tenants (the reaper, outbox, cron and event claims,
//!   retention, channel and webhook lookups before a tenant is known), and nowhere else; its
//!   module docs say why each is cross-tenant.
//!
//! Rows map with `sqlx::FromRow` where a row is its struct; a row's typed ids and its tenant
//! are read through one private module, so no row mapper constructs a [`TenantId`] itself.

pub mod admin;
pub mod agents;
pub mod api_keys;
pub mod budgets;
pub mod channels;
pub mod chat_admin;
pub mod credentials;
pub mod cron;
pub mod cron_fires;
pub mod delegations;
pub mod deliveries;
pub mod event_hooks;
pub mod export;
pub mod file_storage;
pub mod goal_control;
pub mod goals;
pub mod idempotency;
pub mod inbound;
pub mod interactions;
pub mod mcp_servers;
pub mod media_calls;
pub mod memory;
pub mod messages;
pub mod migrations;
pub mod outbox;
pub mod pairing;
pub mod pricing;
pub mod process_watches;
pub mod responses;
pub mod retention_policy;
pub mod routes;
mod rows;
pub mod search;
pub mod search_text;
pub mod secret_bindings;
pub mod secrets;
mod servers;
pub mod session_admin;
pub mod session_find;
pub mod session_policy;
pub mod sessions;
pub mod skill_usage;
pub mod skills;
pub mod spend;
pub mod steer;
pub mod streams;
pub mod system;
pub mod tenant_export;
pub mod tenant_tables;
pub mod tenants;
pub mod turn_files;
pub mod turn_inputs;
pub mod turns;
pub mod usage;
pub mod views;
pub mod voice_modes;
mod walls;
pub mod web_quotas;
pub mod webhooks;

use std::time::Duration;

use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection, PgPool};

pub use agents::{Agent, AgentChanges, ModelRef, NewAgent};
pub use api_keys::{ApiKey, KeyAuth, Limits};
pub use budgets::{Budget, BudgetState};
pub use channels::{Channel, ChannelAccess, NewChannel};
pub use credentials::{CredentialPools, NewCredential, PooledCredential};
pub use export::{ExportedMessage, LineageNode, SessionExport};
pub use file_storage::FileStorage;
pub use idempotency::{Enqueued, Idempotency};
pub use inbound::{Accepted, BusyTurn};
pub use interactions::{Answered, Park};
pub use mcp_servers::StoredMcpServer;
pub use media_calls::{MediaCall, MediaUnits};
pub use memory::{MemorySnapshot, MemoryTarget};
pub use messages::{Appended, StoredMessage};
pub use pairing::{PairingApproval, PairingRequest, PairingStart};
pub use pricing::{ModelPrice, UsageGroup, UsageLine, UsageTotals};
pub use responses::{NewResponse, ResponseChain, StoredResponse, TurnOverview};
pub use routes::Route;
pub use search::{FoundMessage, FoundSession, SearchOrder, SearchScope, SessionSummary};
pub use secret_bindings::{BoundSecret, SecretBinding};
pub use secrets::SecretBox;
pub use session_admin::SessionInfo;
pub use session_find::{ListedSession, SessionFilter};
pub use session_policy::{ResetReason, SessionPolicy};
pub use sessions::Session;
pub use skill_usage::{CuratorChange, CuratorRules, SkillEvent, SkillUse};
pub use skills::{NewSkill, SkillRecord, SkillScope, SyncReport, VisibleSkill};
pub use spend::{SpendDecision, SpendRequest};
pub use system::{Backlog, GoneScan, HeldLease, OrphanedTurn, OutboxItem, Presence, StrandedTurn};
pub use tenants::Tenant;
pub use turn_inputs::TurnInputs;
pub use turns::{ClaimedTurn, LeaseState, NewTurn, TurnStatus, TurnTarget};
pub use usage::ModelCall;
pub use web_quotas::WebQuotas;

/// The migrations in the repository's top-level `migrations/` folder.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations");

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("not found")]
    NotFound,
    #[error("{0} already exists")]
    Conflict(String),
    /// A newer worker owns the session; this writer must stop.
    #[error("fenced out: another worker owns the session now")]
    Fenced,
    #[error("invalid input: {0}")]
    Invalid(String),
    /// The object is in use and cannot change now (a session with a running turn).
    #[error("{0}")]
    Busy(String),
    #[error("secret error: {0}")]
    Secret(String),
    #[error("database error: {0}")]
    Database(sqlx::Error),
    #[error("migration error: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("stored data is malformed: {0}")]
    Corrupt(String),
    /// The schema is too old to take this build's migrations in one step.
    #[error("upgrade stop: {0}")]
    UpgradeStop(String),
}

impl StoreError {
    /// Whether trying again later may succeed (a lost connection, a full pool, a deadlock), as
    /// opposed to a request that will fail the same way every time (a violated constraint).
    pub fn is_transient(&self) -> bool {
        match self {
            StoreError::Database(sqlx::Error::Database(db)) => {
                let code = db.code().unwrap_or_default();
                // 08: connection, 40: serialization/deadlock, 53: resources, 57: shutdown;
                // 25006: a write reached a standby (the primary is moving).
                ["08", "40", "53", "57", "25006"].iter().any(|class| code.starts_with(class))
            }
            StoreError::Database(_) => true,
            _ => false,
        }
    }

    /// Maps a foreign-key violation (the row it names is gone, or another tenant's) into
    /// `NotFound`, leaving other errors alone.
    pub(crate) fn not_found_on_foreign_key(err: sqlx::Error) -> StoreError {
        match &err {
            sqlx::Error::Database(db) if db.is_foreign_key_violation() => StoreError::NotFound,
            _ => StoreError::from(err),
        }
    }

    /// Maps a violated CHECK constraint into `Invalid(why)`, leaving other errors alone.
    pub(crate) fn invalid_on_check(err: sqlx::Error, why: impl Into<String>) -> StoreError {
        match &err {
            sqlx::Error::Database(db) if db.is_check_violation() => StoreError::Invalid(why.into()),
            _ => StoreError::from(err),
        }
    }

    /// Maps a unique-violation into `Conflict(what)`, leaving other errors alone.
    pub(crate) fn conflict_on_unique(err: sqlx::Error, what: &str) -> StoreError {
        match &err {
            sqlx::Error::Database(db) if db.is_unique_violation() => StoreError::Conflict(what.to_owned()),
            _ => StoreError::from(err),
        }
    }
}

impl From<sqlx::Error> for StoreError {
    /// A write the row policies refused (migration 0040) touched another tenant's row: to the
    /// caller that is an object it does not have. The filter in the query should have said so
    /// first, so the wall's catch is logged.
    fn from(err: sqlx::Error) -> Self {
        if let sqlx::Error::Database(db) = &err {
            match db.code().as_deref() {
                Some("42501") if db.message().contains("row-level security") => {
                    tracing::warn!(error = %db, "the row policies refused another tenant's row");
                    return StoreError::NotFound;
                }
                // Text Postgres cannot store: a NUL character (in text or a JSON string).
                Some("22021" | "22P05") => {
                    return StoreError::Invalid("text may not contain NUL (\\u0000) characters".into());
                }
                _ => {}
            }
        }
        StoreError::Database(err)
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// `NotFound` when a write changed no row: what it names is gone, or another tenant's.
pub(crate) fn require_changed(done: &sqlx::postgres::PgQueryResult) -> Result<()> {
    if done.rows_affected() == 0 { Err(StoreError::NotFound) } else { Ok(()) }
}

/// How long a query waits for a free connection before it fails.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// The handle every role uses: a pool per database role (see [`walls`]).
#[derive(Clone)]
pub struct Store {
    pools: walls::Pools,
}

impl Store {
    /// Connects to `url` (its user owns the tables and runs the migrations): the store's
    /// queries run as the roles of migration 0040, in pools of at most `max_connections`.
    /// A `url` naming several servers (`h1:5432,h2:5432`) works on the primary among them and
    /// follows a promotion (`servers.rs`). Fails when no server can be reached.
    pub async fn connect(url: &str, max_connections: u32) -> Result<Self> {
        let options = |url: &str| -> Result<PgConnectOptions> {
            Ok(url.parse::<PgConnectOptions>()?.log_slow_statements(log::LevelFilter::Warn, Duration::from_millis(500)))
        };
        let (primary, failover) = match servers::split(url) {
            None => (options(url)?, None),
            Some(urls) => {
                let each = urls.iter().map(|u| options(u)).collect::<Result<Vec<_>>>()?;
                let primary = servers::find_primary(&each).await?;
                (each[primary].clone(), Some((each, primary)))
            }
        };
        let store = Self { pools: walls::Pools::lazy(primary, max_connections, ACQUIRE_TIMEOUT) };
        // The roles may not exist before the first migration: prove the server answers as
        // the owner.
        store.pools.owner().await?.close().await?;
        if let Some((each, primary)) = failover {
            #[expect(clippy::disallowed_methods, reason = "the store has no telemetry; the task only loops and logs")]
            tokio::spawn(servers::follow_primary(store.pools.clone(), each, primary));
        }
        Ok(store)
    }

    /// A store on the database of an existing pool, whose user owns the tables (tests).
    pub fn from_pool(pool: &PgPool) -> Self {
        Self { pools: walls::Pools::lazy((*pool.connect_options()).clone(), 8, ACQUIRE_TIMEOUT) }
    }

    /// A store that connects when first used and waits at most `acquire_timeout` for a
    /// connection (tests of what happens when it cannot).
    pub fn connect_lazy(url: &str, acquire_timeout: Duration) -> Result<Self> {
        Ok(Self { pools: walls::Pools::lazy(url.parse::<PgConnectOptions>()?, 2, acquire_timeout) })
    }

    /// Applies pending migrations, as the owner; refuses to pass an upgrade stop
    /// (`migrations.rs`).
    pub async fn migrate(&self) -> Result<()> {
        let mut owner = self.pools.owner().await?;
        migrations::check_upgrade_stops(&mut owner).await?;
        MIGRATOR.run(&mut owner).await?;
        owner.close().await?;
        Ok(())
    }

    /// Refreshes the planner's statistics of the transcript tables (after a bulk load, such as
    /// an import or a benchmark fill, before autovacuum gets to it). Only the owner may.
    pub async fn analyze(&self) -> Result<()> {
        let mut owner = self.pools.owner().await?;
        sqlx::query("ANALYZE sessions, messages").execute(&mut owner).await?;
        owner.close().await?;
        Ok(())
    }

    /// Whether the server in use is a primary: a standby (the old primary demoted, or a
    /// promotion not yet followed) answers reads but refuses every write a role makes.
    pub async fn is_primary(&self) -> Result<bool> {
        let standby: bool = sqlx::query_scalar("SELECT pg_is_in_recovery()").fetch_one(self.system_pool()).await?;
        Ok(!standby)
    }

    /// How far the database's schema is behind this build: `None` when it has every migration
    /// the build carries (or newer ones, mid rolling upgrade); else the newest applied and the
    /// newest needed. Fails when the ledger cannot be read (before migration 0043, too).
    pub async fn schema_lag(&self) -> Result<Option<(i64, i64)>> {
        let needed = MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0);
        let applied: Option<i64> = sqlx::query_scalar("SELECT max(version) FROM _sqlx_migrations WHERE success")
            .fetch_one(self.system_pool())
            .await?;
        let applied = applied.unwrap_or(0);
        Ok((applied < needed).then_some((applied, needed)))
    }
}
