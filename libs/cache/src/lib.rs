//! Redis: short-lived coordination state that may be lost and rebuilt (a flush costs a retry,
//! never a message). Now: the per-session lock with fencing tokens.

pub mod background;
pub mod cancel;
pub mod census;
pub mod child_slots;
pub mod key_pool;
pub mod lease;
pub mod rate;
pub mod session_lock;
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
    client: redis::Client,
    conn: ConnectionManager,
    prefix: String,
}

impl Cache {
    /// Connects to `url`; every key is written under `prefix:`.
    pub async fn connect(url: &str, prefix: &str) -> Result<Self> {
        let client = redis::Client::open(url)?;
        let conn = client.get_connection_manager().await?;
        Ok(Self { client, conn, prefix: prefix.to_owned() })
    }

    /// Answers when Redis answers.
    pub async fn ping(&self) -> Result<()> {
        let mut conn = self.conn.clone();
        let _: String = redis::cmd("PING").query_async(&mut conn).await?;
        Ok(())
    }

    pub(crate) fn key(&self, parts: &[&str]) -> String {
        let mut key = self.prefix.clone();
        for p in parts {
            key.push(':');
            key.push_str(p);
        }
        key
    }

    pub(crate) fn conn(&self) -> ConnectionManager {
        self.conn.clone()
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

    pub(crate) fn client(&self) -> &redis::Client {
        &self.client
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
