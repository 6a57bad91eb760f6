//! Caps on things running at once across every pod, such as a tenant's delegated children or a
//! tenant's and an API key's turns, so one tenant's fan-out cannot take all the capacity. Each
//! running thing holds a slot in a sorted set that expires on its own if its holder dies.

use std::sync::LazyLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::Script;

use crate::{Cache, Engine, Result};

const ACQUIRE: &str = r#"
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  return 1
end
return 0
"#;

/// [`ACQUIRE`] on the in-memory engine, command for command.
#[cfg(feature = "test-support")]
fn acquire_in(d: &mut crate::memory::Data, key: &str, now: u64, cap: u32, until: u64, id: &str, keep_ms: u64) -> i64 {
    // Scores are doubles on Redis too; millisecond times stay far below 2^53, so exact.
    let (now, until) = (now as f64, until as f64);
    d.zrem_up_to(key, now);
    if d.zcard(key) < usize::try_from(cap).unwrap_or(usize::MAX) {
        d.zadd(key, until, id);
        d.pexpire(key, i64::try_from(keep_ms).unwrap_or(i64::MAX));
        return 1;
    }
    0
}

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
        let key = self.key(scope);
        let got: i64 = match self.cache.engine() {
            Engine::Redis(redis) => {
                self.acquire
                    .key(key)
                    .arg(now)
                    .arg(cap)
                    .arg(now.saturating_add(ttl_ms))
                    .arg(id)
                    .arg(ttl_ms.saturating_mul(2))
                    .invoke_async(&mut redis.conn())
                    .await?
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => {
                store.run(|d| acquire_in(d, &key, now, cap, now.saturating_add(ttl_ms), id, ttl_ms.saturating_mul(2)))
            }
        };
        Ok(got == 1)
    }

    /// Gives slot `id` of `scope` back.
    pub async fn release(&self, scope: &str, id: &str) -> Result<()> {
        let key = self.key(scope);
        match self.cache.engine() {
            Engine::Redis(redis) => {
                let _: i64 = redis::cmd("ZREM").arg(key).arg(id).query_async(&mut redis.conn()).await?;
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => {
                store.run(|d| d.zrem(&key, id));
            }
        }
        Ok(())
    }
}
