//! `lease:{name}`: one holder at a time across every pod, for as long as it renews. Used for
//! connections a platform allows only once per bot (Telegram long-poll, Slack Socket Mode, the
//! WeCom bot socket): the holder renews every third of the lease, and when it dies another
//! pod takes over once the lease runs out. A pod renews all its leases in one round trip, and
//! counts the pods sharing the work ([`Leases::census`]) to take no more than its share.

use std::sync::LazyLock;
use std::time::Duration;

use redis::Script;

use crate::{Cache, Engine, Result};

/// Extends each key `KEYS[i]` whose value is still `ARGV[i + 1]` (its holder's) by `ARGV[1]` ms;
/// one 1 or 0 per key. A pod's leases and a worker's session locks are renewed all at once:
/// one round trip a beat.
const EXTEND_ALL: &str = r#"
local extended = {}
for i, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[i + 1] then
    extended[i] = redis.call('PEXPIRE', key, ARGV[1])
  else
    extended[i] = 0
  end
end
return extended
"#;

/// Announces `ARGV[1]` in the group `KEYS[1]` for `ARGV[2]` ms, forgets members whose
/// announcement lapsed, and counts the rest. Redis's clock, so pods' clocks need not agree.
const CENSUS: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return redis.call('ZCARD', KEYS[1])
"#;

/// Most keys in one renewal script: a longer script would hold Redis up for others.
const RENEW_BATCH: usize = 1_000;

/// Deletes a key only for the holder whose value it still has.
pub(crate) const RELEASE: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"#;

/// One key of [`EXTEND_ALL`] on the in-memory engine.
#[cfg(feature = "test-support")]
pub(crate) fn extend_in(d: &mut crate::memory::Data, key: &str, value: &str, ms: u64) -> i64 {
    if d.get(key).as_deref() == Some(value) {
        return i64::from(d.pexpire(key, i64::try_from(ms).unwrap_or(i64::MAX)));
    }
    0
}

/// [`RELEASE`] on the in-memory engine.
#[cfg(feature = "test-support")]
pub(crate) fn release_in(d: &mut crate::memory::Data, key: &str, value: &str) -> i64 {
    if d.get(key).as_deref() == Some(value) {
        return i64::from(d.del(key));
    }
    0
}

/// Takes, renews and gives back leases.
#[derive(Clone)]
pub struct Leases {
    cache: Cache,
    extend: &'static Script,
    release: &'static Script,
    census: &'static Script,
}

/// A held lease (it lapses by itself if its holder stops renewing it).
#[derive(Debug, Clone)]
pub struct Lease {
    key: String,
    value: String,
}

/// Built once (making a script hashes it) and shared by every limiter and lock made from it.
pub(crate) static EXTEND_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(EXTEND_ALL));
static RELEASE_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(RELEASE));
static CENSUS_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(CENSUS));

impl Leases {
    pub(crate) fn new(cache: Cache) -> Self {
        Self { cache, extend: &EXTEND_SCRIPT, release: &RELEASE_SCRIPT, census: &CENSUS_SCRIPT }
    }

    /// Takes `name` for `ttl` as `owner`; `None` while someone else holds it.
    pub async fn try_acquire(&self, name: &str, owner: &str, ttl: Duration) -> Result<Option<Lease>> {
        Ok(self.try_acquire_all(&[name], owner, ttl).await?.pop().flatten())
    }

    /// [`Self::try_acquire`] of each of `names` in one round trip: the leases taken, in order.
    pub async fn try_acquire_all(&self, names: &[&str], owner: &str, ttl: Duration) -> Result<Vec<Option<Lease>>> {
        // Each value is unique per acquisition, so a holder whose lease lapsed cannot renew the
        // next one's.
        let wanted: Vec<Lease> = names
            .iter()
            .map(|name| Lease {
                key: self.cache.key(&["lease", name]),
                value: format!("{owner}/{}", uuid::Uuid::now_v7()),
            })
            .collect();
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        let taken: Vec<bool> = match self.cache.engine() {
            Engine::Redis(redis) => {
                let mut pipe = redis::pipe();
                for lease in &wanted {
                    pipe.cmd("SET").arg(&lease.key).arg(&lease.value).arg("NX").arg("PX").arg(millis(ttl));
                }
                let set: Vec<Option<String>> = pipe.query_async(&mut redis.conn()).await?;
                set.into_iter().map(|s| s.is_some()).collect()
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => {
                store.run(|d| wanted.iter().map(|l| d.set(&l.key, &l.value, Some(millis(ttl)), true)).collect())
            }
        };
        Ok(wanted.into_iter().zip(taken).map(|(lease, taken)| taken.then_some(lease)).collect())
    }

    /// Renews a held lease; `false` when it was lost.
    pub async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<bool> {
        Ok(self.renew_all(std::slice::from_ref(lease), ttl).await?.first().copied().unwrap_or(false))
    }

    /// Renews held leases, a thousand a round trip: for each, `false` when it was lost.
    pub async fn renew_all(&self, leases: &[Lease], ttl: Duration) -> Result<Vec<bool>> {
        let ms = millis(ttl);
        let mut renewed = Vec::with_capacity(leases.len());
        for batch in leases.chunks(RENEW_BATCH) {
            let done: Vec<i64> = match self.cache.engine() {
                Engine::Redis(redis) => {
                    let mut call = self.extend.prepare_invoke();
                    call.arg(ms);
                    for lease in batch {
                        call.key(&lease.key).arg(&lease.value);
                    }
                    call.invoke_async(&mut redis.conn()).await?
                }
                #[cfg(feature = "test-support")]
                Engine::Memory(store) => {
                    store.run(|d| batch.iter().map(|l| extend_in(d, &l.key, &l.value, ms)).collect())
                }
            };
            renewed.extend(done.into_iter().map(|d| d == 1));
        }
        Ok(renewed)
    }

    /// Announces `member` in `group` for `ttl` and counts the members whose announcement has
    /// not lapsed (itself included): how many pods share the group's leases.
    pub async fn census(&self, group: &str, member: &str, ttl: Duration) -> Result<usize> {
        let key = self.cache.key(&["lease-census", group]);
        let count: i64 = match self.cache.engine() {
            Engine::Redis(redis) => {
                self.census.key(&key).arg(member).arg(millis(ttl)).invoke_async(&mut redis.conn()).await?
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => store.run(|d| {
                let now =
                    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_millis()
                        as f64;
                d.zadd(&key, now + millis(ttl) as f64, member);
                d.zrem_up_to(&key, now);
                i64::try_from(d.zcard(&key)).unwrap_or(i64::MAX)
            }),
        };
        Ok(usize::try_from(count).unwrap_or(1).max(1))
    }

    /// Leaves `group` at once (a pod stopping), so the others take up its share now.
    pub async fn leave(&self, group: &str, member: &str) -> Result<()> {
        let key = self.cache.key(&["lease-census", group]);
        match self.cache.engine() {
            Engine::Redis(redis) => {
                let _: i64 = redis::cmd("ZREM").arg(&key).arg(member).query_async(&mut redis.conn()).await?;
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => {
                store.run(|d| d.zrem(&key, member));
            }
        }
        Ok(())
    }

    /// Who holds `name` now (the owner it was taken as), if anyone.
    pub async fn holder(&self, name: &str) -> Result<Option<String>> {
        let key = self.cache.key(&["lease", name]);
        let value: Option<String> = match self.cache.engine() {
            Engine::Redis(redis) => redis::cmd("GET").arg(&key).query_async(&mut redis.conn()).await?,
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => store.run(|d| d.get(&key)),
        };
        // A value is `{owner}/{acquisition}`, and an owner may hold slashes itself.
        Ok(value.map(|v| v.rsplit_once('/').map_or(v.clone(), |(owner, _)| owner.to_owned())))
    }

    /// Gives a lease back so another pod can take it at once.
    pub async fn release(&self, lease: &Lease) -> Result<()> {
        match self.cache.engine() {
            Engine::Redis(redis) => {
                let _: i64 = self.release.key(&lease.key).arg(&lease.value).invoke_async(&mut redis.conn()).await?;
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => {
                store.run(|d| release_in(d, &lease.key, &lease.value));
            }
        }
        Ok(())
    }
}

fn millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
}
