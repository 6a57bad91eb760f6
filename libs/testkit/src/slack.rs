//! A Slack Web API emulator on loopback (`auth.test`, `chat.postMessage`, `chat.update`) with
//! Slack's envelope (`{ok: true, ...}` / `{ok: false, error}`), 429s with `Retry-After`, and
//! failures a test can inject. Tests play Slack's side of the Events API themselves; Socket
//! Mode is in [`crate::slack_socket`].

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use crate::emulated::Emulated;

/// A message the bot posted.
#[derive(Debug, Clone)]
pub struct Posted {
    pub channel: String,
    pub ts: String,
    pub text: String,
    pub thread_ts: Option<String>,
    pub blocks: Option<Value>,
    pub updates: u32,
    pub deleted: bool,
    pub metadata: Option<Value>,
}

/// A file the bot shared.
#[derive(Debug, Clone)]
pub struct SharedFile {
    pub channel: String,
    pub thread_ts: Option<String>,
    pub title: String,
    pub data: Vec<u8>,
}

#[derive(Default)]
struct Inner {
    token: String,
    bot_user: String,
    posted: Vec<Posted>,
    next_ts: u64,
    /// Injected failures by method: a Slack error name, or "429:<seconds>".
    failures: HashMap<String, VecDeque<String>>,
    /// Shared files: id -> bytes.
    files: HashMap<String, Vec<u8>>,
    /// Uploads: file id -> (name, announced length, bytes once sent); then the shared files.
    uploads: HashMap<String, (String, usize, Option<Vec<u8>>)>,
    shared: Vec<SharedFile>,
    /// Methods whose next call is carried out but never answered.
    holds: std::collections::HashSet<String>,
    /// Socket Mode: the app-level token, and the connections.
    app_token: String,
    socket: Arc<crate::slack_socket::SocketHub>,
}

/// The emulator; it serves until dropped.
#[derive(Clone)]
pub struct SlackEmulator {
    state: Emulated<Inner>,
}

impl SlackEmulator {
    /// A workspace whose bot has token `token` and user id `bot_user`.
    pub async fn start(token: &str, bot_user: &str) -> std::io::Result<Self> {
        let inner = Inner {
            token: token.to_owned(),
            bot_user: bot_user.to_owned(),
            next_ts: 1_700_000_000,
            ..Default::default()
        };
        let routes = Router::new()
            .route("/api/{method}", post(handle))
            .route("/files/{id}", axum::routing::get(file))
            .route("/link", axum::routing::get(link))
            .route("/upload/{id}", post(upload));
        Ok(Self { state: Emulated::start(inner, routes).await? })
    }

    /// What a channel's `--api-base` is set to.
    pub fn base_url(&self) -> String {
        self.state.url("http", "/api")
    }

    /// What the bot posted and did not delete, in order (with later updates applied).
    pub fn posted(&self) -> Vec<Posted> {
        self.state.with(|i| i.posted.iter().filter(|p| !p.deleted).cloned().collect())
    }

    /// Everything the bot posted, deleted messages too.
    pub fn all_posted(&self) -> Vec<Posted> {
        self.state.with(|i| i.posted.clone())
    }

    /// A file someone shares: its `url_private_download`.
    pub fn add_file(&self, id: &str, bytes: &[u8]) -> String {
        self.state.with(|i| i.files.insert(id.to_owned(), bytes.to_vec()));
        self.state.url("http", &format!("/files/{id}"))
    }

    /// The files the bot shared, in order.
    pub fn shared_files(&self) -> Vec<SharedFile> {
        self.state.with(|i| i.shared.clone())
    }

    /// Carries out the next call of `method` but never answers it, as if the network failed
    /// after Slack acted.
    pub fn hold_next(&self, method: &str) {
        self.state.with(|i| i.holds.insert(method.to_owned()));
    }

    /// Lets the app connect in Socket Mode with `app_token`; the hub plays Slack's side.
    pub fn socket_mode(&self, app_token: &str) -> Arc<crate::slack_socket::SocketHub> {
        self.state.with(|i| {
            i.app_token = app_token.to_owned();
            i.socket.clone()
        })
    }

    /// Makes the next `count` calls of `method` fail with Slack error `error` (or `429:<secs>`).
    pub fn fail_next(&self, method: &str, count: usize, error: &str) {
        self.state.with(|i| {
            let q = i.failures.entry(method.to_owned()).or_default();
            for _ in 0..count {
                q.push_back(error.to_owned());
            }
        });
    }
}

async fn file(State(inner): State<Arc<Mutex<Inner>>>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    let i = inner.lock().unwrap_or_else(PoisonError::into_inner);
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default();
    if auth != format!("Bearer {}", i.token) {
        return StatusCode::FORBIDDEN.into_response();
    }
    match i.files.get(&id) {
        Some(bytes) => bytes.clone().into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn link(State(inner): State<Arc<Mutex<Inner>>>, upgrade: axum::extract::WebSocketUpgrade) -> Response {
    let hub = inner.lock().unwrap_or_else(PoisonError::into_inner).socket.clone();
    upgrade.on_upgrade(move |socket| hub.serve(socket))
}

async fn upload(State(inner): State<Arc<Mutex<Inner>>>, Path(id): Path<String>, body: axum::body::Bytes) -> Response {
    let mut i = inner.lock().unwrap_or_else(PoisonError::into_inner);
    match i.uploads.get_mut(&id) {
        Some((_, length, data)) if *length == body.len() => {
            *data = Some(body.to_vec());
            StatusCode::OK.into_response()
        }
        Some(_) => (StatusCode::BAD_REQUEST, "length mismatch").into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn handle(
    State(inner): State<Arc<Mutex<Inner>>>,
    Path(method): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    // Most methods take JSON; some (the upload address) only form fields.
    let form = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let params: Value = if form.starts_with("application/x-www-form-urlencoded") {
        let fields: serde_json::Map<String, Value> =
            form_urlencoded::parse(&body).into_owned().map(|(k, v)| (k, Value::String(v))).collect();
        Value::Object(fields)
    } else {
        match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(_) => return Json(json!({ "ok": false, "error": "invalid_json" })).into_response(),
        }
    };
    let (answer, hold) = respond(&inner, &method, &headers, form, &params);
    if hold {
        std::future::pending::<()>().await;
    }
    answer
}

/// Slack's answer to a call, and whether to withhold it.
fn respond(inner: &Mutex<Inner>, method: &str, headers: &HeaderMap, form: &str, params: &Value) -> (Response, bool) {
    let mut i = inner.lock().unwrap_or_else(PoisonError::into_inner);
    let hold = i.holds.remove(method);
    (answer(&mut i, method, headers, form, params), hold)
}

fn answer(i: &mut Inner, method: &str, headers: &HeaderMap, form: &str, params: &Value) -> Response {
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default();
    if method == "apps.connections.open" {
        if i.app_token.is_empty() || auth != format!("Bearer {}", i.app_token) {
            return Json(json!({ "ok": false, "error": "invalid_auth" })).into_response();
        }
        let host = headers.get("host").and_then(|v| v.to_str().ok()).unwrap_or_default();
        return Json(json!({ "ok": true, "url": format!("ws://{host}/link?ticket=t{}", i.next_ts) })).into_response();
    }
    if auth != format!("Bearer {}", i.token) {
        return Json(json!({ "ok": false, "error": "invalid_auth" })).into_response();
    }
    if let Some(fail) = i.failures.get_mut(method).and_then(VecDeque::pop_front) {
        if let Some(secs) = fail.strip_prefix("429:") {
            let mut resp =
                (StatusCode::TOO_MANY_REQUESTS, Json(json!({ "ok": false, "error": "ratelimited" }))).into_response();
            if let Ok(v) = secs.parse() {
                resp.headers_mut().insert("retry-after", v);
            }
            return resp;
        }
        return Json(json!({ "ok": false, "error": fail })).into_response();
    }
    let text = |p: &Value, k: &str| p[k].as_str().map(str::to_owned);
    match method {
        "auth.test" => {
            Json(json!({ "ok": true, "user_id": i.bot_user, "team_id": "T0TEST", "bot_id": "B0TEST" })).into_response()
        }
        "chat.postMessage" => {
            let (Some(channel), Some(body)) = (text(params, "channel"), text(params, "text")) else {
                return Json(json!({ "ok": false, "error": "invalid_arguments" })).into_response();
            };
            if body.chars().count() > 40_000 {
                return Json(json!({ "ok": false, "error": "msg_too_long" })).into_response();
            }
            i.next_ts += 1;
            let ts = format!("{}.000100", i.next_ts);
            let posted = Posted {
                channel: channel.clone(),
                ts: ts.clone(),
                text: body,
                thread_ts: text(params, "thread_ts"),
                blocks: params.get("blocks").cloned(),
                updates: 0,
                deleted: false,
                metadata: params.get("metadata").cloned(),
            };
            i.posted.push(posted);
            Json(json!({ "ok": true, "channel": channel, "ts": ts })).into_response()
        }
        "conversations.history" | "conversations.replies" => {
            let channel = text(params, "channel").unwrap_or_default();
            let thread = text(params, "ts");
            let with_metadata = params["include_all_metadata"] == true;
            let messages: Vec<Value> = i
                .posted
                .iter()
                .filter(|p| p.channel == channel && !p.deleted)
                .filter(|p| {
                    method == "conversations.history" || p.thread_ts == thread || Some(&p.ts) == thread.as_ref()
                })
                .map(|p| {
                    let mut m = json!({ "type": "message", "ts": p.ts, "text": p.text, "bot_id": "B0TEST" });
                    if let (true, Some(meta)) = (with_metadata, &p.metadata) {
                        m["metadata"] = meta.clone();
                    }
                    m
                })
                .collect();
            Json(json!({ "ok": true, "messages": messages, "has_more": false })).into_response()
        }
        "files.getUploadURLExternal" => {
            if form.starts_with("application/json") {
                return Json(json!({ "ok": false, "error": "invalid_form_data" })).into_response();
            }
            let (Some(name), Some(length)) =
                (text(params, "filename"), text(params, "length").and_then(|l| l.parse::<usize>().ok()))
            else {
                return Json(json!({ "ok": false, "error": "invalid_arguments" })).into_response();
            };
            i.next_ts += 1;
            let id = format!("F{}", i.next_ts);
            i.uploads.insert(id.clone(), (name, length, None));
            let host = headers.get("host").and_then(|v| v.to_str().ok()).unwrap_or_default();
            Json(json!({ "ok": true, "upload_url": format!("http://{host}/upload/{id}"), "file_id": id }))
                .into_response()
        }
        "files.completeUploadExternal" => {
            let channel = text(params, "channel_id").unwrap_or_default();
            let mut done = Vec::new();
            for f in params["files"].as_array().cloned().unwrap_or_default() {
                let id = f["id"].as_str().unwrap_or_default();
                let Some((name, _, Some(data))) = i.uploads.remove(id) else {
                    return Json(json!({ "ok": false, "error": "file_not_found" })).into_response();
                };
                let title = f["title"].as_str().map(str::to_owned).unwrap_or(name);
                done.push(SharedFile { channel: channel.clone(), thread_ts: text(params, "thread_ts"), title, data });
            }
            i.shared.extend(done);
            Json(json!({ "ok": true, "files": params["files"] })).into_response()
        }
        "chat.delete" => {
            let (channel, ts) = (text(params, "channel").unwrap_or_default(), text(params, "ts").unwrap_or_default());
            match i.posted.iter_mut().find(|p| p.channel == channel && p.ts == ts && !p.deleted) {
                Some(p) => {
                    p.deleted = true;
                    Json(json!({ "ok": true, "channel": channel, "ts": ts })).into_response()
                }
                None => Json(json!({ "ok": false, "error": "message_not_found" })).into_response(),
            }
        }
        "chat.update" => {
            let (channel, ts) = (text(params, "channel").unwrap_or_default(), text(params, "ts").unwrap_or_default());
            match i.posted.iter_mut().find(|p| p.channel == channel && p.ts == ts && !p.deleted) {
                Some(p) => {
                    p.text = text(params, "text").unwrap_or_default();
                    p.blocks = params.get("blocks").cloned();
                    p.updates += 1;
                    Json(json!({ "ok": true, "channel": channel, "ts": ts })).into_response()
                }
                None => Json(json!({ "ok": false, "error": "message_not_found" })).into_response(),
            }
        }
        _ => Json(json!({ "ok": false, "error": "unknown_method" })).into_response(),
    }
}
