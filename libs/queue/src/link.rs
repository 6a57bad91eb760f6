//! The connection to RabbitMQ, and keeping one. A [`Link`] is one AMQP connection with the
//! installation's topology declared and the two publishing channels open. A supervisor task
//! watches it; when it drops (a broker restart, a network cut) the supervisor opens a new one,
//! backing off from 250 ms to 5 s for as long as it takes, and hands it to everyone holding a
//! [`Links`] receiver: consumers and event hubs re-subscribe on it, publishers use it next.
//!
//! lapin's own recovery is not used: across repeated broker restarts it was seen to stay in
//! `Reconnecting` for good (the chaos test restarts RabbitMQ several times).

use std::sync::Arc;
use std::time::Duration;

use lapin::options::{ConfirmSelectOptions, ExchangeDeclareOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{Channel, Connection, ConnectionProperties, ExchangeKind};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use hermes_config::RabbitMqConfig;

use crate::{Broker, Names, QueueError, Result};

/// How often the supervisor looks at the connection.
const CHECK_EVERY: Duration = Duration::from_millis(250);
/// How long one node may take to accept a connection, and then to finish the handshake.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// One live connection with the topology declared.
pub(crate) struct Link {
    pub conn: Connection,
    /// Confirmed channel for work messages (they must not be lost silently); replaced when
    /// the broker keeps refusing them on it (see [`Link::renew_work_channel`]).
    work_channel: std::sync::Mutex<Channel>,
    /// Unconfirmed channel for events (a lost event is recovered by polling Postgres).
    pub event_channel: Channel,
    /// Counts connections: a consumer on an older one must subscribe again.
    pub generation: u64,
}

impl Link {
    pub fn is_connected(&self) -> bool {
        self.conn.status().connected()
    }

    /// The channel work messages are published on now.
    pub fn work_channel(&self) -> Channel {
        self.work_channel.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Replaces the work channel `refused` with a new confirmed one (unless another publisher
    /// already did). After a quorum queue's leader died, RabbitMQ 3.10 was seen to refuse
    /// every later publish on a channel that had published to it, for minutes, while a new
    /// channel's were taken (`tests/e2e/rabbit_cluster.rs`).
    pub async fn renew_work_channel(&self, refused: &Channel) -> Result<()> {
        let fresh = self.conn.create_channel().await?;
        fresh.confirm_select(ConfirmSelectOptions::default()).await?;
        let old = {
            let mut current = self.work_channel.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if current.id() != refused.id() {
                return Ok(());
            }
            std::mem::replace(&mut *current, fresh)
        };
        let _ = old.close(200, "replaced after refused publishes".into()).await;
        Ok(())
    }
}

/// The current link, and every later one as it comes.
pub(crate) type Links = watch::Receiver<Arc<Link>>;

/// The current link.
pub(crate) fn current(links: &Links) -> Arc<Link> {
    links.borrow().clone()
}

/// Opens a link to the first node of `cfg.url` (one address, or a cluster's nodes separated
/// by commas) that answers, trying them in turn from `start`: connect, declare the work and
/// review queues (quorum, durable) and the events exchange, open the publishing channels.
/// Returns the link and the index of the node it reached.
pub(crate) async fn open(
    cfg: &RabbitMqConfig,
    names: &Names,
    name: &str,
    generation: u64,
    start: usize,
) -> Result<(Link, usize)> {
    let nodes = cfg.urls();
    let mut failures = Vec::with_capacity(nodes.len());
    for i in (0..nodes.len()).map(|k| (start + k) % nodes.len()) {
        match open_node(cfg, nodes[i], names, name, generation).await {
            Ok(link) => return Ok((link, i)),
            Err(e @ QueueError::BadUrl(_)) => return Err(e),
            Err(e) => failures.push(format!("{}: {e}", without_userinfo(nodes[i]))),
        }
    }
    Err(QueueError::Unreachable(failures.join("; ")))
}

/// An AMQP address without its user and password, for messages.
fn without_userinfo(url: &str) -> &str {
    url.rsplit_once('@').map_or(url, |(_, host)| host)
}

async fn open_node(cfg: &RabbitMqConfig, url: &str, names: &Names, name: &str, generation: u64) -> Result<Link> {
    let uri: lapin::uri::AMQPUri = url.parse().map_err(QueueError::BadUrl)?;
    // Fail at once when nothing listens, rather than in lapin's connect timeout.
    let address = (uri.authority.host.as_str(), uri.authority.port);
    tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(address))
        .await
        .map_err(|_| QueueError::Unreachable(format!("no answer within {} s", CONNECT_TIMEOUT.as_secs())))?
        .map_err(|e| QueueError::Unreachable(e.to_string()))?;
    let props = ConnectionProperties::default().with_connection_name(name.into());
    let conn = tokio::time::timeout(CONNECT_TIMEOUT, Connection::connect(url, props))
        .await
        .map_err(|_| QueueError::Unreachable(format!("the handshake took over {} s", CONNECT_TIMEOUT.as_secs())))??;
    let setup = conn.create_channel().await?;
    let mut args = FieldTable::default();
    args.insert("x-queue-type".into(), AMQPValue::LongString("quorum".into()));
    if cfg.queue_expires_seconds > 0 {
        let ms = i64::try_from(cfg.queue_expires_seconds.saturating_mul(1000)).unwrap_or(i64::MAX);
        args.insert("x-expires".into(), AMQPValue::LongLongInt(ms));
    }
    for queue in [&names.work_queue, &names.review_queue] {
        setup
            .queue_declare(
                queue.as_str().into(),
                QueueDeclareOptions { durable: true, ..Default::default() },
                args.clone(),
            )
            .await?;
    }
    setup
        .exchange_declare(
            names.events_exchange.as_str().into(),
            ExchangeKind::Topic,
            ExchangeDeclareOptions { durable: true, ..Default::default() },
            FieldTable::default(),
        )
        .await?;
    let _ = setup.close(200, "topology declared".into()).await;
    let work_channel = conn.create_channel().await?;
    work_channel.confirm_select(ConfirmSelectOptions::default()).await?;
    let event_channel = conn.create_channel().await?;
    Ok(Link { conn, work_channel: std::sync::Mutex::new(work_channel), event_channel, generation })
}

/// Keeps a link open until `closed`: replaces a dropped one and publishes the new one.
pub(crate) async fn supervise(
    cfg: RabbitMqConfig,
    names: Names,
    name: String,
    links: watch::Sender<Arc<Link>>,
    closed: CancellationToken,
    mut node: usize,
) {
    loop {
        tokio::select! {
            () = closed.cancelled() => return,
            () = tokio::time::sleep(CHECK_EVERY) => {}
        }
        let current = links.borrow().clone();
        if current.is_connected() {
            continue;
        }
        tracing::warn!(generation = current.generation, "the RabbitMQ connection dropped; reconnecting");
        metrics::counter!("hermes_broker_reconnects_total").increment(1);
        let mut delay = Duration::from_millis(250);
        let link = loop {
            // The node this link was on is likely the one that went: start with the next.
            match open(&cfg, &names, &name, current.generation + 1, node + 1).await {
                Ok((link, reached)) => {
                    node = reached;
                    break link;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "RabbitMQ not back yet");
                    tokio::select! {
                        () = closed.cancelled() => return,
                        () = tokio::time::sleep(delay) => {}
                    }
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
            }
        };
        tracing::info!(generation = link.generation, node, "reconnected to RabbitMQ");
        links.send_replace(Arc::new(link));
    }
}

/// Waits for a link newer than `generation` (or the current one, when it is newer and up);
/// `None` once the broker is closed.
pub(crate) async fn next_link(links: &mut Links, generation: u64, closed: &CancellationToken) -> Option<Arc<Link>> {
    tokio::select! {
        () = closed.cancelled() => None,
        link = links.wait_for(|l| l.generation > generation && l.is_connected()) => link.ok().map(|l| l.clone()),
    }
}

/// Where to subscribe again after a subscription on link `generation` failed: the current link
/// when it is up (after a pause when it is that same link: only a channel failed), else the
/// next one; `None` once the broker is closed.
pub(crate) async fn after_failure(broker: &Broker, links: &mut Links, generation: u64) -> Option<Arc<Link>> {
    let current = current(links);
    if current.is_connected() && current.generation >= generation {
        if current.generation == generation {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        return Some(current);
    }
    next_link(links, generation, broker.closed()).await
}
