//! Which sessions have a background process that may still run, for the session reset rule
//! ("never reset a chat while its background process runs"). Processes live in sandboxes that
//! only workers reach, so workers leave a mark here that the gateway can read: set when a
//! process starts, for as long as one can outlive its sandbox's last use (the sandbox reaper
//! keeps a sandbox with processes up to four idle periods), and cleared when the worker sees
//! all of the session's processes finished. A lost mark only lets a reset happen early.

use std::time::Duration;

use redis::AsyncCommands;

use hermes_core::{SessionId, TenantId};

use crate::{Cache, Engine, Result};

#[derive(Clone)]
pub struct BackgroundMarks {
    cache: Cache,
}

impl BackgroundMarks {
    pub(crate) fn new(cache: Cache) -> Self {
        Self { cache }
    }

    fn key(&self, tenant: TenantId, session: SessionId) -> String {
        self.cache.key(&["bg", &tenant.to_string(), &session.to_string()])
    }

    /// The session started a background process that may run for up to `ttl`.
    pub async fn mark(&self, tenant: TenantId, session: SessionId, ttl: Duration) -> Result<()> {
        let secs = ttl.as_secs().max(1);
        let key = self.key(tenant, session);
        match self.cache.engine() {
            Engine::Redis(redis) => {
                let _: () = redis.conn().set_ex(key, 1, secs).await?;
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => {
                store.run(|d| d.set(&key, "1", Some(secs.saturating_mul(1000)), false));
            }
        }
        Ok(())
    }

    /// The session's background processes have all finished.
    pub async fn clear(&self, tenant: TenantId, session: SessionId) -> Result<()> {
        let key = self.key(tenant, session);
        match self.cache.engine() {
            Engine::Redis(redis) => {
                let _: () = redis.conn().del(key).await?;
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => {
                store.run(|d| d.del(&key));
            }
        }
        Ok(())
    }

    /// Whether a background process of the session may still run.
    pub async fn is_marked(&self, tenant: TenantId, session: SessionId) -> Result<bool> {
        let key = self.key(tenant, session);
        Ok(match self.cache.engine() {
            Engine::Redis(redis) => redis.conn().exists(key).await?,
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => store.run(|d| d.exists(&key)),
        })
    }
}
