//! What a deleted tenant leaves in Redis: the keys that name it, by their exact shapes (its
//! provider-key pools' state, its sessions' background marks, its request rate and turn slots,
//! its children's slots, its daily and per-minute windows). Keys that name only an API key or
//! a session (their rates, locks and fences) expire on their own. A shape names the tenant in a
//! place no tenant-chosen text comes before, so another tenant's key never matches.

use hermes_core::TenantId;

use crate::{Cache, Engine, Result};

/// Keys deleted per `DEL`.
const DELETE_AT_ONCE: usize = 500;

/// The shapes of the keys naming a tenant (`{id}`), after the installation's prefix.
const SHAPES: [&str; 9] = [
    "pool:{id}:*",
    "bg:{id}:*",
    "rate:tenant:{id}",
    "turns:tenant:{id}",
    "children:{id}",
    "window:web-search:{id}:*",
    "window:web-extract:{id}:*",
    "window:reviews:{id}:*",
    "window:mcp-sampling:{id}:*",
];

/// `text` with Redis's glob characters escaped.
fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Whether `key` (without the prefix) has one of [`SHAPES`] for `id`.
fn has_shape(key: &str, id: &str) -> bool {
    SHAPES.iter().any(|shape| {
        let shape = shape.replace("{id}", id);
        match shape.strip_suffix('*') {
            Some(start) => key.starts_with(start),
            None => key == shape,
        }
    })
}

impl Cache {
    /// The keys of this installation's prefix that name `tenant`.
    pub async fn tenant_keys(&self, tenant: TenantId) -> Result<Vec<String>> {
        let id = tenant.to_string();
        match self.engine() {
            Engine::Redis(redis) => {
                let mut conn = redis.conn();
                let mut found: Vec<String> = Vec::new();
                for shape in SHAPES {
                    let pattern = format!("{}:{}", literal(&self.prefix), shape.replace("{id}", &id));
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
                        let prefix = format!("{}:", self.prefix);
                        found.extend(
                            keys.into_iter().filter(|k| k.strip_prefix(&prefix).is_some_and(|k| has_shape(k, &id))),
                        );
                        if next == 0 {
                            break;
                        }
                        cursor = next;
                    }
                }
                Ok(found)
            }
            #[cfg(feature = "test-support")]
            Engine::Memory(store) => {
                let prefix = format!("{}:", self.prefix);
                let keys = store.run(|d| d.keys_containing(&id));
                Ok(keys.into_iter().filter(|k| k.strip_prefix(&prefix).is_some_and(|k| has_shape(k, &id))).collect())
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_keys_that_name_the_tenant_in_their_place_match() {
        let (a, b) = ("0199aaaa-0000-7000-8000-000000000001", "0199bbbb-0000-7000-8000-000000000002");
        assert!(has_shape(&format!("pool:{a}:openai"), a));
        assert!(has_shape(&format!("rate:tenant:{a}"), a));
        assert!(has_shape(&format!("window:web-search:{a}:20420"), a));
        assert!(!has_shape(&format!("pool:{b}:x:{a}:y"), a), "another tenant's provider named after it");
        assert!(!has_shape(&format!("window:mcp-sampling:{b}:{a}:1"), a), "another tenant's server named after it");
        assert!(!has_shape(&format!("rate:tenant:{a}x"), a));
        assert_eq!(literal("hermes*[x]"), "hermes\\*\\[x\\]");
    }
}
