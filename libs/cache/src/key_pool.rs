//! Live state of the tenants' provider-key pools, shared by every worker: which keys are
//! cooling down or dead, how often each was used, the round-robin position. Selection is one
//! atomic script, so two workers never disagree about a key's state.

use std::sync::LazyLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::Script;

use hermes_core::TenantId;

use crate::{Cache, Engine, Result};

const SELECT: &str = r#"
local now = tonumber(ARGV[2])
local avail = {}
for i = 4, #ARGV do
  local id = ARGV[i]
  local state = redis.call('HGET', KEYS[1], id .. ':state')
  local until_ms = tonumber(redis.call('HGET', KEYS[1], id .. ':until') or '0')
  if state ~= 'dead' and until_ms <= now then
    table.insert(avail, id)
  end
end
if #avail == 0 then
  return false
end
local pick = avail[1]
local strategy = ARGV[1]
if strategy == 'round_robin' then
  local n = redis.call('HINCRBY', KEYS[1], '_rr', 1)
  pick = avail[((n - 1) % #avail) + 1]
elseif strategy == 'random' then
  pick = avail[(tonumber(ARGV[3]) % #avail) + 1]
elseif strategy == 'least_used' then
  local best = nil
  for _, id in ipairs(avail) do
    local uses = tonumber(redis.call('HGET', KEYS[1], id .. ':uses') or '0')
    if best == nil or uses < best then
      best = uses
      pick = id
    end
  end
end
redis.call('HINCRBY', KEYS[1], pick .. ':uses', 1)
return pick
"#;

/// [`SELECT`] on the in-memory engine, step for step (`avail` keeps the candidates' order).
#[cfg(feature = "test-support")]
fn select_in(
    d: &mut crate::memory::Data,
    key: &str,
    strategy: &str,
    now: u64,
    random: u32,
    candidates: &[String],
) -> Option<String> {
    let avail: Vec<&String> = candidates
        .iter()
        .filter(|id| {
            let dead = d.hget(key, &format!("{id}:state")).as_deref() == Some("dead");
            let until = d.hget(key, &format!("{id}:until")).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            !dead && until <= now
        })
        .collect();
    let len = avail.len();
    let mut pick = *avail.first()?;
    match strategy {
        "round_robin" => {
            let n = d.hincr_by(key, "_rr", 1);
            pick = avail[usize::try_from(n - 1).unwrap_or(0) % len];
        }
        "random" => pick = avail[usize::try_from(random).unwrap_or(0) % len],
        "least_used" => {
            let uses = |d: &mut crate::memory::Data, id: &str| {
                d.hget(key, &format!("{id}:uses")).and_then(|v| v.parse::<i64>().ok()).unwrap_or(0)
            };
            let mut best = None;
            for &id in &avail {
                let n = uses(d, id);
                if best.is_none_or(|b| n < b) {
                    best = Some(n);
                    pick = id;
                }
            }
        }
        _ => {}
    }
    d.hincr_by(key, &format!("{pick}:uses"), 1);
    Some(pick.clone())
}

/// Whether a pooled key is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyState {
    Ready,
    /// Rate-limited or out of quota for a while.
    CoolingDown,
    /// Refused by its provider (revoked, invalid): out until replaced.
    Dead,
}

/// One pooled key's live state.
#[derive(Debug, Clone, serde::Serialize)]
pub struct KeyHealth {
    pub id: String,
    pub state: KeyState,
    /// Unix milliseconds when it is back, while cooling down.
    pub cooling_until_ms: Option<u64>,
    /// How often workers picked it.
    pub uses: u64,
}

/// The shared state of key pools.
#[derive(Clone)]
pub struct KeyPools {
    cache: Cache,
    select: &'static Script,
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)).unwrap_or(0)
}

/// Built once (making a script hashes it) and shared by every limiter and lock made from it.
static SELECT_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(SELECT));

impl KeyPools {
    pub(crate) fn new(cache: Cache) -> Self {
        Self { cache, select: &SELECT_SCRIPT }
    }

    fn key(&self, tenant: TenantId, provider: &str) -> String {
        self.cache.key(&["pool", &tenant.to_string(), provider])
    }

    /// Picks one of `candidates` (in priority order) by `strategy`, skipping keys that are
    /// cooling down or dead, and counts the use. `None` when none is usable.
    pub async fn select(
        &self,
        tenant: TenantId,
        provider: &str,
        strategy: &str,
        candidates: &[String],
    ) -> Result<Option<String>> {
        if candidates.is_empty() {
            return Ok(None);
        }
        let key = self.key(tenant, provider);
        let (now, random) = (now_ms(), rand::random::<u32>());
        let picked: Option<String> = match self.cache.engine() {
            Engine::Redis(redis) => {
                let mut call = self.select.key(key);
                call.arg(strategy).arg(now).arg(random);
                for id in candidates {
                    call.arg(id);
                }
                call.invoke_async(&mut redis.conn()).await?
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => store.run(|d| select_in(d, &key, strategy, now, random, candidates)),
        };
        Ok(picked)
    }

    /// How each of `ids` fares in the pool of `provider`: in rotation, cooling down (until
    /// when), or dead; and how often it was picked.
    pub async fn health(&self, tenant: TenantId, provider: &str, ids: &[String]) -> Result<Vec<KeyHealth>> {
        let key = self.key(tenant, provider);
        let fields: std::collections::HashMap<String, String> = match self.cache.engine() {
            Engine::Redis(redis) => redis::cmd("HGETALL").arg(key).query_async(&mut redis.conn()).await?,
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => store.run(|d| d.hgetall(&key)),
        };
        let now = now_ms();
        Ok(ids
            .iter()
            .map(|id| {
                let get = |f: &str| fields.get(&format!("{id}:{f}"));
                let until = get("until").and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
                let state = match (get("state").map(String::as_str), until > now) {
                    (Some("dead"), _) => KeyState::Dead,
                    (_, true) => KeyState::CoolingDown,
                    _ => KeyState::Ready,
                };
                KeyHealth {
                    id: id.clone(),
                    state,
                    cooling_until_ms: (until > now).then_some(until),
                    uses: get("uses").and_then(|v| v.parse().ok()).unwrap_or(0),
                }
            })
            .collect())
    }

    /// Takes `key_id` out of rotation for `cooldown`, or for good when `None`.
    pub async fn report(
        &self,
        tenant: TenantId,
        provider: &str,
        key_id: &str,
        cooldown: Option<Duration>,
    ) -> Result<()> {
        let key = self.key(tenant, provider);
        let (field, value) = match cooldown {
            Some(d) => {
                let until = now_ms().saturating_add(u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
                (format!("{key_id}:until"), until.to_string())
            }
            None => (format!("{key_id}:state"), "dead".to_owned()),
        };
        match self.cache.engine() {
            Engine::Redis(redis) => {
                let _: () = redis::cmd("HSET").arg(&key).arg(field).arg(value).query_async(&mut redis.conn()).await?;
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => store.run(|d| d.hset(&key, &field, &value)),
        }
        Ok(())
    }
}
