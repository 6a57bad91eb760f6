//! Which sessions have a background process that may still run, for the session reset rule
//! ("never reset a chat while its background process runs"). Processes live in sandboxes that
//! only workers reach, so workers leave a mark here that the gateway can read: set when a
//! process starts, for as long as one can outlive its sandbox's last use (the sandbox reaper
//! keeps a sandbox with processes up to four idle periods), and cleared when the worker sees
//! all of the session's processes finished. A lost mark only lets a reset happen early.

use std::time::Duration;

use redis::AsyncCommands;

use hermes_core::{SessionId, TenantId};

use crate::{Cache, Result};

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
        let _: () = self.cache.conn().set_ex(self.key(tenant, session), 1, secs).await?;
        Ok(())
    }

    /// The session's background processes have all finished.
    pub async fn clear(&self, tenant: TenantId, session: SessionId) -> Result<()> {
        let _: () = self.cache.conn().del(self.key(tenant, session)).await?;
        Ok(())
    }

    /// Whether a background process of the session may still run.
    pub async fn is_marked(&self, tenant: TenantId, session: SessionId) -> Result<bool> {
        Ok(self.cache.conn().exists(self.key(tenant, session)).await?)
    }
}
