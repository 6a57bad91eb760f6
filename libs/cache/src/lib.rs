//! Redis: short-lived coordination state that may be lost and rebuilt (a flush costs a retry,
//! never a message). Now: the per-session lock with fencing tokens.
//!
//! With the `test-support` feature, [`Cache::in_memory`] gives the same types on an engine held
//! in this process (see `memory`), for tests of the roles without a Redis.

pub mod background;
pub mod cancel;
pub mod census;
pub mod child_slots;
pub mod key_pool;
pub mod lease;
#[cfg(feature = "test-support")]
mod memory;
mod primary;
pub mod rate;
pub mod session_lock;
mod tenant_keys;
pub mod window;

pub use background::BackgroundMarks;
pub use cancel::CancelBus;
pub use census::SandboxCensus;
pub use child_slots::Slots;
pub use key_pool::{KeyHealth, KeyPools, KeyState};
pub use lease::{Lease, Leases};
pub use rate::{RateDecision, RateLimiter};
pub use session_lock::{LockGuard, SessionLocks};
pub use window::WindowCounters;

use std::sync::Arc;

use redis::aio::ConnectionManager;

/// A Redis failure.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("redis error: {0}")]
    Redis(#[from] redis::RedisError),
}

pub type Result<T, E = CacheError> = std::result::Result<T, E>;

/// A shared, auto-reconnecting Redis connection plus the installation's key prefix.
#[derive(Clone)]
pub struct Cache {
    engine: Engine,
    prefix: String,
}

/// Where the state lives. Each operation matches on it: Redis runs its command or Lua script,
/// memory runs the script's Rust twin.
#[derive(Clone)]
pub(crate) enum Engine {
    Redis(Redis),
    #[cfg(feature = "test-support")]
    Memory(std::sync::Arc<memory::Store>),
}

/// The server commands go to now: the one of `redis.url`, or the primary Sentinel names.
#[derive(Clone)]
pub(crate) struct Redis {
    current: Arc<primary::Current>,
}

impl Redis {
    /// The shared command connection.
    pub(crate) fn conn(&self) -> ConnectionManager {
        self.current.conn()
    }

    /// A client for connections of their own (pub/sub); ask again after each loss, as the
    /// primary may have moved.
    pub(crate) fn client(&self) -> redis::Client {
        self.current.client()
    }
}

impl Cache {
    /// Connects to `url` (`redis://…`, or `redis+sentinel://…` naming sentinels and a master:
    /// see `primary`); every key is written under `prefix:`.
    pub async fn connect(url: &str, prefix: &str) -> Result<Self> {
        let current = primary::Current::connect(url).await?;
        Ok(Self { engine: Engine::Redis(Redis { current }), prefix: prefix.to_owned() })
    }

    /// A cache held in this process, for tests: every clone shares its state, and it behaves
    /// as the Redis one does (expiries, atomic scripts, pub/sub) but lives only as long as it.
    #[cfg(feature = "test-support")]
    pub fn in_memory() -> Self {
        Self { engine: Engine::Memory(std::sync::Arc::default()), prefix: "hermes".to_owned() }
    }

    /// Answers when Redis answers.
    pub async fn ping(&self) -> Result<()> {
        match &self.engine {
            Engine::Redis(redis) => {
                let _: String = redis::cmd("PING").query_async(&mut redis.conn()).await?;
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(_) => {}
        }
        Ok(())
    }

    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    pub(crate) fn key(&self, parts: &[&str]) -> String {
        let mut key = self.prefix.clone();
        for p in parts {
            key.push(':');
            key.push_str(p);
        }
        key
    }

    /// The shared state of the tenants' provider-key pools.
    pub fn key_pools(&self) -> KeyPools {
        KeyPools::new(self.clone())
    }

    /// The per-tenant slots of delegated children.
    pub fn child_slots(&self) -> Slots {
        Slots::new(self.clone(), "children")
    }

    /// Turns in flight, per tenant and per API key.
    pub fn turn_slots(&self) -> Slots {
        Slots::new(self.clone(), "turns")
    }

    /// Request rates, per tenant and per API key.
    pub fn rate_limiter(&self) -> RateLimiter {
        RateLimiter::new(self.clone())
    }

    /// Turn cancellations, broadcast to every worker.
    pub fn cancel_bus(&self) -> CancelBus {
        CancelBus::new(self.clone())
    }

    /// Sessions whose background processes may still run.
    pub fn background_marks(&self) -> BackgroundMarks {
        BackgroundMarks::new(self.clone())
    }

    /// Counters over fixed time windows.
    pub fn window_counters(&self) -> WindowCounters {
        WindowCounters::new(self.clone())
    }

    /// Leases on connections only one pod may hold.
    pub fn leases(&self) -> Leases {
        Leases::new(self.clone())
    }

    /// The workers' reports of the sandboxes they see.
    pub fn sandbox_census(&self) -> SandboxCensus {
        SandboxCensus::new(self.clone())
    }

    /// The session locks of this installation.
    pub fn session_locks(&self) -> SessionLocks {
        SessionLocks::new(self.clone())
    }
}
