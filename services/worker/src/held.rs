//! Places held per key, at most a cap of them each: a sandbox's open egress connections, a
//! tenant's share of the worker's slots. A place is given back when its holder is dropped, so
//! a task that ends any way (an error, a panic, a cancelled future) never keeps one.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

/// How many places each key holds now, out of `cap`.
pub(crate) struct Held<K> {
    cap: usize,
    counts: Arc<Mutex<HashMap<K, usize>>>,
}

/// One place held by `key`; given back when dropped.
pub(crate) struct Place<K: Eq + Hash> {
    counts: Arc<Mutex<HashMap<K, usize>>>,
    key: K,
}

impl<K: Eq + Hash + Clone> Held<K> {
    /// At most `cap` places a key.
    pub fn new(cap: usize) -> Self {
        Self { cap, counts: Arc::default() }
    }

    /// The most places a key may hold (for tests of what sets it).
    #[cfg(test)]
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// A place for `key`, unless it holds `cap` of them already.
    pub fn take(&self, key: K) -> Option<Place<K>> {
        let mut counts = self.counts.lock().ok()?;
        let held = counts.entry(key.clone()).or_default();
        if *held >= self.cap {
            return None;
        }
        *held += 1;
        Some(Place { counts: self.counts.clone(), key })
    }
}

impl<K: Eq + Hash> Drop for Place<K> {
    fn drop(&mut self) {
        if let Ok(mut counts) = self.counts.lock()
            && let Some(held) = counts.get_mut(&self.key)
        {
            *held = held.saturating_sub(1);
            // No entry for a key that holds nothing: the map stays as small as what is held.
            if *held == 0 {
                counts.remove(&self.key);
            }
        }
    }
}
