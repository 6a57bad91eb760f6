//! Image generation services for tests, on one loopback server: FAL.ai's synchronous API
//! (`POST /fal/<model>` answers `{"images":[{"url": ...}]}` with the file served under
//! `/files/`) and OpenAI's `POST /v1/images/generations` (`b64_json`). The images are real
//! PNGs whose size follows the request (`landscape_16_9` / `1536x1024` draw 96×64, square
//! 64×64, portrait 64×96: small, with the right shape). A prompt containing `FORBIDDEN` is
//! refused as a content-policy violation; a key of `revoked` gets 401; `elsewhere` as the
//! prompt makes FAL answer with a file on another (private) address. Every request is recorded.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use serde_json::{Value, json};

use crate::served::Served;

/// One generation request.
#[derive(Debug, Clone)]
pub struct ImageRequest {
    /// `fal` or `openai`.
    pub service: &'static str,
    /// The FAL model from the path, or the OpenAI body's `model`.
    pub model: String,
    pub authorization: Option<String>,
    pub body: Value,
}

#[derive(Default)]
struct Shared {
    requests: Mutex<Vec<ImageRequest>>,
    base: Mutex<String>,
}

/// A running server; stops when dropped.
pub struct ImageApi {
    served: Served,
    shared: Arc<Shared>,
}

fn shape(size: &str) -> (u32, u32) {
    match size {
        "landscape_16_9" | "1536x1024" => (96, 64),
        "portrait_16_9" | "1024x1536" => (64, 96),
        _ => (64, 64),
    }
}

fn picture(size: &str) -> Vec<u8> {
    let (w, h) = shape(size);
    crate::images::png(w, h).unwrap_or_default()
}

fn refused(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(json!({"error": {"message": message, "type": "invalid_request_error"}}))).into_response()
}

/// Records the request; the answer to give instead of an image, if any.
fn admit(shared: &Shared, service: &'static str, model: String, headers: &HeaderMap, body: &Value) -> Option<Response> {
    let authorization = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).map(str::to_owned);
    if let Ok(mut seen) = shared.requests.lock() {
        seen.push(ImageRequest { service, model, authorization: authorization.clone(), body: body.clone() });
    }
    if authorization.is_some_and(|a| a.ends_with(" revoked")) {
        return Some(refused(StatusCode::UNAUTHORIZED, "invalid API key"));
    }
    if body["prompt"].as_str().unwrap_or_default().contains("FORBIDDEN") {
        return Some(refused(StatusCode::BAD_REQUEST, "Your request was rejected by the safety system."));
    }
    None
}

async fn fal(
    State(shared): State<Arc<Shared>>,
    Path(model): Path<String>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    if let Some(answer) = admit(&shared, "fal", model, &headers, &body) {
        return answer;
    }
    let size = body["image_size"].as_str().unwrap_or("square_hd");
    let base = shared.base.lock().map(|b| b.clone()).unwrap_or_default();
    let url = if body["prompt"] == "elsewhere" {
        // Another loopback address: private, and not the service's host.
        base.replace("127.0.0.1", "127.0.0.2") + "/files/" + size
    } else {
        format!("{base}/files/{size}")
    };
    let (w, h) = shape(size);
    axum::Json(json!({"images": [{"url": url, "width": w, "height": h, "content_type": "image/png"}], "seed": 42}))
        .into_response()
}

async fn file(Path(size): Path<String>) -> Response {
    ([(header::CONTENT_TYPE, "image/png")], picture(&size)).into_response()
}

async fn openai(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let model = body["model"].as_str().unwrap_or_default().to_owned();
    if let Some(answer) = admit(&shared, "openai", model, &headers, &body) {
        return answer;
    }
    let image = picture(body["size"].as_str().unwrap_or("1024x1024"));
    let encoded = base64::engine::general_purpose::STANDARD.encode(image);
    axum::Json(json!({"created": 1, "data": [{"b64_json": encoded}], "usage": {"total_tokens": 0}})).into_response()
}

impl ImageApi {
    pub async fn start() -> std::io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/fal/{*model}", post(fal))
            .route("/files/{size}", get(file))
            .route("/v1/images/generations", post(openai))
            .with_state(shared.clone());
        Ok(Self { served: Served::start_linking_back(app, &shared.base).await?, shared })
    }

    /// FAL's base (`image_gen.fal_base_url`).
    pub fn fal_base_url(&self) -> String {
        self.served.url("/fal")
    }

    /// The OpenAI-compatible base (`image_gen.openai_base_url`).
    pub fn openai_base_url(&self) -> String {
        self.served.url("/v1")
    }

    pub fn requests(&self) -> Vec<ImageRequest> {
        self.shared.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}
