//! The in-memory engine (feature `test-support`): a small Redis of strings, hashes and sorted
//! sets with per-key expiry, plus pub/sub channels, held in this process. Each module's Lua
//! script has a Rust twin that runs the same commands in the same order on [`Data`] under one
//! lock, so it is as atomic as the script is on Redis.
//!
//! Expiry is lazy, as Redis's is from a reader's view: an expired key is gone the next time
//! anything touches it. Every key family here holds one kind of value, so a key of the wrong
//! kind (Redis's WRONGTYPE) never arises; it reads as missing and a write replaces it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

/// One in-memory Redis, shared by every clone of the [`crate::Cache`] made on it.
#[derive(Default)]
pub(crate) struct Store {
    data: Mutex<Data>,
    channels: Mutex<HashMap<String, Vec<mpsc::UnboundedSender<String>>>>,
}

impl Store {
    /// Runs `f` on the data with nothing else in between (a Lua script or a MULTI on Redis).
    pub fn run<R>(&self, f: impl FnOnce(&mut Data) -> R) -> R {
        let mut data = self.data.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut data)
    }

    /// PUBLISH: hands `message` to every current subscriber of `channel`; how many got it.
    pub fn publish(&self, channel: &str, message: &str) -> usize {
        let mut channels = self.channels.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(subscribers) = channels.get_mut(channel) else { return 0 };
        subscribers.retain(|s| s.send(message.to_owned()).is_ok());
        subscribers.len()
    }

    /// SUBSCRIBE: messages published on `channel` from now on (none from before, as on Redis).
    pub fn subscribe(&self, channel: &str) -> mpsc::UnboundedReceiver<String> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut channels = self.channels.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        channels.entry(channel.to_owned()).or_default().push(tx);
        rx
    }
}

/// The keys, each with its value and when it expires.
#[derive(Default)]
pub(crate) struct Data {
    entries: HashMap<String, Entry>,
}

struct Entry {
    value: Value,
    expires: Option<Instant>,
}

enum Value {
    Str(String),
    Hash(HashMap<String, String>),
    /// Member to score.
    ZSet(HashMap<String, f64>),
}

impl Data {
    /// The live entry of `key`; an expired one is removed first.
    fn live(&mut self, key: &str) -> Option<&mut Entry> {
        if self.entries.get(key).and_then(|e| e.expires).is_some_and(|at| at <= Instant::now()) {
            self.entries.remove(key);
        }
        self.entries.get_mut(key)
    }

    /// Every key containing `part`.
    pub fn keys_containing(&mut self, part: &str) -> Vec<String> {
        self.entries.keys().filter(|key| key.contains(part)).cloned().collect()
    }

    /// GET.
    pub fn get(&mut self, key: &str) -> Option<String> {
        match &self.live(key)?.value {
            Value::Str(s) => Some(s.clone()),
            _ => None,
        }
    }

    /// SET [NX] [PX ms]: `false` when NX found the key. Without PX any expiry is cleared.
    pub fn set(&mut self, key: &str, value: &str, px: Option<u64>, nx: bool) -> bool {
        if nx && self.live(key).is_some() {
            return false;
        }
        let expires = px.map(|ms| Instant::now() + Duration::from_millis(ms));
        self.entries.insert(key.to_owned(), Entry { value: Value::Str(value.to_owned()), expires });
        true
    }

    /// PEXPIRE: `false` when the key does not exist. A non-positive time deletes the key.
    pub fn pexpire(&mut self, key: &str, ms: i64) -> bool {
        let Some(entry) = self.live(key) else { return false };
        match u64::try_from(ms) {
            Ok(ms) if ms > 0 => entry.expires = Some(Instant::now() + Duration::from_millis(ms)),
            _ => {
                self.entries.remove(key);
            }
        }
        true
    }

    /// DEL: whether there was a key to delete.
    pub fn del(&mut self, key: &str) -> bool {
        self.live(key).is_some() && self.entries.remove(key).is_some()
    }

    /// EXISTS.
    pub fn exists(&mut self, key: &str) -> bool {
        self.live(key).is_some()
    }

    /// INCRBY: the new value; a missing key counts from 0, and the key keeps its expiry.
    pub fn incr_by(&mut self, key: &str, n: i64) -> i64 {
        let current = self.get(key).and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
        let next = current.saturating_add(n);
        let expires = self.live(key).and_then(|e| e.expires);
        self.entries.insert(key.to_owned(), Entry { value: Value::Str(next.to_string()), expires });
        next
    }

    /// Runs `f` on the hash at `key`, made empty when there is none (as HSET does).
    fn with_hash<R>(&mut self, key: &str, f: impl FnOnce(&mut HashMap<String, String>) -> R) -> R {
        if let Some(Value::Hash(h)) = self.live(key).map(|e| &mut e.value) {
            return f(h);
        }
        let mut hash = HashMap::new();
        let out = f(&mut hash);
        self.entries.insert(key.to_owned(), Entry { value: Value::Hash(hash), expires: None });
        out
    }

    /// HGET.
    pub fn hget(&mut self, key: &str, field: &str) -> Option<String> {
        match &self.live(key)?.value {
            Value::Hash(h) => h.get(field).cloned(),
            _ => None,
        }
    }

    /// HSET of one field.
    pub fn hset(&mut self, key: &str, field: &str, value: &str) {
        self.with_hash(key, |h| h.insert(field.to_owned(), value.to_owned()));
    }

    /// HINCRBY: the new value of `field`.
    pub fn hincr_by(&mut self, key: &str, field: &str, n: i64) -> i64 {
        self.with_hash(key, |hash| {
            let next = hash.get(field).and_then(|v| v.parse::<i64>().ok()).unwrap_or(0).saturating_add(n);
            hash.insert(field.to_owned(), next.to_string());
            next
        })
    }

    /// HGETALL.
    pub fn hgetall(&mut self, key: &str) -> HashMap<String, String> {
        match self.live(key).map(|e| &e.value) {
            Some(Value::Hash(h)) => h.clone(),
            _ => HashMap::new(),
        }
    }

    fn zset(&mut self, key: &str) -> Option<&mut HashMap<String, f64>> {
        match &mut self.live(key)?.value {
            Value::ZSet(z) => Some(z),
            _ => None,
        }
    }

    /// ZADD of one member (a member already there gets the new score).
    pub fn zadd(&mut self, key: &str, score: f64, member: &str) {
        match self.zset(key) {
            Some(z) => {
                z.insert(member.to_owned(), score);
            }
            None => {
                let z = HashMap::from([(member.to_owned(), score)]);
                self.entries.insert(key.to_owned(), Entry { value: Value::ZSet(z), expires: None });
            }
        }
    }

    /// Removes the key when its set emptied, as Redis does.
    fn drop_if_empty(&mut self, key: &str) {
        if self.zset(key).is_some_and(|z| z.is_empty()) {
            self.entries.remove(key);
        }
    }

    /// ZREM of one member: whether it was there.
    pub fn zrem(&mut self, key: &str, member: &str) -> bool {
        let removed = self.zset(key).is_some_and(|z| z.remove(member).is_some());
        self.drop_if_empty(key);
        removed
    }

    /// ZREMRANGEBYSCORE key -inf `max`.
    pub fn zrem_up_to(&mut self, key: &str, max: f64) {
        if let Some(z) = self.zset(key) {
            z.retain(|_, score| *score > max);
        }
        self.drop_if_empty(key);
    }

    /// ZCARD.
    pub fn zcard(&mut self, key: &str) -> usize {
        self.zset(key).map_or(0, |z| z.len())
    }

    /// ZRANGE key 0 -1: members by score, ties by member.
    pub fn zrange(&mut self, key: &str) -> Vec<String> {
        let mut members: Vec<(String, f64)> =
            self.zset(key).map(|z| z.iter().map(|(m, s)| (m.clone(), *s)).collect()).unwrap_or_default();
        members.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
        members.into_iter().map(|(m, _)| m).collect()
    }
}
