//! What a deleted tenant leaves in Redis: every key naming it (its provider-key pools' state,
//! its turn and child slots, its request rates and windows, its sessions' background marks).
//! Keys that name only an API key or a session (their locks and fences) expire on their own.

use hermes_core::TenantId;

use crate::{Cache, Engine, Result};

/// Keys deleted per `DEL`.
const DELETE_AT_ONCE: usize = 500;

impl Cache {
    /// The keys of this installation's prefix that name `tenant`.
    pub async fn tenant_keys(&self, tenant: TenantId) -> Result<Vec<String>> {
        let id = tenant.to_string();
        match self.engine() {
            Engine::Redis(redis) => {
                let mut conn = redis.conn();
                let pattern = format!("{}:*{id}*", self.prefix);
                let mut found: Vec<String> = Vec::new();
                let mut cursor: u64 = 0;
                loop {
                    let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                        .arg(cursor)
                        .arg("MATCH")
                        .arg(&pattern)
                        .arg("COUNT")
                        .arg(1000)
                        .query_async(&mut conn)
                        .await?;
                    found.extend(keys);
                    if next == 0 {
                        return Ok(found);
                    }
                    cursor = next;
                }
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => Ok(store.run(|d| d.keys_containing(&id))),
        }
    }

    /// Deletes every key of this installation's prefix that names `tenant`; returns how many.
    pub async fn forget_tenant(&self, tenant: TenantId) -> Result<u64> {
        let found = self.tenant_keys(tenant).await?;
        match self.engine() {
            Engine::Redis(redis) => {
                let mut conn = redis.conn();
                let mut deleted = 0u64;
                for chunk in found.chunks(DELETE_AT_ONCE) {
                    let n: u64 = redis::cmd("DEL").arg(chunk).query_async(&mut conn).await?;
                    deleted += n;
                }
                Ok(deleted)
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => Ok(store.run(|d| found.iter().filter(|k| d.del(k)).count() as u64)),
        }
    }
}
