//! A webhook receiver for tests: records every POST (headers and body) and answers with the
//! statuses it was told, in order (200 once they run out).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;

use crate::served::Served;

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
}

#[derive(Default)]
struct Shared {
    statuses: Mutex<VecDeque<u16>>,
    received: Mutex<Vec<Received>>,
}

/// A running receiver; stops when dropped.
pub struct Receiver {
    served: Served,
    shared: Arc<Shared>,
}

async fn take(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let headers =
        headers.iter().map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or_default().to_owned())).collect();
    if let Ok(mut r) = shared.received.lock() {
        r.push(Received { headers, body: body.to_vec() });
    }
    let status = shared.statuses.lock().ok().and_then(|mut s| s.pop_front()).unwrap_or(200);
    StatusCode::from_u16(status).unwrap_or(StatusCode::OK)
}

impl Receiver {
    /// Starts on a free loopback port; every path takes POSTs.
    pub async fn start() -> std::io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let app = Router::new().route("/{*path}", post(take)).with_state(shared.clone());
        Ok(Self { served: Served::start(app).await?, shared })
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        self.served.url(path)
    }

    /// Answers the next requests with these statuses.
    pub fn answer(&self, statuses: &[u16]) {
        if let Ok(mut s) = self.shared.statuses.lock() {
            s.extend(statuses);
        }
    }

    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().map(|r| r.clone()).unwrap_or_default()
    }
}
