//! The in-memory broker (feature `test-support`): RabbitMQ's behaviour that the roles rely on,
//! held in this process. Durable job queues hand each message to one consumer at a time, at
//! most `prefetch` unacknowledged per consumer, and take back what was requeued, or left
//! unacknowledged when its consumer was dropped or its connection closed (marked
//! redelivered): at-least-once, as on RabbitMQ. The events exchange routes by topic pattern
//! (`*` one word, `#` any) to each hub's queue once, however many of its bindings match, and a
//! hub's queue goes with its connection (exclusive).
//!
//! Unlike RabbitMQ, consumers pull: a message waits in the queue until a consumer with room
//! asks, rather than being pushed into a consumer's prefetch buffer ahead of time.

mod hubs;
mod jobs;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

use crate::{Broker, Names, QueueError, Result};

pub(crate) use hubs::HubQueue;
pub(crate) use jobs::{Acker, Delivered, Jobs};

/// A RabbitMQ held in this process, for tests: every [`Broker`] connected to it (one per
/// simulated pod) shares its queues and exchange. Clones are the same broker.
#[derive(Clone, Default)]
pub struct InMemoryBroker {
    server: Arc<Server>,
}

impl InMemoryBroker {
    /// Opens a connection, as [`Broker::connect`] does with `rabbitmq.prefix = prefix`: the
    /// installation's work and review queues and events exchange are declared if absent.
    pub fn connect(&self, prefix: &str) -> Broker {
        let names = Names::new(prefix);
        let id = {
            let mut state = self.server.lock();
            state.next_id += 1;
            let id = state.next_id;
            state.open.insert(id);
            state.queues.entry(names.work_queue.clone()).or_default();
            state.queues.entry(names.review_queue.clone()).or_default();
            state.exchanges.insert(names.events_exchange.clone());
            id
        };
        Broker::on_memory(names, Connection { server: self.server.clone(), id })
    }
}

/// The broker's state, and the signal its waiting consumers wake on.
#[derive(Default)]
pub(crate) struct Server {
    state: Mutex<State>,
    /// Told of every change a waiting consumer may care about.
    changed: Notify,
}

#[derive(Default)]
struct State {
    /// Ids of connections, consumers and delivery tags.
    next_id: u64,
    /// Connections not closed.
    open: HashSet<u64>,
    queues: HashMap<String, jobs::JobQueue>,
    consumers: HashMap<u64, jobs::ConsumerState>,
    exchanges: HashSet<String>,
    /// Event hubs' queues, by name.
    hubs: HashMap<String, hubs::Hub>,
}

impl State {
    fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }
}

impl Server {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn changed(&self) {
        self.changed.notify_waiters();
    }
}

/// One connection to the in-memory broker (one [`Broker`]).
pub(crate) struct Connection {
    server: Arc<Server>,
    id: u64,
}

impl Connection {
    pub fn is_open(&self) -> bool {
        self.server.lock().open.contains(&self.id)
    }

    /// What a closed connection answers, as RabbitMQ's does: an error.
    fn check_open(&self, state: &State) -> Result<()> {
        if state.open.contains(&self.id) {
            return Ok(());
        }
        Err(QueueError::Unreachable("the in-memory connection is closed".into()))
    }

    /// Closes the connection: its consumers end and what they left unacknowledged goes back to
    /// its queue, marked redelivered; its hubs' queues are deleted.
    pub fn close(&self) {
        let mut state = self.server.lock();
        state.open.remove(&self.id);
        let mine: Vec<u64> =
            state.consumers.iter().filter(|(_, c)| c.connection == self.id).map(|(id, _)| *id).collect();
        for consumer in mine {
            jobs::drop_consumer(&mut state, consumer);
        }
        state.hubs.retain(|_, hub| hub.connection != self.id);
        drop(state);
        self.server.changed();
    }

    /// Deletes the installation's queues (their consumers end) and exchange (its bindings go).
    pub fn delete_topology(&self, names: &Names) {
        let mut state = self.server.lock();
        state.queues.remove(&names.work_queue);
        state.queues.remove(&names.review_queue);
        state.exchanges.remove(&names.events_exchange);
        for hub in state.hubs.values_mut().filter(|h| h.exchange == names.events_exchange) {
            hub.patterns.clear();
        }
        drop(state);
        self.server.changed();
    }
}
