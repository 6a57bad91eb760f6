//! Fixed-window counters shared by every pod (e.g. background reviews per tenant per hour).

use std::sync::LazyLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::{Cache, Engine, Result};

/// Adds ARGV[1] unless the count would pass ARGV[2]; -1 when it would (nothing added).
static TAKE: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        "local c = tonumber(redis.call('GET', KEYS[1]) or '0')
         if c + tonumber(ARGV[1]) > tonumber(ARGV[2]) then return -1 end
         local v = redis.call('INCRBY', KEYS[1], ARGV[1])
         redis.call('EXPIRE', KEYS[1], ARGV[3])
         return v",
    )
});

/// [`TAKE`] on the in-memory engine.
#[cfg(feature = "test-support")]
fn take_in(d: &mut crate::memory::Data, key: &str, n: u64, limit: u64, secs: u64) -> i64 {
    let count = d.get(key).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    if count.saturating_add(n) > limit {
        return -1;
    }
    let v = d.incr_by(key, i64::try_from(n).unwrap_or(i64::MAX));
    d.pexpire(key, i64::try_from(secs.saturating_mul(1000)).unwrap_or(i64::MAX));
    v
}

#[derive(Clone)]
pub struct WindowCounters {
    cache: Cache,
}

impl WindowCounters {
    pub(crate) fn new(cache: Cache) -> Self {
        Self { cache }
    }

    /// The key of `name`'s count in the current `window` (windows start at multiples of it
    /// since the epoch: a day's at 00:00 UTC).
    fn current(&self, name: &str, window: Duration) -> (String, u64) {
        let secs = window.as_secs().max(1);
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        (self.cache.key(&["window", name, &(now / secs).to_string()]), secs)
    }

    /// Adds `n` to `name`'s count in the current `window` unless that would pass `limit`:
    /// the new count, or `None` (nothing added). Atomic across pods.
    pub async fn take(&self, name: &str, window: Duration, n: u64, limit: u64) -> Result<Option<u64>> {
        let (key, secs) = self.current(name, window);
        let count: i64 = match self.cache.engine() {
            Engine::Redis(redis) => TAKE.key(&key).arg(n).arg(limit).arg(secs).invoke_async(&mut redis.conn()).await?,
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => store.run(|d| take_in(d, &key, n, limit, secs)),
        };
        Ok(u64::try_from(count).ok())
    }

    /// Counts one more `name` event in the current `window`; returns the count so far.
    pub async fn hit(&self, name: &str, window: Duration) -> Result<u64> {
        let (key, secs) = self.current(name, window);
        let count: u64 = match self.cache.engine() {
            Engine::Redis(redis) => {
                let (count,): (u64,) = redis::pipe()
                    .atomic()
                    .incr(&key, 1)
                    .expire(&key, i64::try_from(secs).unwrap_or(i64::MAX))
                    .ignore()
                    .query_async(&mut redis.conn())
                    .await?;
                count
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => store.run(|d| {
                let count = d.incr_by(&key, 1);
                d.pexpire(&key, i64::try_from(secs.saturating_mul(1000)).unwrap_or(i64::MAX));
                u64::try_from(count).unwrap_or(0)
            }),
        };
        Ok(count)
    }
}
