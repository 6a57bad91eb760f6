//! A WeCom message API emulator on loopback: `gettoken` (checks the company id and secret)
//! and `message/send` (checks the token), with WeCom's `errcode` envelope, tokens a test can
//! expire (42001), and failures it can inject. Tests play WeCom's encrypted callbacks
//! themselves.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Json;
use axum::Router;
use axum::extract::{Query, State};
use axum::routing::{get, post};
use serde_json::{Value, json};

/// A message the app sent.
#[derive(Debug, Clone)]
pub struct Sent {
    pub to_user: String,
    pub content: String,
}

#[derive(Default)]
struct Inner {
    corp_id: String,
    secret: String,
    valid_tokens: Vec<String>,
    tokens_issued: u32,
    sent: Vec<Sent>,
    failures: VecDeque<i64>,
}

/// The emulator; it serves until dropped.
#[derive(Clone)]
pub struct WecomEmulator {
    inner: Arc<Mutex<Inner>>,
    addr: SocketAddr,
}

impl WecomEmulator {
    pub async fn start(corp_id: &str, secret: &str) -> std::io::Result<Self> {
        let inner =
            Arc::new(Mutex::new(Inner { corp_id: corp_id.into(), secret: secret.into(), ..Default::default() }));
        let app = Router::new()
            .route("/cgi-bin/gettoken", get(gettoken))
            .route("/cgi-bin/message/send", post(send))
            .with_state(inner.clone());
        let addr = crate::serve_loopback(app).await?;
        Ok(Self { inner, addr })
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        f(&mut self.inner.lock().unwrap_or_else(PoisonError::into_inner))
    }

    pub fn sent(&self) -> Vec<Sent> {
        self.with(|i| i.sent.clone())
    }

    /// How many access tokens were handed out.
    pub fn tokens_issued(&self) -> u32 {
        self.with(|i| i.tokens_issued)
    }

    /// Every token handed out so far stops working (42001), as when they expire.
    pub fn expire_tokens(&self) {
        self.with(|i| i.valid_tokens.clear());
    }

    /// The next `message/send` calls fail with these error codes.
    pub fn fail_next(&self, codes: &[i64]) {
        self.with(|i| i.failures.extend(codes));
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
    let content = body.pointer("/text/content").and_then(Value::as_str).unwrap_or_default().to_owned();
    if content.chars().count() > 2048 {
        return Json(json!({ "errcode": 44004, "errmsg": "content too long" }));
    }
    let to_user = body["touser"].as_str().unwrap_or_default().to_owned();
    i.sent.push(Sent { to_user, content });
    Json(json!({ "errcode": 0, "errmsg": "ok", "msgid": format!("msg{}", i.sent.len()) }))
}
