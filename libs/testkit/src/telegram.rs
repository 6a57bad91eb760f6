//! A Telegram Bot API emulator on loopback: the methods Hermes uses, with Telegram's envelope
//! (`{ok, result}` / `{ok: false, error_code, description, parameters}`), long-polled
//! `getUpdates` with offset confirmation, per-chat message ids, edits, and failures a test
//! can inject (429 with `retry_after`, 5xx, "bot was blocked"). Tests play users by
//! queueing updates and read what the bot sent.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use serde_json::{Value, json};
use tokio::sync::Notify;

pub use crate::telegram_html::visible_html;

/// A message the bot sent (or edited).
#[derive(Debug, Clone)]
pub struct SentMessage {
    pub chat_id: String,
    pub message_id: i64,
    pub text: String,
    pub parse_mode: Option<String>,
    pub reply_to: Option<i64>,
    pub reply_markup: Option<Value>,
    /// How many times it was edited.
    pub edits: u32,
    /// The bot deleted it.
    pub deleted: bool,
}

/// A file the bot sent (`sendPhoto`, `sendDocument`, `sendVoice`, `sendAudio`).
#[derive(Debug, Clone)]
pub struct Upload {
    pub chat_id: String,
    pub method: String,
    pub name: String,
    pub mime: String,
    pub data: Vec<u8>,
}

#[derive(Default)]
struct Bot {
    username: String,
    next_update: i64,
    /// Updates not yet confirmed by an offset past them.
    updates: VecDeque<Value>,
    sent: Vec<SentMessage>,
    next_message: HashMap<String, i64>,
    /// Injected failures, by method: (HTTP status, description, retry_after).
    failures: HashMap<String, VecDeque<(u16, String, Option<u64>)>>,
    calls: Vec<(String, Value)>,
    webhook: Option<(String, String)>,
    /// Files users sent: id -> bytes.
    files: HashMap<String, Vec<u8>>,
    uploads: Vec<Upload>,
    /// Methods whose next call is carried out but never answered (the caller dies waiting).
    holds: std::collections::HashSet<String>,
    /// Wakes this bot's waiting `getUpdates` when an update arrives.
    arrived: Arc<Notify>,
    /// When each unconfirmed update was queued, by id (for [`TelegramEmulator::pickups`]).
    queued_at: HashMap<i64, Instant>,
    /// When the bot last called `getUpdates`.
    last_poll: Option<Instant>,
}

#[derive(Default)]
struct Inner {
    bots: Mutex<HashMap<String, Bot>>,
    /// Every call is logged, unless a benchmark turned it off.
    quiet: std::sync::atomic::AtomicBool,
    /// How long each update waited from being queued to being confirmed by an offset past it.
    pickups: Mutex<Vec<Duration>>,
}

/// The emulator; it serves until dropped.
#[derive(Clone)]
pub struct TelegramEmulator {
    inner: Arc<Inner>,
    addr: SocketAddr,
}

fn ok(result: Value) -> Response {
    Json(json!({ "ok": true, "result": result })).into_response()
}

fn fail(status: u16, description: &str, retry_after: Option<u64>) -> Response {
    let mut body = json!({ "ok": false, "error_code": status, "description": description });
    if let Some(secs) = retry_after {
        body["parameters"] = json!({ "retry_after": secs });
    }
    (StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST), Json(body)).into_response()
}

fn text_of(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

impl TelegramEmulator {
    pub async fn start() -> std::io::Result<Self> {
        let inner = Arc::new(Inner::default());
        let app = Router::new()
            .route("/{bot}/{method}", any(handle))
            .route("/file/{bot}/files/{id}", axum::routing::get(download))
            .with_state(inner.clone());
        let addr = crate::serve_loopback(app).await?;
        Ok(Self { inner, addr })
    }

    /// What a channel's `--api-base` is set to.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Registers a bot; its token is `token`.
    pub fn add_bot(&self, token: &str, username: &str) {
        let mut bots = self.inner.bots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let bot = bots.entry(token.to_owned()).or_default();
        bot.username = username.to_owned();
        bot.next_update = 10_000;
    }

    fn with_bot<T>(&self, token: &str, f: impl FnOnce(&mut Bot) -> T) -> T {
        let mut bots = self.inner.bots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(bots.entry(token.to_owned()).or_default())
    }

    /// Carries out the next call of `method` but never answers it, as if the network failed
    /// after Telegram acted (the caller cannot know whether it did).
    pub fn hold_next(&self, token: &str, method: &str) {
        self.with_bot(token, |bot| bot.holds.insert(method.to_owned()));
    }

    /// Queues a raw update (its `update_id` is assigned) and returns its id. A message gets the
    /// next id of its chat, which people and the bot share, as in Telegram.
    pub fn push_update(&self, token: &str, mut update: Value) -> i64 {
        self.with_bot(token, |bot| {
            bot.next_update += 1;
            update["update_id"] = json!(bot.next_update);
            if let Some(chat) = update.pointer("/message/chat/id").map(|c| c.to_string()) {
                let next = bot.next_message.entry(chat).or_insert(100);
                *next += 1;
                update["message"]["message_id"] = json!(*next);
            }
            bot.updates.push_back(update);
            bot.queued_at.insert(bot.next_update, Instant::now());
            bot.arrived.notify_waiters();
            bot.next_update
        })
    }

    /// Queues an update again with the id it already has (Telegram redelivering it).
    pub fn redeliver(&self, token: &str, update: Value) {
        self.with_bot(token, |bot| {
            bot.updates.push_back(update);
            bot.arrived.notify_waiters();
        });
    }

    /// Stops logging calls ([`Self::calls`] then stays empty): a benchmark's bots poll for
    /// hours, and the log would grow without end.
    pub fn quiet(&self) {
        self.inner.quiet.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// How many bots have called `getUpdates` at or after `since`.
    pub fn polled_since(&self, since: Instant) -> usize {
        let bots = self.inner.bots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        bots.values().filter(|b| b.last_poll.is_some_and(|at| at >= since)).count()
    }

    /// Takes the pickup times recorded since the last call: for each update confirmed, how
    /// long from being queued until the bot's next `getUpdates` passed it (so it was stored).
    pub fn take_pickups(&self) -> Vec<Duration> {
        std::mem::take(&mut *self.inner.pickups.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// A user writes `text` to the bot in a private chat (chat id = user id).
    pub fn user_says(&self, token: &str, user: i64, text: &str) -> i64 {
        self.push_update(token, message_update(user, "private", user, text, None))
    }

    /// A user writes in a group chat, optionally replying to one of the bot's messages.
    pub fn group_says(&self, token: &str, chat: i64, user: i64, text: &str, reply_to_bot: Option<i64>) -> i64 {
        let username = self.with_bot(token, |bot| bot.username.clone());
        let mut update = message_update(chat, "supergroup", user, text, None);
        if let Some(id) = reply_to_bot {
            update["message"]["reply_to_message"] =
                json!({ "message_id": id, "from": { "id": 1, "is_bot": true, "username": username } });
        }
        self.push_update(token, update)
    }

    /// A user presses a button (its `callback_data`) under the bot's message `message_id`.
    pub fn press_button(&self, token: &str, chat: i64, user: i64, message_id: i64, data: &str) -> i64 {
        let update = json!({ "callback_query": {
            "id": format!("cb{chat}{message_id}{user}{}", data.len()),
            "from": { "id": user, "is_bot": false, "username": format!("user{user}") },
            "message": { "message_id": message_id, "chat": { "id": chat, "type": if chat > 0 { "private" } else { "supergroup" } } },
            "data": data,
        }});
        self.push_update(token, update)
    }

    /// A user sends a photo (stored under `file_id`) with an optional caption.
    pub fn user_sends_photo(&self, token: &str, user: i64, file_id: &str, bytes: &[u8], caption: Option<&str>) -> i64 {
        self.with_bot(token, |bot| bot.files.insert(file_id.to_owned(), bytes.to_vec()));
        let mut update = message_update(user, "private", user, "", None);
        let message = &mut update["message"];
        if let Some(obj) = message.as_object_mut() {
            obj.remove("text");
        }
        message["photo"] = json!([
            { "file_id": format!("{file_id}-small"), "width": 90, "height": 90, "file_size": 10 },
            { "file_id": file_id, "width": 800, "height": 600, "file_size": bytes.len() },
        ]);
        if let Some(c) = caption {
            message["caption"] = json!(c);
        }
        self.push_update(token, update)
    }

    /// A user sends a voice note (Telegram's OGG/Opus recording).
    pub fn user_sends_voice(&self, token: &str, user: i64, file_id: &str, bytes: &[u8]) -> i64 {
        self.with_bot(token, |bot| bot.files.insert(file_id.to_owned(), bytes.to_vec()));
        let mut update = message_update(user, "private", user, "", None);
        if let Some(obj) = update["message"].as_object_mut() {
            obj.remove("text");
        }
        update["message"]["voice"] =
            json!({ "file_id": file_id, "duration": 3, "mime_type": "audio/ogg", "file_size": bytes.len() });
        self.push_update(token, update)
    }

    /// A user sends a document.
    pub fn user_sends_document(
        &self,
        token: &str,
        user: i64,
        file_id: &str,
        name: &str,
        mime: &str,
        bytes: &[u8],
    ) -> i64 {
        self.with_bot(token, |bot| bot.files.insert(file_id.to_owned(), bytes.to_vec()));
        let mut update = message_update(user, "private", user, "", None);
        if let Some(obj) = update["message"].as_object_mut() {
            obj.remove("text");
        }
        update["message"]["document"] =
            json!({ "file_id": file_id, "file_name": name, "mime_type": mime, "file_size": bytes.len() });
        self.push_update(token, update)
    }

    /// Makes the next `count` calls of `method` fail with `status` and `description`.
    pub fn fail_next(
        &self,
        token: &str,
        method: &str,
        count: usize,
        status: u16,
        description: &str,
        retry_after: Option<u64>,
    ) {
        self.with_bot(token, |bot| {
            let queue = bot.failures.entry(method.to_owned()).or_default();
            for _ in 0..count {
                queue.push_back((status, description.to_owned(), retry_after));
            }
        });
    }

    /// The messages the bot has in each chat (not deleted), in the order sent.
    pub fn sent(&self, token: &str) -> Vec<SentMessage> {
        self.with_bot(token, |bot| bot.sent.iter().filter(|m| !m.deleted).cloned().collect())
    }

    /// Every message the bot sent, deleted ones too.
    pub fn all_sent(&self, token: &str) -> Vec<SentMessage> {
        self.with_bot(token, |bot| bot.sent.clone())
    }

    /// Every call the bot made: method and parameters.
    pub fn calls(&self, token: &str) -> Vec<(String, Value)> {
        self.with_bot(token, |bot| bot.calls.clone())
    }

    /// The files the bot sent, in order.
    pub fn uploads(&self, token: &str) -> Vec<Upload> {
        self.with_bot(token, |bot| bot.uploads.clone())
    }

    /// Updates Telegram still holds (not confirmed by an offset).
    pub fn unconfirmed(&self, token: &str) -> usize {
        self.with_bot(token, |bot| bot.updates.len())
    }

    /// The webhook URL and secret the bot set, if any.
    pub fn webhook(&self, token: &str) -> Option<(String, String)> {
        self.with_bot(token, |bot| bot.webhook.clone())
    }
}

async fn download(State(inner): State<Arc<Inner>>, Path((bot, id)): Path<(String, String)>) -> Response {
    let token = bot.strip_prefix("bot").unwrap_or_default();
    let bots = inner.bots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    match bots.get(token).and_then(|b| b.files.get(&id)) {
        Some(bytes) => bytes.clone().into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// A `message` update.
pub fn message_update(chat: i64, chat_type: &str, user: i64, text: &str, thread: Option<i64>) -> Value {
    let mut message = json!({
        "message_id": chat.unsigned_abs() as i64 % 1000 + 1,
        "date": 1_764_500_000,
        "chat": { "id": chat, "type": chat_type },
        "from": { "id": user, "is_bot": false, "first_name": format!("User {user}"), "username": format!("user{user}") },
        "text": text,
    });
    if let Some(t) = thread {
        message["message_thread_id"] = json!(t);
        message["is_topic_message"] = json!(true);
    }
    json!({ "message": message })
}

async fn handle(
    State(inner): State<Arc<Inner>>,
    Path((bot, method)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    let Some(token) = bot.strip_prefix("bot").map(str::to_owned) else {
        return fail(404, "Not Found", None);
    };
    let content_type = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let mut params: Value = if content_type.starts_with("multipart/form-data") {
        form_params(content_type, &body)
    } else {
        serde_json::from_slice(&body).unwrap_or_else(|_| json!({}))
    };
    if let Value::Object(obj) = &mut params {
        for (k, v) in query {
            obj.entry(k).or_insert(Value::String(v));
        }
    }
    {
        let mut bots = inner.bots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(b) = bots.get_mut(&token) else {
            return fail(401, "Unauthorized", None);
        };
        if !inner.quiet.load(std::sync::atomic::Ordering::Relaxed) {
            b.calls.push((method.clone(), params.clone()));
        }
        if let Some((status, description, retry)) = b.failures.get_mut(&method).and_then(VecDeque::pop_front) {
            return fail(status, &description, retry);
        }
    }
    match method.as_str() {
        "getUpdates" => get_updates(&inner, &token, &params).await,
        _ => {
            let (answer, hold) = {
                let mut bots = inner.bots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                let Some(b) = bots.get_mut(&token) else { return fail(401, "Unauthorized", None) };
                (call(b, &method, &params), b.holds.remove(&method))
            };
            if hold {
                std::future::pending::<()>().await;
            }
            answer
        }
    }
}

/// A multipart form as parameters; its file as `__file` (name, type, bytes as a list).
fn form_params(content_type: &str, body: &[u8]) -> Value {
    let mut params = json!({});
    for part in crate::multipart::parse(content_type, body).unwrap_or_default() {
        match &part.filename {
            Some(name) => {
                params["__file"] = json!({ "field": part.name, "name": name,
                    "mime": part.content_type.unwrap_or_default(), "data": part.data });
            }
            None => params[part.name.as_str()] = json!(String::from_utf8_lossy(&part.data)),
        }
    }
    params
}

fn call(bot: &mut Bot, method: &str, params: &Value) -> Response {
    match method {
        "sendPhoto" | "sendDocument" | "sendVoice" | "sendAudio" => {
            let (Some(chat), Some(file)) = (text_of(params, "chat_id"), params.get("__file")) else {
                return fail(400, "Bad Request: there is no file in the request", None);
            };
            let data: Vec<u8> = serde_json::from_value(file["data"].clone()).unwrap_or_default();
            if method == "sendPhoto" && data.len() > 10 << 20 {
                return fail(400, "Bad Request: PHOTO_INVALID_DIMENSIONS", None);
            }
            let next = bot.next_message.entry(chat.clone()).or_insert(100);
            *next += 1;
            bot.uploads.push(Upload {
                chat_id: chat.clone(),
                method: method.to_owned(),
                name: file["name"].as_str().unwrap_or_default().to_owned(),
                mime: file["mime"].as_str().unwrap_or_default().to_owned(),
                data,
            });
            ok(json!({ "message_id": *next, "chat": { "id": chat } }))
        }
        "getMe" => ok(json!({ "id": 1, "is_bot": true, "first_name": "Hermes", "username": bot.username })),
        "setWebhook" => {
            bot.webhook =
                Some((text_of(params, "url").unwrap_or_default(), text_of(params, "secret_token").unwrap_or_default()));
            ok(json!(true))
        }
        "deleteWebhook" => {
            bot.webhook = None;
            ok(json!(true))
        }
        "setMyCommands" | "sendChatAction" | "answerCallbackQuery" => ok(json!(true)),
        "getFile" => {
            let id = text_of(params, "file_id").unwrap_or_default();
            match bot.files.get(&id) {
                Some(bytes) => {
                    ok(json!({ "file_id": id, "file_size": bytes.len(), "file_path": format!("files/{id}") }))
                }
                None => fail(400, "Bad Request: invalid file_id", None),
            }
        }
        "sendMessage" => {
            let Some(chat) = text_of(params, "chat_id") else {
                return fail(400, "Bad Request: chat_id is empty", None);
            };
            let text = text_of(params, "text").unwrap_or_default();
            if text.is_empty() {
                return fail(400, "Bad Request: message text is empty", None);
            }
            let visible = match text_of(params, "parse_mode").as_deref() {
                Some("HTML") => match visible_html(&text) {
                    Some(v) => v,
                    None => return fail(400, "Bad Request: can't parse entities: unbalanced or unknown tag", None),
                },
                _ => text.clone(),
            };
            if visible.chars().count() > 4096 {
                return fail(400, "Bad Request: message is too long", None);
            }
            let next = bot.next_message.entry(chat.clone()).or_insert(100);
            *next += 1;
            let message = SentMessage {
                chat_id: chat.clone(),
                message_id: *next,
                text: text.clone(),
                parse_mode: text_of(params, "parse_mode"),
                reply_to: params.pointer("/reply_parameters/message_id").and_then(Value::as_i64),
                reply_markup: params.get("reply_markup").cloned(),
                edits: 0,
                deleted: false,
            };
            bot.sent.push(message);
            ok(json!({ "message_id": *next, "chat": { "id": chat }, "text": text }))
        }
        "deleteMessage" => {
            let chat = text_of(params, "chat_id").unwrap_or_default();
            let id = params.get("message_id").and_then(Value::as_i64).unwrap_or_default();
            match bot.sent.iter_mut().find(|m| m.chat_id == chat && m.message_id == id && !m.deleted) {
                Some(m) => {
                    m.deleted = true;
                    ok(json!(true))
                }
                None => fail(400, "Bad Request: message to delete not found", None),
            }
        }
        "editMessageText" => {
            let chat = text_of(params, "chat_id").unwrap_or_default();
            let id = params.get("message_id").and_then(Value::as_i64).unwrap_or_default();
            let text = text_of(params, "text").unwrap_or_default();
            let Some(message) = bot.sent.iter_mut().find(|m| m.chat_id == chat && m.message_id == id && !m.deleted)
            else {
                return fail(400, "Bad Request: message to edit not found", None);
            };
            if message.text == text {
                return fail(
                    400,
                    "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
                    None,
                );
            }
            message.text = text;
            message.reply_markup = params.get("reply_markup").cloned();
            message.edits += 1;
            ok(json!({ "message_id": id }))
        }
        _ => fail(404, "Not Found: method not found", None),
    }
}

async fn get_updates(inner: &Arc<Inner>, token: &str, params: &Value) -> Response {
    let offset = params.get("offset").and_then(|v| v.as_i64().or_else(|| v.as_str()?.parse().ok())).unwrap_or(0);
    let timeout = params.get("timeout").and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok())).unwrap_or(0);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout.min(50));
    let mut first = true;
    loop {
        let arrived = {
            let mut bots = inner.bots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let Some(bot) = bots.get_mut(token) else { return fail(401, "Unauthorized", None) };
            if bot.webhook.is_some() {
                return fail(409, "Conflict: can't use getUpdates method while webhook is active", None);
            }
            if std::mem::take(&mut first) {
                bot.last_poll = Some(Instant::now());
            }
            confirm(inner, bot, offset);
            if !bot.updates.is_empty() {
                return ok(Value::Array(bot.updates.iter().take(100).cloned().collect()));
            }
            bot.arrived.clone()
        };
        let notified = arrived.notified();
        tokio::pin!(notified);
        // Registered before the lock is taken again, so an update queued in between wakes it.
        notified.as_mut().enable();
        let queued = {
            let bots = inner.bots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            bots.get(token).is_some_and(|b| !b.updates.is_empty())
        };
        if !queued && tokio::time::timeout_at(deadline, notified).await.is_err() {
            return ok(json!([]));
        }
    }
}

/// An offset confirms every update before it: they are dropped, and how long each waited is
/// recorded.
fn confirm(inner: &Inner, bot: &mut Bot, offset: i64) {
    if offset <= 0 {
        return;
    }
    bot.updates.retain(|u| u["update_id"].as_i64().unwrap_or_default() >= offset);
    let confirmed: Vec<i64> = bot.queued_at.keys().copied().filter(|id| *id < offset).collect();
    if confirmed.is_empty() {
        return;
    }
    let now = Instant::now();
    let mut pickups = inner.pickups.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    for id in confirmed {
        if let Some(at) = bot.queued_at.remove(&id) {
            pickups.push(now - at);
        }
    }
}
