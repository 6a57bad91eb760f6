//! `lease:{name}`: one holder at a time across every pod, for as long as it renews. Used for
//! connections a platform allows only once per bot (Telegram long-poll, Slack Socket Mode, the
//! WeCom bot socket): the holder renews every third of the lease, and when it dies another
//! pod takes over once the lease runs out.

use std::sync::LazyLock;
use std::time::Duration;

use redis::Script;

use crate::{Cache, Engine, Result};

/// Renews a key only for the holder whose value it still has (session locks use it too).
pub(crate) const EXTEND: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"#;

/// Deletes a key only for the holder whose value it still has.
pub(crate) const RELEASE: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"#;

/// [`EXTEND`] on the in-memory engine.
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
}

/// A held lease (it lapses by itself if its holder stops renewing it).
#[derive(Debug, Clone)]
pub struct Lease {
    key: String,
    value: String,
}

/// Built once (making a script hashes it) and shared by every limiter and lock made from it.
static EXTEND_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(EXTEND));
static RELEASE_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(RELEASE));

impl Leases {
    pub(crate) fn new(cache: Cache) -> Self {
        Self { cache, extend: &EXTEND_SCRIPT, release: &RELEASE_SCRIPT }
    }

    /// Takes `name` for `ttl` as `owner`; `None` while someone else holds it.
    pub async fn try_acquire(&self, name: &str, owner: &str, ttl: Duration) -> Result<Option<Lease>> {
        let key = self.cache.key(&["lease", name]);
        // Unique per acquisition, so a holder whose lease lapsed cannot renew the next one's.
        let value = format!("{owner}/{}", uuid::Uuid::now_v7());
        let taken = match self.cache.engine() {
            Engine::Redis(redis) => {
                let set: Option<String> = redis::cmd("SET")
                    .arg(&key)
                    .arg(&value)
                    .arg("NX")
                    .arg("PX")
                    .arg(millis(ttl))
                    .query_async(&mut redis.conn())
                    .await?;
                set.is_some()
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => store.run(|d| d.set(&key, &value, Some(millis(ttl)), true)),
        };
        Ok(taken.then_some(Lease { key, value }))
    }

    /// Renews a held lease; `false` when it was lost.
    pub async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<bool> {
        let done: i64 = match self.cache.engine() {
            Engine::Redis(redis) => {
                self.extend.key(&lease.key).arg(&lease.value).arg(millis(ttl)).invoke_async(&mut redis.conn()).await?
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => store.run(|d| extend_in(d, &lease.key, &lease.value, millis(ttl))),
        };
        Ok(done == 1)
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
