//! Anthropic's prompt cache as a gateway passes it on, emulated for the chat completions
//! route: a request's `cache_control` breakpoints name prefixes (the tools and every message
//! up to the marked one, markers left out, text as the one block Anthropic sees whether it came
//! as a string or a part); the longest prefix seen before, at a breakpoint or up to 20
//! messages before one, is read from the cache, the
//! longest new one is written. Prefixes under 1,024 tokens are not cached, as Anthropic's.
//! Usage reports the reads and writes as OpenRouter does, so a test can price a conversation
//! with and without caching, and notice when a prefix's bytes change between calls.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;

use serde_json::Value;

use crate::server::estimate_tokens;

/// The least prefix Anthropic caches (Sonnet and Opus).
const MIN_CACHED_TOKENS: u64 = 1_024;
/// How many earlier boundaries Anthropic checks for a hit before a breakpoint.
const LOOKBACK: usize = 20;

/// Prefixes cached so far (by digest).
#[derive(Default)]
pub(crate) struct PromptCache {
    prefixes: Mutex<HashSet<u64>>,
}

/// What one request read from and wrote to the cache, in tokens.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct CacheUse {
    pub read: u64,
    pub written: u64,
    /// The whole prompt (tools and messages).
    pub total: u64,
}

fn strip_markers(value: &mut Value) -> bool {
    let mut marked = false;
    match value {
        Value::Object(map) => {
            marked |= map.remove("cache_control").is_some();
            for v in map.values_mut() {
                marked |= strip_markers(v);
            }
        }
        Value::Array(items) => {
            for v in items {
                marked |= strip_markers(v);
            }
        }
        _ => {}
    }
    marked
}

impl PromptCache {
    /// Accounts `body` (a chat completions request): `None` when it asks for no caching.
    pub(crate) fn account(&self, body: &Value) -> Option<CacheUse> {
        let messages = body.get("messages")?.as_array()?;
        let marked: Vec<usize> =
            (0..messages.len()).filter(|&i| messages[i].to_string().contains("cache_control")).collect();
        if marked.is_empty() {
            return None;
        }
        let mut clean = body.clone();
        strip_markers(&mut clean);
        // The gateway hands Anthropic text as one text block, marked or not.
        for m in clean["messages"].as_array_mut()? {
            if let Some(text) = m.get("content").and_then(Value::as_str).map(str::to_owned) {
                m["content"] = serde_json::json!([{"type": "text", "text": text}]);
            }
        }
        let tools = clean.get("tools").map(Value::to_string).unwrap_or_default();
        let clean_messages = clean["messages"].as_array()?.clone();
        let prefix = |end: usize| {
            let text = format!("{tools}{}", Value::Array(clean_messages[..=end].to_vec()));
            let mut h = DefaultHasher::new();
            text.hash(&mut h);
            (h.finish(), estimate_tokens(&text))
        };
        let mut cached = self.prefixes.lock().ok()?;
        let mut used = CacheUse::default();
        let mut longest = 0;
        // What this request writes is there for the next one, not for itself.
        let mut new = Vec::new();
        for &end in &marked {
            // Anthropic looks for a hit at each earlier boundary too (about 20 back).
            let hit = (end.saturating_sub(LOOKBACK)..=end).rev().map(prefix).find(|(d, _)| cached.contains(d));
            if let Some((_, tokens)) = hit {
                used.read = used.read.max(tokens);
            }
            let (digest, tokens) = prefix(end);
            if tokens >= MIN_CACHED_TOKENS {
                longest = longest.max(tokens);
                new.push(digest);
            }
        }
        cached.extend(new);
        used.written = longest.saturating_sub(used.read);
        used.total = prefix(clean_messages.len().checked_sub(1)?).1;
        Some(used)
    }
}
