//! Caps on things running at once across every pod, such as a tenant's delegated children or a
//! tenant's and an API key's turns, so one tenant's fan-out cannot take all the capacity. Each
//! running thing holds a slot in a sorted set that expires on its own if its holder dies.

use std::sync::LazyLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::Script;

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

/// Slots of one kind (`children`, `turns`), counted per scope (a tenant, an API key).
#[derive(Clone)]
pub struct Slots {
    cache: Cache,
    kind: &'static str,
    acquire: &'static Script,
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)).unwrap_or(0)
}

/// Built once (making a script hashes it) and shared by every limiter and lock made from it.
static ACQUIRE_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(ACQUIRE));

impl Slots {
    pub(crate) fn new(cache: Cache, kind: &'static str) -> Self {
        Self { cache, kind, acquire: &ACQUIRE_SCRIPT }
    }

    fn key(&self, scope: &str) -> String {
        self.cache.key(&[self.kind, scope])
    }

    /// Takes slot `id` in `scope` if fewer than `cap` are held; the slot lapses after `ttl`.
    pub async fn try_acquire(&self, scope: &str, id: &str, cap: u32, ttl: Duration) -> Result<bool> {
        let now = now_ms();
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let got: i64 = self
            .acquire
            .key(self.key(scope))
            .arg(now)
            .arg(cap)
            .arg(now.saturating_add(ttl_ms))
            .arg(id)
            .arg(ttl_ms.saturating_mul(2))
            .invoke_async(&mut self.cache.conn())
            .await?;
        Ok(got == 1)
    }

    /// Gives slot `id` of `scope` back.
    pub async fn release(&self, scope: &str, id: &str) -> Result<()> {
        let _: i64 = redis::cmd("ZREM").arg(self.key(scope)).arg(id).query_async(&mut self.cache.conn()).await?;
        Ok(())
    }
}
