//! `lock:session:{id}`: at most one worker runs a session's turn at a time.
//!
//! Acquiring returns a fencing token from a per-session counter. The token is monotonic while
//! Redis keeps the counter; Postgres keeps the authoritative fence (`sessions.fence`, bumped
//! past this token on claim), so even after a Redis flush a stale holder's writes are refused.

use std::sync::LazyLock;
use std::time::Duration;

use redis::Script;

use hermes_core::SessionId;

use crate::lease::{EXTEND_SCRIPT, RELEASE};
use crate::{Cache, Engine, Result};

const ACQUIRE: &str = r#"
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local token = redis.call('INCR', KEYS[2])
  redis.call('PEXPIRE', KEYS[2], 604800000)
  return token
end
return 0
"#;

/// Deletes the lock only while the owner it names still holds it: the value is that owner, a
/// slash, and one acquisition id (no further slash).
const BREAK: &str = r#"
local held = redis.call('GET', KEYS[1])
local n = string.len(ARGV[1])
if held and string.sub(held, 1, n) == ARGV[1] and not string.find(held, '/', n + 1, true) then
  return redis.call('DEL', KEYS[1])
end
return 0
"#;

/// [`BREAK`] on the in-memory engine.
#[cfg(feature = "test-support")]
fn break_in(d: &mut crate::memory::Data, lock: &str, prefix: &str) -> i64 {
    if d.get(lock).is_some_and(|held| held.strip_prefix(prefix).is_some_and(|id| !id.contains('/'))) {
        return i64::from(d.del(lock));
    }
    0
}

/// [`ACQUIRE`] on the in-memory engine: the lock, then the next token of the fence counter.
#[cfg(feature = "test-support")]
fn acquire_in(d: &mut crate::memory::Data, lock: &str, fence: &str, value: &str, ms: u64) -> i64 {
    if d.set(lock, value, Some(ms), true) {
        let token = d.incr_by(fence, 1);
        d.pexpire(fence, 604_800_000);
        return token;
    }
    0
}

/// Acquires and manages session locks.
#[derive(Clone)]
pub struct SessionLocks {
    cache: Cache,
    acquire: &'static Script,
    extend: &'static Script,
    release: &'static Script,
    break_abandoned: &'static Script,
}

/// A held lock. Dropping it does not release it (release is async); call
/// [`SessionLocks::release`], or let the TTL expire if the process dies.
#[derive(Debug, Clone)]
pub struct LockGuard {
    pub session_id: SessionId,
    /// The fencing token of this holding.
    pub token: i64,
    owner_value: String,
}

/// Built once (making a script hashes it) and shared by every limiter and lock made from it.
static ACQUIRE_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(ACQUIRE));
static RELEASE_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(RELEASE));
static BREAK_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(BREAK));

impl SessionLocks {
    pub(crate) fn new(cache: Cache) -> Self {
        Self {
            cache,
            acquire: &ACQUIRE_SCRIPT,
            extend: &EXTEND_SCRIPT,
            release: &RELEASE_SCRIPT,
            break_abandoned: &BREAK_SCRIPT,
        }
    }

    fn keys(&self, session: SessionId) -> (String, String) {
        let id = session.to_string();
        (self.cache.key(&["lock", "session", &id]), self.cache.key(&["fence", "session", &id]))
    }

    /// Takes the lock for `ttl` as `owner`; `None` when another owner holds it.
    pub async fn try_acquire(&self, session: SessionId, owner: &str, ttl: Duration) -> Result<Option<LockGuard>> {
        let (lock, fence) = self.keys(session);
        // The value names the owner and is unique per acquisition, so a holder whose lock
        // expired and was re-taken cannot extend or release the new holder's lock.
        let owner_value = format!("{owner}/{}", uuid::Uuid::now_v7());
        let token: i64 = match self.cache.engine() {
            Engine::Redis(redis) => {
                self.acquire
                    .key(&lock)
                    .key(&fence)
                    .arg(&owner_value)
                    .arg(ttl_millis(ttl))
                    .invoke_async(&mut redis.conn())
                    .await?
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => store.run(|d| acquire_in(d, &lock, &fence, &owner_value, ttl_millis(ttl))),
        };
        Ok((token > 0).then_some(LockGuard { session_id: session, token, owner_value }))
    }

    /// Extends a held lock; `false` when it was lost (expired and maybe re-taken).
    pub async fn extend(&self, guard: &LockGuard, ttl: Duration) -> Result<bool> {
        Ok(self.extend_all(std::slice::from_ref(guard), ttl).await?.first().copied().unwrap_or(false))
    }

    /// Extends held locks in one round trip: for each, `false` when it was lost.
    pub async fn extend_all(&self, guards: &[LockGuard], ttl: Duration) -> Result<Vec<bool>> {
        if guards.is_empty() {
            return Ok(Vec::new());
        }
        let locks: Vec<String> = guards.iter().map(|g| self.keys(g.session_id).0).collect();
        let extended: Vec<i64> = match self.cache.engine() {
            Engine::Redis(redis) => {
                let mut call = self.extend.prepare_invoke();
                call.arg(ttl_millis(ttl));
                for (lock, guard) in locks.iter().zip(guards) {
                    call.key(lock).arg(&guard.owner_value);
                }
                call.invoke_async(&mut redis.conn()).await?
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => store.run(|d| {
                let ms = ttl_millis(ttl);
                locks.iter().zip(guards).map(|(lock, g)| crate::lease::extend_in(d, lock, &g.owner_value, ms)).collect()
            }),
        };
        Ok(extended.into_iter().map(|done| done == 1).collect())
    }

    /// Releases a held lock; a lock that is no longer ours is left alone.
    pub async fn release(&self, guard: &LockGuard) -> Result<()> {
        let (lock, _) = self.keys(guard.session_id);
        match self.cache.engine() {
            Engine::Redis(redis) => {
                let _: i64 = self.release.key(&lock).arg(&guard.owner_value).invoke_async(&mut redis.conn()).await?;
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => {
                store.run(|d| crate::lease::release_in(d, &lock, &guard.owner_value));
            }
        }
        Ok(())
    }

    /// Releases `session`'s lock if `lease_owner` still holds it: the reaper found that
    /// owner's worker gone, and the turn's next worker should not wait for the lock to lapse.
    /// Returns whether a lock was released.
    pub async fn break_abandoned(&self, session: SessionId, lease_owner: &str) -> Result<bool> {
        let (lock, _) = self.keys(session);
        // A holder's value is `{lease owner}/{acquisition}`.
        let prefix = format!("{lease_owner}/");
        let done: i64 = match self.cache.engine() {
            Engine::Redis(redis) => {
                self.break_abandoned.key(&lock).arg(&prefix).invoke_async(&mut redis.conn()).await?
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => store.run(|d| break_in(d, &lock, &prefix)),
        };
        Ok(done == 1)
    }
}

fn ttl_millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
}
