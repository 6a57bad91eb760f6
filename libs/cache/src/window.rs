//! Fixed-window counters shared by every pod (e.g. background reviews per tenant per hour).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::{Cache, Result};

#[derive(Clone)]
pub struct WindowCounters {
    cache: Cache,
}

impl WindowCounters {
    pub(crate) fn new(cache: Cache) -> Self {
        Self { cache }
    }

    /// Counts one more `name` event in the current `window`; returns the count so far.
    pub async fn hit(&self, name: &str, window: Duration) -> Result<u64> {
        let secs = window.as_secs().max(1);
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        let key = self.cache.key(&["window", name, &(now / secs).to_string()]);
        let (count,): (u64,) = redis::pipe()
            .atomic()
            .incr(&key, 1)
            .expire(&key, i64::try_from(secs).unwrap_or(i64::MAX))
            .ignore()
            .query_async(&mut self.cache.conn())
            .await?;
        Ok(count)
    }
}
