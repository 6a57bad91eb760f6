//! WeCom AI bots over their long connection ([`hermes_chat::wecom_bot`]): one pod per bot
//! holds the socket ([`crate::leased`]), subscribes, pings every 30 s
//! (`gateway.socket_heartbeat_seconds`; two pings unanswered mean the socket is dead) and reconnects after 2, 5, 10, 30, then 60 s. Messages are taken in
//! as on any platform. Replies can only go out on the socket, so the pod holding it also
//! delivers the bot's outbox ([`crate::outbox::deliver_claimed`] for this channel alone),
//! handing each request to the socket and waiting for WeCom's acknowledgement under the
//! request's `req_id`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

use hermes_chat::wecom_bot::{ACK_TIMEOUT, BotError, BotSocket, Ws, ack_result, frame, req_id};
use hermes_core::{ChannelMode, ChannelStatus, Platform};
use hermes_store::Channel;

use crate::Gateway;
use crate::leased::{End, keep_connected};

/// Two heartbeats without an answer: the socket is dead.
const MAX_UNANSWERED_PINGS: u32 = 2;

/// A request for the socket, answered when WeCom acknowledges it.
struct Request {
    frame: Value,
    req_id: String,
    done: oneshot::Sender<Result<(), BotError>>,
}

/// The way to a bot's open socket.
#[derive(Clone)]
pub struct BotLink(mpsc::Sender<Request>);

impl BotLink {
    /// Sends `cmd` under `req_id` and waits for WeCom's acknowledgement.
    pub async fn request(&self, cmd: &str, req_id: &str, body: Value) -> Result<(), BotError> {
        let (done, answer) = oneshot::channel();
        let request = Request { frame: frame(cmd, req_id, Some(body)), req_id: req_id.to_owned(), done };
        let closed = || BotError::Transport("the socket closed".into());
        self.0.send(request).await.map_err(|_| closed())?;
        match tokio::time::timeout(ACK_TIMEOUT, answer).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => Err(closed()),
            Err(_) => Err(BotError::Transport("WeCom did not acknowledge the request".into())),
        }
    }
}

/// Keeps the sockets of the AI bots this pod holds the lease of, until `shutdown`.
pub async fn run(gw: Arc<Gateway>, shutdown: CancellationToken) {
    crate::leased::run(gw, shutdown, Platform::Wecom, ChannelMode::Websocket, |gw, channel, stop| async move {
        let outbox = {
            let (gw, stop) = (gw.clone(), stop.clone());
            hermes_telemetry::tasks::spawn("gateway_wecom_delivery", async move {
                crate::outbox::deliver_claimed(&gw, &stop, Some(channel.id)).await
            })
        };
        keep_connected(&gw, &channel, &stop, || connection(&gw, &channel, &stop)).await;
        stop.cancel();
        let _ = outbox.await;
    })
    .await;
}

async fn connection(gw: &Gateway, channel: &Channel, stop: &CancellationToken) -> (End, bool) {
    let creds = match channel.credentials(gw.secrets.as_ref()) {
        Ok(c) => c,
        Err(e) => return (End::Refused(e.to_string()), false),
    };
    let text = |k: &str| creds[k].as_str().unwrap_or_default().to_owned();
    let socket = match BotSocket::subscribe(&channel.api_base, &text("bot_id"), &text("secret")).await {
        Ok(s) => s,
        Err(e @ BotError::Refused { .. }) => return (End::Refused(e.to_string()), false),
        Err(e) => return (End::Failed(e.to_string()), false),
    };
    tracing::info!(channel.id = %channel.id, "WeCom AI bot subscribed");
    let (tx, rx) = mpsc::channel(64);
    gw.bot_links.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(channel.id, BotLink(tx));
    let end = pump(gw, channel, stop, socket.ws, rx).await;
    gw.bot_links.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&channel.id);
    (end, true)
}

/// Moves frames both ways until the socket ends.
async fn pump(
    gw: &Gateway,
    channel: &Channel,
    stop: &CancellationToken,
    mut ws: Ws,
    mut rx: mpsc::Receiver<Request>,
) -> End {
    let mut waiting: HashMap<String, oneshot::Sender<Result<(), BotError>>> = HashMap::new();
    let mut pings: HashSet<String> = HashSet::new();
    let every = Duration::from_secs(gw.config.gateway.socket_heartbeat_seconds.max(1));
    let mut heartbeat = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    loop {
        tokio::select! {
            () = stop.cancelled() => {
                let _ = ws.close(None).await;
                return End::Again;
            }
            _ = heartbeat.tick() => {
                if pings.len() >= usize::try_from(MAX_UNANSWERED_PINGS).unwrap_or(2) {
                    return End::Failed("WeCom did not answer two heartbeats".into());
                }
                let id = req_id("ping");
                if let Err(e) = ws.send(Message::Text(frame("ping", &id, None).to_string().into())).await {
                    return End::Failed(e.to_string());
                }
                pings.insert(id);
            }
            request = rx.recv() => {
                let Some(request) = request else { continue };
                if let Err(e) = ws.send(Message::Text(request.frame.to_string().into())).await {
                    let _ = request.done.send(Err(BotError::Transport(e.to_string())));
                    return End::Failed(e.to_string());
                }
                waiting.insert(request.req_id, request.done);
            }
            incoming = ws.next() => {
                let text = match incoming {
                    None | Some(Ok(Message::Close(_))) => return End::Failed("WeCom closed the socket".into()),
                    Some(Err(e)) => return End::Failed(e.to_string()),
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(_)) => continue,
                };
                let Ok(got) = serde_json::from_str::<Value>(&text) else { continue };
                let id = got["headers"]["req_id"].as_str().unwrap_or_default().to_owned();
                match got["cmd"].as_str() {
                    None | Some("") => {
                        // An acknowledgement: of a heartbeat, or of a request someone waits for.
                        if !pings.remove(&id) && let Some(done) = waiting.remove(&id) {
                            let _ = done.send(ack_result(&got));
                        }
                        // Any answer shows the socket is alive.
                        pings.clear();
                    }
                    Some("aibot_msg_callback") => {
                        // Boxed: a waiting socket's task holds no message's state.
                        if let Some(end) = Box::pin(take(gw, channel, &got["body"], &id)).await {
                            return end;
                        }
                    }
                    Some("aibot_event_callback")
                        if got["body"]["event"]["eventtype"] == "disconnected_event" => {
                        // A newer connection for this bot replaced ours (another installation
                        // with the same bot, most likely); back off rather than fight it.
                        return End::Failed("WeCom moved the bot to a newer connection".into());
                    }
                    Some(_) => {}
                }
            }
        }
    }
}

/// Takes a message in (WeCom does not deliver it again, so a passing failure is retried here);
/// `Some` ends the connection.
async fn take(gw: &Gateway, channel: &Channel, body: &Value, req_id: &str) -> Option<End> {
    let msg = super::bot_event::parse(body, req_id)?;
    for attempt in 1..=3u64 {
        let current = match gw.store.system().gateway_channel(channel.id).await {
            Ok(c) if c.status == ChannelStatus::Active && c.mode == ChannelMode::Websocket => c,
            Ok(_) | Err(hermes_store::StoreError::NotFound) => return Some(End::Gone),
            Err(e) => {
                tracing::warn!(error = %e, attempt, "cannot read the channel");
                tokio::time::sleep(Duration::from_millis(500 * attempt)).await;
                continue;
            }
        };
        match gw.take_in(&current, msg.clone(), body).await {
            Ok(()) => return None,
            Err(e) => {
                tracing::warn!(error = %e, attempt, "cannot take a WeCom message in");
                tokio::time::sleep(Duration::from_millis(500 * attempt)).await;
            }
        }
    }
    tracing::error!(channel.id = %channel.id, "a WeCom message could not be stored and is lost");
    None
}
