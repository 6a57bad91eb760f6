//! A WeCom message API emulator on loopback: `gettoken` (checks the company id and secret)
//! and `message/send` (checks the token), with WeCom's `errcode` envelope, tokens a test can
//! expire (42001), and failures it can inject. Tests play WeCom's encrypted callbacks
//! themselves.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use axum::Json;
use axum::Router;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::emulated::Emulated;

/// A message the app sent: text, or uploaded media (`content` is then `[image]` or `[file]`).
#[derive(Debug, Clone)]
pub struct Sent {
    pub to_user: String,
    pub content: String,
    /// The media's file name and bytes.
    pub media: Option<(String, Vec<u8>)>,
}

#[derive(Default)]
struct Inner {
    corp_id: String,
    secret: String,
    valid_tokens: Vec<String>,
    tokens_issued: u32,
    sent: Vec<Sent>,
    failures: VecDeque<i64>,
    /// Media: id -> (file name, bytes), both what people sent and what the app uploaded.
    media: HashMap<String, (String, Vec<u8>)>,
}

/// The emulator; it serves until dropped.
#[derive(Clone)]
pub struct WecomEmulator {
    state: Emulated<Inner>,
}

impl WecomEmulator {
    pub async fn start(corp_id: &str, secret: &str) -> std::io::Result<Self> {
        let inner = Inner { corp_id: corp_id.into(), secret: secret.into(), ..Default::default() };
        let routes = Router::new()
            .route("/cgi-bin/gettoken", get(gettoken))
            .route("/cgi-bin/message/send", post(send))
            .route("/cgi-bin/media/get", get(media_get))
            .route("/cgi-bin/media/upload", post(media_upload));
        Ok(Self { state: Emulated::start(inner, routes).await? })
    }

    pub fn base_url(&self) -> String {
        self.state.url("http", "")
    }

    pub fn sent(&self) -> Vec<Sent> {
        self.state.with(|i| i.sent.clone())
    }

    /// How many access tokens were handed out.
    pub fn tokens_issued(&self) -> u32 {
        self.state.with(|i| i.tokens_issued)
    }

    /// Every token handed out so far stops working (42001), as when they expire.
    pub fn expire_tokens(&self) {
        self.state.with(|i| i.valid_tokens.clear());
    }

    /// The next `message/send` calls fail with these error codes.
    /// A picture someone sends the app: its `MediaId`.
    pub fn add_media(&self, id: &str, bytes: &[u8]) {
        self.state.with(|i| i.media.insert(id.to_owned(), ("photo.jpg".into(), bytes.to_vec())));
    }

    pub fn fail_next(&self, codes: &[i64]) {
        self.state.with(|i| i.failures.extend(codes));
    }
}

async fn gettoken(State(inner): State<Arc<Mutex<Inner>>>, Query(q): Query<HashMap<String, String>>) -> Json<Value> {
    let mut i = inner.lock().unwrap_or_else(PoisonError::into_inner);
    if q.get("corpid") != Some(&i.corp_id) || q.get("corpsecret") != Some(&i.secret) {
        return Json(json!({ "errcode": 40013, "errmsg": "invalid corpid" }));
    }
    i.tokens_issued += 1;
    let token = format!("token-{}", i.tokens_issued);
    i.valid_tokens.push(token.clone());
    Json(json!({ "errcode": 0, "errmsg": "ok", "access_token": token, "expires_in": 7200 }))
}

async fn send(
    State(inner): State<Arc<Mutex<Inner>>>,
    Query(q): Query<HashMap<String, String>>,
    Json(body): Json<Value>,
) -> Json<Value> {
    let mut i = inner.lock().unwrap_or_else(PoisonError::into_inner);
    let token = q.get("access_token").cloned().unwrap_or_default();
    if !i.valid_tokens.contains(&token) {
        return Json(json!({ "errcode": 42001, "errmsg": "access_token expired" }));
    }
    if let Some(code) = i.failures.pop_front() {
        return Json(json!({ "errcode": code, "errmsg": "injected" }));
    }
    let to_user = body["touser"].as_str().unwrap_or_default().to_owned();
    let kind = body["msgtype"].as_str().unwrap_or_default().to_owned();
    if kind == "image" || kind == "file" {
        let id = body.pointer(&format!("/{kind}/media_id")).and_then(Value::as_str).unwrap_or_default();
        let Some(media) = i.media.get(id).cloned() else {
            return Json(json!({ "errcode": 40007, "errmsg": "invalid media_id" }));
        };
        i.sent.push(Sent { to_user, content: format!("[{kind}]"), media: Some(media) });
        return Json(json!({ "errcode": 0, "errmsg": "ok", "msgid": format!("msg{}", i.sent.len()) }));
    }
    let content = body.pointer("/text/content").and_then(Value::as_str).unwrap_or_default().to_owned();
    if content.chars().count() > 2048 {
        return Json(json!({ "errcode": 44004, "errmsg": "content too long" }));
    }
    i.sent.push(Sent { to_user, content, media: None });
    Json(json!({ "errcode": 0, "errmsg": "ok", "msgid": format!("msg{}", i.sent.len()) }))
}

async fn media_get(State(inner): State<Arc<Mutex<Inner>>>, Query(q): Query<HashMap<String, String>>) -> Response {
    let i = inner.lock().unwrap_or_else(PoisonError::into_inner);
    if !i.valid_tokens.contains(q.get("access_token").unwrap_or(&String::new())) {
        return Json(json!({ "errcode": 42001, "errmsg": "access_token expired" })).into_response();
    }
    match q.get("media_id").and_then(|id| i.media.get(id)) {
        Some((_, bytes)) => ([(axum::http::header::CONTENT_TYPE, "image/jpeg")], bytes.clone()).into_response(),
        None => Json(json!({ "errcode": 40007, "errmsg": "invalid media_id" })).into_response(),
    }
}

async fn media_upload(
    State(inner): State<Arc<Mutex<Inner>>>,
    Query(q): Query<HashMap<String, String>>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> Json<Value> {
    let mut i = inner.lock().unwrap_or_else(PoisonError::into_inner);
    if !i.valid_tokens.contains(q.get("access_token").unwrap_or(&String::new())) {
        return Json(json!({ "errcode": 42001, "errmsg": "access_token expired" }));
    }
    let content_type = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let form = crate::multipart::parse(content_type, &body).unwrap_or_default();
    let Some(file) = form.into_iter().find(|p| p.name == "media" && p.filename.is_some()) else {
        return Json(json!({ "errcode": 41005, "errmsg": "media data missing" }));
    };
    let id = format!("media-{}", i.media.len() + 1);
    i.media.insert(id.clone(), (file.filename.unwrap_or_default(), file.data));
    Json(json!({ "errcode": 0, "errmsg": "ok", "type": q.get("type"), "media_id": id }))
}
