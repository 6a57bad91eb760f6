//! The in-memory job queues (`work`, `review`): publish, consume with a prefetch bound,
//! acknowledge, requeue, and take back what a vanished consumer left unacknowledged.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use lapin::BasicProperties;

use super::{Connection, Server, State};
use crate::{QueueError, Result};

/// One durable queue.
#[derive(Default)]
pub(super) struct JobQueue {
    ready: VecDeque<Message>,
    /// Delivered and not settled, by delivery tag (so in delivery order): consumer, message.
    unacked: BTreeMap<u64, (u64, Message)>,
}

struct Message {
    body: Vec<u8>,
    properties: BasicProperties,
    redelivered: bool,
}

/// One consumer of a queue.
pub(super) struct ConsumerState {
    pub connection: u64,
    queue: String,
    /// Unacknowledged deliveries it may hold at once (0: no bound, as in AMQP).
    prefetch: u16,
    cancelled: bool,
}

impl Connection {
    /// Appends a message to `queue`. A queue that does not exist drops it, as RabbitMQ's
    /// default exchange does with an unroutable message.
    pub fn publish_job(&self, queue: &str, body: &[u8], properties: BasicProperties) -> Result<()> {
        let mut state = self.server.lock();
        self.check_open(&state)?;
        if let Some(q) = state.queues.get_mut(queue) {
            q.ready.push_back(Message { body: body.to_vec(), properties, redelivered: false });
        }
        drop(state);
        self.server.changed();
        Ok(())
    }

    /// Starts consuming `queue`; an error when it does not exist (RabbitMQ's NOT_FOUND).
    pub fn consume(&self, queue: &str, prefetch: u16) -> Result<Jobs> {
        let mut state = self.server.lock();
        self.check_open(&state)?;
        if !state.queues.contains_key(queue) {
            return Err(QueueError::Unreachable(format!("no queue {queue} on the in-memory broker")));
        }
        let id = state.next_id();
        let consumer = ConsumerState { connection: self.id, queue: queue.to_owned(), prefetch, cancelled: false };
        state.consumers.insert(id, consumer);
        Ok(Jobs { server: self.server.clone(), id })
    }
}

/// Ends consumer `id`: what it left unacknowledged goes back to the front of its queue, in
/// delivery order, marked redelivered (RabbitMQ does this when the consumer's channel closes).
pub(super) fn drop_consumer(state: &mut State, id: u64) {
    let Some(consumer) = state.consumers.remove(&id) else { return };
    let Some(q) = state.queues.get_mut(&consumer.queue) else { return };
    let tags: Vec<u64> = q.unacked.iter().filter(|(_, (owner, _))| *owner == id).map(|(tag, _)| *tag).collect();
    for tag in tags.into_iter().rev() {
        if let Some((_, mut message)) = q.unacked.remove(&tag) {
            message.redelivered = true;
            q.ready.push_front(message);
        }
    }
}

/// One delivery: the message as published, whether it came before, and how to settle it.
pub(crate) struct Delivered {
    pub data: Vec<u8>,
    pub properties: BasicProperties,
    pub redelivered: bool,
    pub acker: Acker,
}

/// A consumer's end of a queue.
pub(crate) struct Jobs {
    server: Arc<Server>,
    id: u64,
}

/// What a consumer gets when it asks.
enum Take {
    Got(Box<Delivered>),
    /// Nothing ready, or its prefetch is full.
    Wait,
    /// Cancelled, its connection closed or its queue deleted.
    Ended,
}

impl Jobs {
    /// The next delivery, waiting for one; `None` once the consumer ended.
    pub async fn next(&mut self) -> Option<Delivered> {
        loop {
            // Registered before looking, so a change between the look and the wait is not missed.
            let changed = self.server.changed.notified();
            let mut changed = std::pin::pin!(changed);
            changed.as_mut().enable();
            match self.take() {
                Take::Got(raw) => return Some(*raw),
                Take::Ended => return None,
                Take::Wait => changed.await,
            }
        }
    }

    fn take(&self) -> Take {
        let mut guard = self.server.lock();
        let state = &mut *guard;
        let Some(consumer) = state.consumers.get(&self.id).filter(|c| !c.cancelled) else { return Take::Ended };
        let Some(q) = state.queues.get_mut(&consumer.queue) else { return Take::Ended };
        let held = q.unacked.values().filter(|(owner, _)| *owner == self.id).count();
        if consumer.prefetch > 0 && held >= usize::from(consumer.prefetch) {
            return Take::Wait;
        }
        let Some(message) = q.ready.pop_front() else { return Take::Wait };
        state.next_id += 1;
        let tag = state.next_id;
        let acker =
            Acker { server: self.server.clone(), queue: consumer.queue.clone(), tag, used: AtomicBool::new(false) };
        let raw = Delivered {
            data: message.body.clone(),
            properties: message.properties.clone(),
            redelivered: message.redelivered,
            acker,
        };
        q.unacked.insert(tag, (self.id, message));
        Take::Got(Box::new(raw))
    }

    /// Stops deliveries; what is unacknowledged stays so until settled or the consumer drops.
    pub fn cancel(&self) {
        if let Some(consumer) = self.server.lock().consumers.get_mut(&self.id) {
            consumer.cancelled = true;
        }
        self.server.changed();
    }
}

impl Drop for Jobs {
    fn drop(&mut self) {
        drop_consumer(&mut self.server.lock(), self.id);
        self.server.changed();
    }
}

/// Settles one delivery. Single use, like lapin's: a second call, or one after the delivery
/// went back to its queue with its consumer, does nothing.
pub(crate) struct Acker {
    server: Arc<Server>,
    queue: String,
    tag: u64,
    used: AtomicBool,
}

impl Acker {
    /// Removes the message for good.
    pub fn ack(&self) {
        if self.used.swap(true, Ordering::Relaxed) {
            return;
        }
        if let Some(q) = self.server.lock().queues.get_mut(&self.queue) {
            q.unacked.remove(&self.tag);
        }
        self.server.changed();
    }

    /// Puts the message back at the front of its queue, marked redelivered.
    pub fn requeue(&self) {
        if self.used.swap(true, Ordering::Relaxed) {
            return;
        }
        if let Some(q) = self.server.lock().queues.get_mut(&self.queue)
            && let Some((_, mut message)) = q.unacked.remove(&self.tag)
        {
            message.redelivered = true;
            q.ready.push_front(message);
        }
        self.server.changed();
    }
}
