//! A WeCom AI-bot long-connection emulator on loopback: the bot subscribes with its id and
//! secret (a wrong one gets errcode 853000), pings are acknowledged (unless a test mutes them),
//! replies are checked and recorded: `aibot_respond_msg` only under the `req_id` of a message
//! not yet answered, content within 20,480 bytes. A newer connection displaces the older one
//! with a `disconnected_event`, as WeCom does. Media is served from `/media/{id}` as the test
//! gives it (encrypted by the test).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::emulated::Emulated;

/// A reply the bot sent (`aibot_respond_msg` or `aibot_send_msg`).
#[derive(Debug, Clone)]
pub struct BotReply {
    pub cmd: String,
    pub req_id: String,
    pub body: Value,
}

impl BotReply {
    /// The text the person sees.
    pub fn content(&self) -> String {
        let b = &self.body;
        b["stream"]["content"].as_str().or_else(|| b["markdown"]["content"].as_str()).unwrap_or_default().to_owned()
    }
}

#[derive(Default)]
struct Inner {
    bot_id: String,
    secret: String,
    /// The subscribed connection (one per bot), and how many subscribed so far.
    link: Option<(u64, mpsc::UnboundedSender<Message>)>,
    next_link: u64,
    subscriptions: u32,
    mute_pings: bool,
    pings: u32,
    /// Message req_ids not yet answered.
    open_requests: HashSet<String>,
    replies: Vec<BotReply>,
    next_msg: u64,
    media: HashMap<String, Vec<u8>>,
}

#[derive(Clone)]
pub struct WecomBotEmulator {
    state: Emulated<Inner>,
}

impl WecomBotEmulator {
    pub async fn start(bot_id: &str, secret: &str) -> std::io::Result<Self> {
        let inner = Inner { bot_id: bot_id.into(), secret: secret.into(), ..Default::default() };
        let routes = Router::new().route("/", get(connect)).route("/media/{id}", get(media));
        Ok(Self { state: Emulated::start(inner, routes).await? })
    }

    /// The socket address a channel's `api_base` is set to.
    pub fn url(&self) -> String {
        self.state.url("ws", "")
    }

    /// A person writes: a text message in a direct chat (`chat` none) or a group; its msgid.
    /// `None` if no bot is connected.
    pub fn user_says(&self, user: &str, chat: Option<&str>, text: &str) -> Option<String> {
        let mut body = json!({ "msgtype": "text", "text": { "content": text } });
        if let Some(c) = chat {
            body["chatid"] = json!(c);
        }
        self.deliver(user, chat.is_some(), body)
    }

    /// Delivers a message callback with `body` (its msgtype and content) from `user`.
    pub fn deliver(&self, user: &str, group: bool, mut body: Value) -> Option<String> {
        self.state.with(|i| {
            let (_, link) = i.link.clone()?;
            i.next_msg += 1;
            let msgid = format!("msg{}", i.next_msg);
            let req_id = format!("req{}", i.next_msg);
            body["msgid"] = json!(msgid);
            body["aibotid"] = json!(i.bot_id);
            body["chattype"] = json!(if group { "group" } else { "single" });
            body["from"] = json!({ "userid": user });
            let frame = json!({ "cmd": "aibot_msg_callback", "headers": { "req_id": req_id }, "body": body });
            i.open_requests.insert(req_id);
            link.send(Message::Text(frame.to_string().into())).ok()?;
            Some(msgid)
        })
    }

    /// Sends the same callback again (as a network retry would).
    pub fn redeliver(&self, frame: &Value) {
        self.state.with(|i| {
            if let Some((_, link)) = &i.link {
                let _ = link.send(Message::Text(frame.to_string().into()));
            }
        });
    }

    /// A file to download at the returned URL (the bytes as given, encrypted by the test).
    pub fn add_media(&self, id: &str, bytes: Vec<u8>) -> String {
        self.state.with(|i| i.media.insert(id.to_owned(), bytes));
        self.state.url("http", &format!("/media/{id}"))
    }

    pub fn replies(&self) -> Vec<BotReply> {
        self.state.with(|i| i.replies.clone())
    }

    /// Successful subscriptions so far, and whether a bot is connected now.
    pub fn subscriptions(&self) -> (u32, bool) {
        self.state.with(|i| (i.subscriptions, i.link.is_some()))
    }

    pub fn pings(&self) -> u32 {
        self.state.with(|i| i.pings)
    }

    /// Stops answering heartbeats (a connection that silently died).
    pub fn mute_pings(&self, mute: bool) {
        self.state.with(|i| i.mute_pings = mute);
    }

    /// Closes the bot's connection.
    pub fn kick(&self) {
        self.state.with(|i| {
            if let Some((_, link)) = i.link.take() {
                let _ = link.send(Message::Close(None));
            }
        });
    }
}

async fn media(State(inner): State<Arc<Mutex<Inner>>>, Path(id): Path<String>) -> Response {
    match inner.lock().unwrap_or_else(PoisonError::into_inner).media.get(&id) {
        Some(bytes) => bytes.clone().into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn connect(State(inner): State<Arc<Mutex<Inner>>>, upgrade: WebSocketUpgrade) -> Response {
    upgrade.on_upgrade(move |socket| serve(inner, socket))
}

fn ack(req_id: &Value, code: i64, msg: &str) -> Message {
    Message::Text(json!({ "headers": { "req_id": req_id }, "errcode": code, "errmsg": msg }).to_string().into())
}

async fn serve(inner: Arc<Mutex<Inner>>, socket: WebSocket) {
    let (mut sink, mut stream) = socket.split();
    let (tx, mut rx) = mpsc::unbounded_channel::<Message>();
    let with = |f: &mut dyn FnMut(&mut Inner)| f(&mut inner.lock().unwrap_or_else(PoisonError::into_inner));
    let mut id = 0;
    loop {
        tokio::select! {
            out = rx.recv() => match out {
                Some(Message::Close(_)) | None => break,
                Some(frame) => if sink.send(frame).await.is_err() { break },
            },
            got = stream.next() => {
                let text = match got {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                    Some(Ok(_)) => continue,
                };
                let Ok(frame) = serde_json::from_str::<Value>(&text) else { continue };
                let req = frame["headers"]["req_id"].clone();
                let cmd = frame["cmd"].as_str().unwrap_or_default().to_owned();
                let mut answer = None;
                with(&mut |i| {
                    answer = match cmd.as_str() {
                        "aibot_subscribe" => {
                            if frame["body"]["bot_id"] != i.bot_id.as_str() || frame["body"]["secret"] != i.secret.as_str() {
                                Some(ack(&req, 853_000, "invalid bot_id or secret"))
                            } else {
                                i.next_link += 1;
                                id = i.next_link;
                                i.subscriptions += 1;
                                // The newer connection wins; the older one is told and closed.
                                if let Some((_, old)) = i.link.replace((id, tx.clone())) {
                                    let event = json!({ "cmd": "aibot_event_callback", "headers": { "req_id": "evt" },
                                        "body": { "msgtype": "event", "event": { "eventtype": "disconnected_event" } } });
                                    let _ = old.send(Message::Text(event.to_string().into()));
                                    let _ = old.send(Message::Close(None));
                                }
                                Some(ack(&req, 0, "ok"))
                            }
                        }
                        _ if id == 0 => Some(ack(&req, 40_001, "not subscribed")),
                        "ping" => {
                            i.pings += 1;
                            (!i.mute_pings).then(|| ack(&req, 0, "ok"))
                        }
                        "aibot_respond_msg" | "aibot_send_msg" => Some(reply(i, &cmd, &req, &frame["body"])),
                        _ => Some(ack(&req, 40_008, "unknown cmd")),
                    };
                });
                if let Some(answer) = answer && sink.send(answer).await.is_err() {
                    break;
                }
            }
        }
    }
    with(&mut |i| {
        if i.link.as_ref().is_some_and(|(l, _)| *l == id) {
            i.link = None;
        }
    });
}

/// Checks and records a reply; the acknowledgement.
fn reply(i: &mut Inner, cmd: &str, req: &Value, body: &Value) -> Message {
    let req_id = req.as_str().unwrap_or_default().to_owned();
    let content = body["stream"]["content"].as_str().or_else(|| body["markdown"]["content"].as_str());
    let Some(content) = content else { return ack(req, 40_008, "no content") };
    if content.len() > 20_480 {
        return ack(req, 40_058, "content too long");
    }
    // Images ride on a finished stream, each with the MD5 of its bytes.
    for item in body["stream"]["msg_item"].as_array().into_iter().flatten() {
        use base64::Engine;
        use md5::Digest;
        if body["stream"]["finish"] != true {
            return ack(req, 40_058, "msg_item only with finish");
        }
        let data =
            base64::engine::general_purpose::STANDARD.decode(item["image"]["base64"].as_str().unwrap_or_default());
        let md5: Option<String> = data.ok().map(|d| md5::Md5::digest(d).iter().map(|b| format!("{b:02x}")).collect());
        if md5.as_deref() != item["image"]["md5"].as_str() {
            return ack(req, 40_058, "image md5 mismatch");
        }
    }
    if cmd == "aibot_respond_msg" {
        if !i.open_requests.contains(&req_id) {
            return ack(req, 846_608, "req_id expired or already answered");
        }
        if body["stream"]["finish"] == true {
            i.open_requests.remove(&req_id);
        }
    } else if body["chatid"].as_str().is_none_or(str::is_empty) {
        return ack(req, 40_003, "chatid missing");
    }
    i.replies.push(BotReply { cmd: cmd.to_owned(), req_id, body: body.clone() });
    ack(req, 0, "ok")
}
