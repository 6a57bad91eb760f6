//! Slack's Socket Mode side for [`crate::slack::SlackEmulator`]: `apps.connections.open` (with
//! the app-level token) hands out a `ws://` link; each connection gets `hello`, then the
//! envelopes a test pushes. Like Slack, an envelope that is not acknowledged before its
//! connection closes is delivered again (with `retry_attempt`) on the next connection.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::ws::{Message, WebSocket};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

#[derive(Default)]
struct HubState {
    /// Open connections by id, newest last.
    links: Vec<(u64, mpsc::UnboundedSender<Message>)>,
    next_link: u64,
    opened: u32,
    /// Envelopes waiting for a connection.
    queued: VecDeque<Value>,
    /// Envelopes sent on a connection and not yet acknowledged.
    inflight: HashMap<u64, Vec<Value>>,
    acks: Vec<Value>,
    next_envelope: u64,
    /// When each envelope not yet acknowledged was pushed, by id (for [`SocketHub::take_pickups`]).
    pushed_at: HashMap<String, std::time::Instant>,
    /// How long each acknowledged envelope waited from its push.
    pickups: Vec<std::time::Duration>,
    /// Acknowledgements are counted, not kept (a benchmark's hubs run for long).
    quiet: bool,
}

/// The Socket Mode hub of one emulated app.
#[derive(Default)]
pub struct SocketHub {
    state: Mutex<HubState>,
}

impl SocketHub {
    fn with<T>(&self, f: impl FnOnce(&mut HubState) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Sends an envelope of `kind` (`events_api`, `interactive`, `slash_commands`) on the newest
    /// connection, or when one opens; its `envelope_id`.
    pub fn push(&self, kind: &str, payload: Value) -> String {
        self.with(|s| {
            s.next_envelope += 1;
            let id = format!("env-{}", s.next_envelope);
            let envelope = json!({ "envelope_id": id, "type": kind, "payload": payload,
                                   "accepts_response_payload": kind == "slash_commands", "retry_attempt": 0 });
            s.queued.push_back(envelope);
            s.pushed_at.insert(id.clone(), std::time::Instant::now());
            flush(s);
            id
        })
    }

    /// Keeps no acknowledgements ([`Self::ack`] then finds none), only their pickup times.
    pub fn quiet(&self) {
        self.with(|s| s.quiet = true);
    }

    /// Takes the pickup times recorded since the last call: for each envelope acknowledged,
    /// how long from its push until the app acknowledged it (so it was stored).
    pub fn take_pickups(&self) -> Vec<std::time::Duration> {
        self.with(|s| std::mem::take(&mut s.pickups))
    }

    /// The acknowledgement of an envelope, once the app sent it.
    pub fn ack(&self, envelope_id: &str) -> Option<Value> {
        self.with(|s| s.acks.iter().find(|a| a["envelope_id"] == envelope_id).cloned())
    }

    /// Connections opened so far, and open now.
    pub fn connections(&self) -> (u32, usize) {
        self.with(|s| (s.opened, s.links.len()))
    }

    /// Tells every connection to go away (`warning`, `refresh_requested`, `link_disabled`).
    pub fn disconnect(&self, reason: &str) {
        let frame = json!({ "type": "disconnect", "reason": reason, "debug_info": { "host": "emulator" } });
        self.with(|s| {
            for (_, link) in &s.links {
                let _ = link.send(Message::Text(frame.to_string().into()));
            }
        });
    }

    /// Drops every connection without a word (a network failure).
    pub fn drop_connections(&self) {
        self.with(|s| {
            for (_, link) in &s.links {
                let _ = link.send(Message::Close(None));
            }
        });
    }

    /// Serves one connection until it closes.
    pub(crate) async fn serve(self: Arc<Self>, socket: WebSocket) {
        let (mut sink, mut stream) = socket.split();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let hello = json!({ "type": "hello", "num_connections": 1, "connection_info": { "app_id": "A0TEST" },
                            "debug_info": { "host": "emulator", "approximate_connection_time": 3600 } });
        let _ = tx.send(Message::Text(hello.to_string().into()));
        let id = self.with(|s| {
            s.next_link += 1;
            s.opened += 1;
            s.links.push((s.next_link, tx));
            flush(s);
            s.next_link
        });
        loop {
            tokio::select! {
                out = rx.recv() => match out {
                    Some(Message::Close(_)) | None => break,
                    Some(frame) => if sink.send(frame).await.is_err() { break },
                },
                got = stream.next() => match got {
                    Some(Ok(Message::Text(text))) => {
                        let Ok(ack) = serde_json::from_str::<Value>(&text) else { continue };
                        self.with(|s| {
                            if let Some(sent) = s.inflight.get_mut(&id) {
                                sent.retain(|e| e["envelope_id"] != ack["envelope_id"]);
                            }
                            if let Some(at) = ack["envelope_id"].as_str().and_then(|e| s.pushed_at.remove(e)) {
                                s.pickups.push(at.elapsed());
                            }
                            if !s.quiet {
                                s.acks.push(ack);
                            }
                        });
                    }
                    Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                    Some(Ok(_)) => {}
                },
            }
        }
        self.with(|s| {
            s.links.retain(|(l, _)| *l != id);
            // Unacknowledged envelopes come again, as Slack retries them.
            for mut envelope in s.inflight.remove(&id).unwrap_or_default() {
                envelope["retry_attempt"] = json!(envelope["retry_attempt"].as_u64().unwrap_or(0) + 1);
                envelope["retry_reason"] = json!("timeout");
                s.queued.push_back(envelope);
            }
            flush(s);
        });
    }
}

/// Sends queued envelopes on the newest open connection.
fn flush(s: &mut HubState) {
    let Some((id, link)) = s.links.last().cloned() else { return };
    while let Some(envelope) = s.queued.pop_front() {
        if link.send(Message::Text(envelope.to_string().into())).is_err() {
            s.queued.push_front(envelope);
            return;
        }
        s.inflight.entry(id).or_default().push(envelope);
    }
}
