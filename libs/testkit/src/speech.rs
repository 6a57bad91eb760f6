//! An OpenAI-compatible speech-to-text server for tests: `POST /v1/audio/transcriptions`
//! (multipart `file`, `model`) answers `{"text": ...}`. The "recording" says what it holds:
//! `SPEECH:<words>` is heard as the words, `SILENCE` as Whisper hears silence ("Thank you."),
//! `BROKEN` makes the server fail with 500. Every request is recorded. The answer carries the
//! billed duration as OpenAI's does (`usage: {"type": "duration", "seconds": N}`): a second a
//! word heard, two for silence.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::json;

use crate::served::Served;

/// One transcription request.
#[derive(Debug, Clone)]
pub struct Transcription {
    pub model: String,
    pub file_name: Option<String>,
    pub content_type: Option<String>,
    pub authorization: Option<String>,
    pub bytes: usize,
}

/// A running server; stops when dropped.
pub struct SpeechToText {
    served: Served,
    seen: Arc<Mutex<Vec<Transcription>>>,
}

async fn transcribe(State(seen): State<Arc<Mutex<Vec<Transcription>>>>, headers: HeaderMap, body: Bytes) -> Response {
    let content_type = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let Some(parts) = crate::multipart::parse(content_type, &body) else {
        return (StatusCode::BAD_REQUEST, axum::Json(json!({"error": {"message": "not multipart"}}))).into_response();
    };
    let field = |name: &str| parts.iter().find(|p| p.name == name);
    let (Some(file), Some(model)) = (field("file"), field("model")) else {
        return (StatusCode::BAD_REQUEST, axum::Json(json!({"error": {"message": "file and model are required"}})))
            .into_response();
    };
    if let Ok(mut seen) = seen.lock() {
        seen.push(Transcription {
            model: String::from_utf8_lossy(&model.data).into_owned(),
            file_name: file.filename.clone(),
            content_type: file.content_type.clone(),
            authorization: headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned),
            bytes: file.data.len(),
        });
    }
    let audio = String::from_utf8_lossy(&file.data).into_owned();
    let (text, seconds) = match audio.as_str() {
        "BROKEN" => return StatusCode::INTERNAL_SERVER_ERROR.into_response(),
        "SILENCE" => ("Thank you.".to_owned(), 2),
        other => {
            let words = other.strip_prefix("SPEECH:").unwrap_or("").to_owned();
            let count = words.split_whitespace().count().max(1);
            (words, count)
        }
    };
    axum::Json(json!({ "text": text, "usage": {"type": "duration", "seconds": seconds} })).into_response()
}

impl SpeechToText {
    pub async fn start() -> std::io::Result<Self> {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new().route("/v1/audio/transcriptions", post(transcribe)).with_state(seen.clone());
        Ok(Self { served: Served::start(app).await?, seen })
    }

    /// The API base to configure (`http://127.0.0.1:PORT/v1`).
    pub fn base_url(&self) -> String {
        self.served.url("/v1")
    }

    pub fn requests(&self) -> Vec<Transcription> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}
