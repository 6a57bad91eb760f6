//! A per-tenant cap on delegated children running at once, across every worker, so one
//! tenant's fan-out cannot take all the capacity. Each running child holds a slot that
//! expires on its own if its worker dies.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::Script;

use hermes_core::TenantId;

use crate::{Cache, Result};

const ACQUIRE: &str = r#"
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  return 1
end
return 0
"#;

/// Slots for delegated children.
#[derive(Clone)]
pub struct ChildSlots {
    cache: Cache,
    acquire: Script,
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)).unwrap_or(0)
}

impl ChildSlots {
    pub(crate) fn new(cache: Cache) -> Self {
        Self { cache, acquire: Script::new(ACQUIRE) }
    }

    fn key(&self, tenant: TenantId) -> String {
        self.cache.key(&["children", &tenant.to_string()])
    }

    /// Takes slot `id` if fewer than `cap` are held; the slot lapses after `ttl`.
    pub async fn try_acquire(&self, tenant: TenantId, id: &str, cap: u32, ttl: Duration) -> Result<bool> {
        let now = now_ms();
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let got: i64 = self
            .acquire
            .key(self.key(tenant))
            .arg(now)
            .arg(cap)
            .arg(now.saturating_add(ttl_ms))
            .arg(id)
            .arg(ttl_ms.saturating_mul(2))
            .invoke_async(&mut self.cache.conn())
            .await?;
        Ok(got == 1)
    }

    /// Gives slot `id` back.
    pub async fn release(&self, tenant: TenantId, id: &str) -> Result<()> {
        let _: i64 = redis::cmd("ZREM").arg(self.key(tenant)).arg(id).query_async(&mut self.cache.conn()).await?;
        Ok(())
    }
}
