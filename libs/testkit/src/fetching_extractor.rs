//! An extract service inside the cluster, as a self-hosted Firecrawl is: told a URL
//! (`POST /v1/scrape` or `/v2/scrape`), it fetches the page itself, following redirects, and
//! answers it as Markdown. With it, what an attacker needs to turn it inward: a page that
//! redirects wherever it is told ([`Redirector`]) and a [`Canary`] standing for what lives
//! inside (the cloud metadata address, an in-cluster service), which counts who reached it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, post};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What the canary answers: it must never reach a model.
pub const CANARY_SECRET: &str = "AccessKeyId: ASIA-CANARY-INSIDE-THE-CLUSTER";

/// Redirects the service follows (as browsers and Firecrawl's fetchers do).
const MAX_HOPS: usize = 5;

/// A server inside: answers anything with [`CANARY_SECRET`] and counts the requests.
pub struct Canary {
    addr: SocketAddr,
    hits: Arc<AtomicUsize>,
}

impl Canary {
    pub async fn start() -> std::io::Result<Self> {
        let hits = Arc::new(AtomicUsize::new(0));
        let counted = hits.clone();
        let app = Router::new().fallback(any(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            async { CANARY_SECRET }
        }));
        Ok(Self { addr: crate::serve_loopback(app).await?, hits })
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Requests that reached it.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// A page that answers every path with `302 Found` to one target.
pub struct Redirector {
    addr: SocketAddr,
}

impl Redirector {
    pub async fn start(target: &str) -> std::io::Result<Self> {
        let target = target.to_owned();
        let app = Router::new().fallback(any(move || {
            let target = target.clone();
            async move { (StatusCode::FOUND, [(header::LOCATION, target)]).into_response() }
        }));
        Ok(Self { addr: crate::serve_loopback(app).await? })
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// `127.0.0.1:PORT`, as `web.allow_private_hosts` lists it (so the page passes for public).
    pub fn host(&self) -> String {
        self.addr.to_string()
    }
}

/// The self-hosted extract service; records every URL it was told to fetch.
pub struct FetchingExtractor {
    addr: SocketAddr,
    asked: Arc<Mutex<Vec<String>>>,
}

impl FetchingExtractor {
    pub async fn start() -> std::io::Result<Self> {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let app =
            Router::new().route("/v1/scrape", post(scrape)).route("/v2/scrape", post(scrape)).with_state(asked.clone());
        Ok(Self { addr: crate::serve_loopback(app).await?, asked })
    }

    /// Its base URL, as `web.firecrawl_api_url` takes it.
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The URLs it was told to fetch.
    pub fn asked(&self) -> Vec<String> {
        self.asked.lock().map(|a| a.clone()).unwrap_or_default()
    }
}

async fn scrape(State(asked): State<Arc<Mutex<Vec<String>>>>, axum::Json(body): axum::Json<Value>) -> Response {
    let url = body.get("url").and_then(Value::as_str).unwrap_or_default().to_owned();
    if let Ok(mut asked) = asked.lock() {
        asked.push(url.clone());
    }
    match fetch_following_redirects(&url).await {
        Ok(page) => axum::Json(json!({
            "success": true,
            "data": { "markdown": page, "metadata": { "title": "fetched", "sourceURL": url } }
        }))
        .into_response(),
        Err(e) => (StatusCode::BAD_GATEWAY, axum::Json(json!({ "success": false, "error": e }))).into_response(),
    }
}

/// GETs a plain-http `url` and follows `Location` answers, trusting every address, as a
/// fetcher that does not know it sits inside a cluster does.
async fn fetch_following_redirects(url: &str) -> Result<String, String> {
    let mut uri: Uri = url.parse().map_err(|_| format!("{url} is not a URL"))?;
    for _ in 0..=MAX_HOPS {
        let authority = uri.authority().ok_or("no host")?.clone();
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let mut stream = tokio::net::TcpStream::connect((authority.host(), authority.port_u16().unwrap_or(80)))
            .await
            .map_err(|e| e.to_string())?;
        let request = format!("GET {path} HTTP/1.1\r\nhost: {authority}\r\nconnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.map_err(|e| e.to_string())?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.map_err(|e| e.to_string())?;
        let answer = String::from_utf8_lossy(&answer).into_owned();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        let redirected = head.split(' ').nth(1).is_some_and(|status| status.starts_with('3'));
        let location = head.lines().find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("location").then(|| value.trim().to_owned())
        });
        match (redirected, location) {
            (true, Some(next)) => {
                let next = if next.starts_with('/') { format!("http://{authority}{next}") } else { next };
                uri = next.parse().map_err(|_| format!("{next} is not a URL"))?;
            }
            _ => return Ok(body.to_owned()),
        }
    }
    Err("too many redirects".into())
}
