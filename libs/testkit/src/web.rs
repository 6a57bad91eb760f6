//! The web as tests see it: one loopback server with a small site of real pages (an article
//! among navigation and footer, a long read, a PDF, plain text, a page only JavaScript fills,
//! an endless body, a redirect to the cloud metadata address) and scripted search and
//! extract services under their own prefixes, speaking SearXNG's, Brave Search's, Tavily's,
//! Exa's and Firecrawl's APIs. Every service request is recorded (path, query, headers, body)
//! so a test can see which key went where. A key of `revoked` is refused with 401.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use serde_json::{Value, json};

use crate::served::Served;

/// One request a service got.
#[derive(Debug, Clone)]
pub struct ServiceCall {
    /// `searxng`, `brave`, `tavily`, `exa` or `firecrawl`.
    pub service: String,
    pub path: String,
    pub query: HashMap<String, String>,
    pub headers: HashMap<String, String>,
    pub body: Value,
}

#[derive(Default)]
struct Shared {
    calls: Mutex<Vec<ServiceCall>>,
    base: Mutex<String>,
}

/// A running site and services; stops when dropped.
pub struct WebWorld {
    served: Served,
    shared: Arc<Shared>,
}

/// Paragraphs of the long read (each about 150 characters: some 60,000 in all).
pub const LONG_PARAGRAPHS: usize = 400;

impl WebWorld {
    pub async fn start() -> std::io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/site/{page}", get(site))
            .route("/{service}/{*rest}", any(service))
            .with_state(shared.clone());
        Ok(Self { served: Served::start_linking_back(app, &shared.base).await?, shared })
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        self.served.url(path)
    }

    /// A page of the site: `agents-news`, `long`, `report.pdf`, `notes.txt`, `app`, `huge`,
    /// `hop` (redirects to `agents-news`), `to-private` (redirects to 169.254.169.254).
    pub fn page(&self, name: &str) -> String {
        self.url(&format!("/site/{name}"))
    }

    /// A service's base URL: `searxng`, `brave`, `tavily`, `exa`, `firecrawl`.
    pub fn service(&self, name: &str) -> String {
        self.url(&format!("/{name}"))
    }

    /// `127.0.0.1:PORT`, as `web.allow_private_hosts` lists it.
    pub fn host(&self) -> String {
        self.served.addr().to_string()
    }

    pub fn calls(&self) -> Vec<ServiceCall> {
        self.shared.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }
}

fn html(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title></head><body>\
         <nav><a href=\"/\">Home</a> | <a href=\"/world\">World</a> | <a href=\"/login\">Sign in</a></nav>\
         {body}<footer><p>© The Loopback Times. Cookie preferences. Subscribe for 1 € a week.</p></footer></body></html>"
    )
}

fn agents_news() -> String {
    html(
        "Agents go to work - The Loopback Times",
        "<article><h1>Agents go to work</h1>\
         <p>Teams now run <strong>autonomous agents</strong> in the cloud, each in its own sandbox, with quotas and an \
         audit trail. The change came quickly, and operators, who once ran one agent on a laptop, now run hundreds.</p>\
         <h2>Three things that changed</h2>\
         <ol><li>Agents search the web on a schedule.</li><li>They write their own skills.</li>\
         <li>They report to team chats every morning.</li></ol>\
         <p>More in <a href=\"/site/long\">the long read</a>, where the numbers are, and in the report, which has the \
         charts, the sources, and the method.</p></article>",
    )
}

/// Paragraph `n` of the long read.
pub fn long_paragraph(n: usize) -> String {
    format!(
        "Paragraph {n:03} of the long read: agents, sandboxes and quotas, told once more in plain words so that the page is long."
    )
}

fn long_read() -> String {
    let paragraphs: String = (1..=LONG_PARAGRAPHS).map(|n| format!("<p>{}</p>", long_paragraph(n))).collect();
    html("The long read", &format!("<article><h1>The long read</h1>{paragraphs}</article>"))
}

/// A one-page PDF whose text is `lines` (Helvetica, one line each).
pub fn pdf(lines: &[&str]) -> Vec<u8> {
    let mut stream = String::from("BT /F1 12 Tf 72 720 Td 16 TL\n");
    for line in lines {
        stream.push_str(&format!("({}) Tj T*\n", line.replace('\\', "\\\\").replace('(', "\\(").replace(')', "\\)")));
    }
    stream.push_str("ET");
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_owned(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>"
            .to_owned(),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".to_owned(),
        format!("<< /Length {} >>\nstream\n{stream}\nendstream", stream.len()),
    ];
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{object}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1).as_bytes(),
    );
    out
}

async fn site(Path(page): Path<String>) -> Response {
    let typed = |kind: &'static str, body: Body| ([(header::CONTENT_TYPE, kind)], body).into_response();
    match page.as_str() {
        "agents-news" => typed("text/html; charset=utf-8", agents_news().into()),
        "long" => typed("text/html; charset=utf-8", long_read().into()),
        "report.pdf" => typed(
            "application/pdf",
            pdf(&["Quarterly agent report", "Sandboxes started: 1200", "Median cold start: 150 ms"]).into(),
        ),
        "notes.txt" => typed("text/plain", "plain notes\nsecond line\n".into()),
        "app" => typed(
            "text/html",
            "<!doctype html><html><head><title>App</title></head><body><div id=\"root\"></div>\
             <script>document.getElementById('root').textContent = 'rendered by JavaScript';</script></body></html>"
                .into(),
        ),
        "image.png" => typed("image/png", b"\x89PNG\r\n\x1a\n".to_vec().into()),
        // A real photo, larger than a model's embed budget.
        "chart.jpg" => match crate::images::jpeg(2400, 1600) {
            Ok(bytes) => typed("image/jpeg", bytes.into()),
            Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        },
        // An endless page: 64 KiB chunks, no length, until the reader gives up.
        "huge" => {
            let chunk = Bytes::from(format!("<p>{}</p>", "a".repeat(64 * 1024 - 7)));
            let chunks = futures_util::stream::repeat_with(move || Ok::<_, std::io::Error>(chunk.clone()));
            typed("text/html", Body::from_stream(chunks))
        }
        "hop" => (StatusCode::FOUND, [(header::LOCATION, "/site/agents-news")]).into_response(),
        "to-private" => {
            (StatusCode::FOUND, [(header::LOCATION, "http://169.254.169.254/latest/meta-data/")]).into_response()
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

/// The three hits every search answers, in SearXNG's order (not by score).
fn hits(base: &str, query: &str) -> Vec<(String, String, String, f64)> {
    vec![
        ("Quarterly agent report (PDF)".into(), format!("{base}/site/report.pdf"), "The figures.".into(), 0.5),
        ("Agents go to work".into(), format!("{base}/site/agents-news"), format!("News about {query}."), 2.0),
        ("The long read".into(), format!("{base}/site/long"), "All of it.".into(), 1.0),
    ]
}

/// What a scripted extract service says a page holds.
fn extracted(service: &str, url: &str) -> Value {
    json!({ "url": url, "title": format!("{service} title"), "content": format!("# Extracted by {service}\n\nThe page at {url}.") })
}

fn key_of(service: &str, headers: &HeaderMap) -> Option<String> {
    let header = match service {
        "brave" => "x-subscription-token",
        "exa" => "x-api-key",
        _ => "authorization",
    };
    headers.get(header).and_then(|v| v.to_str().ok()).map(|v| v.trim_start_matches("Bearer ").to_owned())
}

async fn service(
    State(shared): State<Arc<Shared>>,
    Path((service, rest)): Path<(String, String)>,
    method: Method,
    uri: Uri,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let recorded = ServiceCall {
        service: service.clone(),
        path: uri.path().to_owned(),
        query: query.clone(),
        headers: headers
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or_default().to_owned()))
            .collect(),
        body: body.clone(),
    };
    if let Ok(mut calls) = shared.calls.lock() {
        calls.push(recorded);
    }
    let base = shared.base.lock().map(|b| b.clone()).unwrap_or_default();
    let key = key_of(&service, &headers);
    let needs_key = matches!(service.as_str(), "brave" | "tavily" | "exa");
    if key.as_deref() == Some("revoked") || (needs_key && key.is_none()) {
        return (StatusCode::UNAUTHORIZED, axum::Json(json!({"error": "invalid api key"}))).into_response();
    }
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    let urls = |v: &Value| -> Vec<String> {
        v.get("urls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    };
    let answer = match (service.as_str(), method.as_str(), rest.as_str()) {
        ("searxng", "GET", "search") => {
            if query.get("format").map(String::as_str) != Some("json") {
                return StatusCode::FORBIDDEN.into_response();
            }
            let q = query.get("q").cloned().unwrap_or_default();
            let results: Vec<Value> = hits(&base, &q)
                .into_iter()
                .map(|(title, url, content, score)| json!({"title": title, "url": url, "content": content, "score": score}))
                .collect();
            json!({ "query": q, "results": results })
        }
        ("brave", "GET", "res/v1/web/search") => {
            let q = query.get("q").cloned().unwrap_or_default();
            let results: Vec<Value> = hits(&base, &q)
                .into_iter()
                .map(|(title, url, description, _)| json!({"title": title, "url": url, "description": description}))
                .collect();
            json!({ "web": { "results": results } })
        }
        ("tavily", "POST", "search") => {
            let results: Vec<Value> = hits(&base, &text(&body, "query"))
                .into_iter()
                .map(|(title, url, content, score)| json!({"title": title, "url": url, "content": content, "score": score}))
                .collect();
            json!({ "results": results })
        }
        ("tavily", "POST", "extract") => {
            let (good, bad): (Vec<String>, Vec<String>) = urls(&body).into_iter().partition(|u| !u.contains("missing"));
            let results: Vec<Value> = good
                .iter()
                .map(|u| {
                    let page = extracted("tavily", u);
                    json!({"url": u, "raw_content": page["content"]})
                })
                .collect();
            let failed: Vec<Value> = bad.iter().map(|u| json!({"url": u, "error": "not found"})).collect();
            json!({ "results": results, "failed_results": failed })
        }
        ("exa", "POST", "search") => {
            let results: Vec<Value> = hits(&base, &text(&body, "query"))
                .into_iter()
                .map(|(title, url, content, _)| json!({"title": title, "url": url, "highlights": [content, "(highlight)"]}))
                .collect();
            json!({ "results": results })
        }
        ("exa", "POST", "contents") => {
            let results: Vec<Value> = urls(&body)
                .iter()
                .map(|u| {
                    let page = extracted("exa", u);
                    json!({"url": u, "title": page["title"], "text": page["content"]})
                })
                .collect();
            json!({ "results": results })
        }
        ("firecrawl", "POST", "v2/search") => {
            let web: Vec<Value> = hits(&base, &text(&body, "query"))
                .into_iter()
                .map(|(title, url, description, _)| json!({"title": title, "url": url, "description": description}))
                .collect();
            json!({ "success": true, "data": { "web": web } })
        }
        ("firecrawl", "POST", "v2/scrape") => {
            let url = text(&body, "url");
            let page = extracted("firecrawl", &url);
            json!({ "success": true, "data": { "markdown": page["content"], "metadata": { "title": page["title"], "sourceURL": url } } })
        }
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    axum::Json(answer).into_response()
}
