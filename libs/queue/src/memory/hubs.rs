//! The in-memory events exchange: a topic exchange routing each event to every hub queue with
//! a binding that matches its routing key, once per queue.

use std::collections::HashSet;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::{Connection, Server};
use crate::{QueueError, Result};

/// An event hub's exclusive queue.
pub(super) struct Hub {
    pub exchange: String,
    /// The connection it goes with.
    pub connection: u64,
    pub patterns: HashSet<String>,
    tx: mpsc::UnboundedSender<Vec<u8>>,
}

/// A handle on one hub queue, to bind and unbind it.
pub(crate) struct HubQueue {
    server: Arc<Server>,
    name: String,
}

impl Connection {
    /// Declares hub queue `name` bound to `pattern` on `exchange`; its messages come out of
    /// the receiver, which ends when the connection closes (the queue is exclusive).
    pub fn declare_hub(
        &self,
        exchange: &str,
        name: &str,
        pattern: &str,
    ) -> Result<(HubQueue, mpsc::UnboundedReceiver<Vec<u8>>)> {
        let mut state = self.server.lock();
        self.check_open(&state)?;
        let (tx, rx) = mpsc::unbounded_channel();
        let patterns = HashSet::from([pattern.to_owned()]);
        let hub = Hub { exchange: exchange.to_owned(), connection: self.id, patterns, tx };
        state.hubs.insert(name.to_owned(), hub);
        Ok((HubQueue { server: self.server.clone(), name: name.to_owned() }, rx))
    }

    /// Routes `body` by `key` to every hub queue of `exchange` with a matching binding.
    pub fn publish_event(&self, exchange: &str, key: &str, body: &[u8]) -> Result<()> {
        let state = self.server.lock();
        self.check_open(&state)?;
        if !state.exchanges.contains(exchange) {
            return Ok(());
        }
        let matching = state.hubs.values().filter(|h| h.exchange == exchange);
        for hub in matching.filter(|h| h.patterns.iter().any(|p| topic_matches(p, key))) {
            // A hub whose pump stopped is no longer listening; nothing to tell.
            let _ = hub.tx.send(body.to_vec());
        }
        Ok(())
    }
}

impl HubQueue {
    /// Adds a binding (binding twice is one binding); an error once the queue is gone.
    pub fn bind(&self, pattern: &str) -> Result<()> {
        match self.server.lock().hubs.get_mut(&self.name) {
            Some(hub) => {
                hub.patterns.insert(pattern.to_owned());
                Ok(())
            }
            None => Err(QueueError::Unreachable("the event hub's in-memory queue is gone".into())),
        }
    }

    pub fn unbind(&self, pattern: &str) {
        if let Some(hub) = self.server.lock().hubs.get_mut(&self.name) {
            hub.patterns.remove(pattern);
        }
    }
}

/// AMQP topic matching: words split on `.`, `*` matches one word, `#` zero or more.
fn topic_matches(pattern: &str, key: &str) -> bool {
    fn words(p: &[&str], k: &[&str]) -> bool {
        match (p.split_first(), k.split_first()) {
            (None, _) => k.is_empty(),
            (Some((&"#", rest)), _) => (0..=k.len()).any(|skip| words(rest, k.get(skip..).unwrap_or_default())),
            (Some(_), None) => false,
            (Some((&"*", p_rest)), Some((_, k_rest))) => words(p_rest, k_rest),
            (Some((word, p_rest)), Some((key_word, k_rest))) => word == key_word && words(p_rest, k_rest),
        }
    }
    let (p, k): (Vec<&str>, Vec<&str>) = (pattern.split('.').collect(), key.split('.').collect());
    words(&p, &k)
}

#[cfg(test)]
mod tests {
    use super::topic_matches;

    #[test]
    fn topic_patterns_match_as_amqp_defines() {
        assert!(topic_matches("t.*.s.*.p.hub", "t.a.s.b.p.hub"));
        assert!(!topic_matches("t.*.s.*.p.hub", "t.a.s.b.p.other"));
        assert!(!topic_matches("t.*.s.*.p.hub", "t.a.s.b.p.hub.extra"));
        assert!(!topic_matches("t.a.*", "t.a"), "* is exactly one word");
        assert!(topic_matches("t.#", "t"), "# may be no word");
        assert!(topic_matches("t.#.p.x", "t.a.s.b.p.x"));
        assert!(topic_matches("#", "anything.at.all"));
    }
}
