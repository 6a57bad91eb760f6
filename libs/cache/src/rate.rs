//! Request rates shared by every API pod: a GCRA limiter (the generic cell rate algorithm, as
//! redis-cell and most API gateways use) in one Lua script, so a limit of N per minute allows
//! bursts of up to N and then one request every 60/N seconds, with an exact Retry-After.
//! Redis's own clock is used, so pods with skewed clocks agree.

use redis::Script;
use std::sync::LazyLock;

use crate::{Cache, Engine, Result};

/// GCRA over a "theoretical arrival time" per key. ARGV: emission interval (ms), burst.
/// Returns {allowed, retry_after_ms, remaining}.
const GCRA: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local new_tat = tat + interval
local allow_at = new_tat - burst * interval
if allow_at > now then
  return {0, allow_at - now, 0}
end
redis.call('SET', KEYS[1], new_tat, 'PX', math.max(1, new_tat - now))
return {1, 0, math.floor((now + burst * interval - new_tat) / interval)}
"#;

/// [`GCRA`] on the in-memory engine, with this process's clock for Redis's.
#[cfg(feature = "test-support")]
fn gcra_in(d: &mut crate::memory::Data, key: &str, interval: i64, burst: i64) -> (i64, i64, i64) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|t| i64::try_from(t.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0);
    let tat = d.get(key).and_then(|v| v.parse::<i64>().ok()).unwrap_or(now).max(now);
    let new_tat = tat + interval;
    let allow_at = new_tat - burst * interval;
    if allow_at > now {
        return (0, allow_at - now, 0);
    }
    let keep = u64::try_from((new_tat - now).max(1)).unwrap_or(1);
    d.set(key, &new_tat.to_string(), Some(keep), false);
    (1, 0, (now + burst * interval - new_tat).div_euclid(interval))
}

/// Whether one more request may go now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateDecision {
    pub allowed: bool,
    /// When refused: how long until one more request is allowed.
    pub retry_after_ms: u64,
    /// When allowed: how many more may follow right away.
    pub remaining: u64,
}

#[derive(Clone)]
pub struct RateLimiter {
    cache: Cache,
    script: &'static Script,
}

/// Built once (making a script hashes it) and shared by every limiter and lock made from it.
static GCRA_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(GCRA));

impl RateLimiter {
    pub(crate) fn new(cache: Cache) -> Self {
        Self { cache, script: &GCRA_SCRIPT }
    }

    /// Counts one request of `scope` against `per_minute` (0: unlimited).
    pub async fn check(&self, scope: &str, per_minute: u32) -> Result<RateDecision> {
        if per_minute == 0 {
            return Ok(RateDecision { allowed: true, retry_after_ms: 0, remaining: u64::MAX });
        }
        let interval_ms = (60_000 / u64::from(per_minute)).max(1);
        let key = self.cache.key(&["rate", scope]);
        let (allowed, retry_after_ms, remaining): (i64, i64, i64) = match self.cache.engine() {
            Engine::Redis(redis) => {
                self.script.key(key).arg(interval_ms).arg(per_minute).invoke_async(&mut redis.conn()).await?
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => {
                store.run(|d| gcra_in(d, &key, i64::try_from(interval_ms).unwrap_or(i64::MAX), i64::from(per_minute)))
            }
        };
        Ok(RateDecision {
            allowed: allowed == 1,
            retry_after_ms: u64::try_from(retry_after_ms).unwrap_or(0),
            remaining: u64::try_from(remaining).unwrap_or(0),
        })
    }
}
