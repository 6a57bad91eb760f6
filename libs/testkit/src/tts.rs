//! Text-to-speech services for tests, on one loopback server: OpenAI's `POST
//! /v1/audio/speech`, ElevenLabs' `POST /elevenlabs/v1/text-to-speech/{voice_id}` and Edge's
//! read-aloud WebSocket at `/edge` (its `speech.config` and SSML messages, `turn.start`,
//! binary audio frames with their header-length prefix, `turn.end`). The "audio" carries the
//! right container header (OGG with an Opus head, or MP3's ID3 when Edge is asked for MP3)
//! followed by the words spoken, so a test can tell what was said. Text containing `CRASH`
//! fails with 500 (OpenAI, ElevenLabs) or a closed socket (Edge). Every request is recorded.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, post};
use serde_json::Value;

use crate::served::Served;

/// One synthesis request.
#[derive(Debug, Clone)]
pub struct SpeechRequest {
    /// `openai`, `elevenlabs` or `edge`.
    pub service: &'static str,
    /// The words (Edge: the SSML's text, unescaped no further).
    pub text: String,
    /// OpenAI's body, ElevenLabs' body, or Edge's `{"voice", "rate", "format", "query"}`.
    pub detail: Value,
    pub key: Option<String>,
}

/// Audio as the tests' services make it: a container header, then the words.
pub fn fake_audio(ogg: bool, words: &str) -> Vec<u8> {
    let mut audio = if ogg {
        b"OggS\x00\x02\x00\x00OpusHead\x01\x01".to_vec()
    } else {
        b"ID3\x04\x00\x00\x00\x00\x00\x00".to_vec()
    };
    audio.extend_from_slice(words.as_bytes());
    audio
}

type Seen = Arc<Mutex<Vec<SpeechRequest>>>;

fn record(seen: &Seen, request: SpeechRequest) {
    if let Ok(mut all) = seen.lock() {
        all.push(request);
    }
}

async fn openai(State(seen): State<Seen>, headers: HeaderMap, axum::Json(body): axum::Json<Value>) -> Response {
    let text = body["input"].as_str().unwrap_or_default().to_owned();
    let key = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
    record(&seen, SpeechRequest { service: "openai", text: text.clone(), detail: body.clone(), key });
    if text.contains("CRASH") {
        return (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(serde_json::json!({"error": {"message": "boom"}})))
            .into_response();
    }
    fake_audio(body["response_format"] == "opus", &text).into_response()
}

async fn elevenlabs(
    State(seen): State<Seen>,
    Path(voice): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let text = body["text"].as_str().unwrap_or_default().to_owned();
    let key = headers.get("xi-api-key").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let detail = serde_json::json!({"voice_id": voice, "query": query, "body": body});
    record(&seen, SpeechRequest { service: "elevenlabs", text: text.clone(), detail, key });
    if text.contains("CRASH") {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    fake_audio(query.unwrap_or_default().contains("opus"), &text).into_response()
}

/// The value between `start` and the next `end` in `text`.
fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    text.split_once(start).and_then(|(_, rest)| rest.split_once(end)).map_or("", |(v, _)| v)
}

async fn edge(State(seen): State<Seen>, RawQuery(query): RawQuery, ws: WebSocketUpgrade) -> Response {
    ws.on_upgrade(move |socket| speak_edge(seen, query.unwrap_or_default(), socket))
}

async fn speak_edge(seen: Seen, query: String, mut socket: WebSocket) {
    let mut format = String::new();
    while let Some(Ok(message)) = socket.recv().await {
        let Message::Text(text) = message else { continue };
        let text = text.as_str();
        if text.contains("Path:speech.config") {
            format = between(text, "\"outputFormat\":\"", "\"").to_owned();
            continue;
        }
        if !text.contains("Path:ssml") {
            continue;
        }
        let words = between(text, "volume='+0%'>", "</prosody>").to_owned();
        let detail = serde_json::json!({
            "voice": between(text, "<voice name='", "'>"),
            "rate": between(text, "rate='", "'"),
            "format": format,
            "query": query,
        });
        record(&seen, SpeechRequest { service: "edge", text: words.clone(), detail, key: None });
        if words.contains("CRASH") {
            // As Edge answers a request it cannot speak: the socket closes with no audio.
            let _ = socket.send(Message::Close(None)).await;
            return;
        }
        let _ = socket.send(Message::Text("X-RequestId:1\r\nPath:turn.start\r\n\r\n{}".into())).await;
        let audio = fake_audio(format.contains("opus"), &words);
        for piece in audio.chunks(16) {
            let header = b"X-RequestId:1\r\nContent-Type:audio/mpeg\r\nPath:audio\r\n";
            let mut frame = (header.len() as u16).to_be_bytes().to_vec();
            frame.extend_from_slice(header);
            frame.extend_from_slice(piece);
            let _ = socket.send(Message::Binary(frame.into())).await;
        }
        let _ = socket.send(Message::Text("X-RequestId:1\r\nPath:turn.end\r\n\r\n{}".into())).await;
    }
}

/// A running server; stops when dropped.
pub struct SpeechApi {
    served: Served,
    seen: Seen,
}

impl SpeechApi {
    pub async fn start() -> std::io::Result<Self> {
        let seen: Seen = Arc::default();
        let app = Router::new()
            .route("/v1/audio/speech", post(openai))
            .route("/elevenlabs/v1/text-to-speech/{voice}", post(elevenlabs))
            .route("/edge", any(edge))
            .with_state(seen.clone());
        Ok(Self { served: Served::start(app).await?, seen })
    }

    /// `tts.openai_base_url`.
    pub fn openai_base_url(&self) -> String {
        self.served.url("/v1")
    }

    /// `tts.elevenlabs_base_url`.
    pub fn elevenlabs_base_url(&self) -> String {
        self.served.url("/elevenlabs")
    }

    /// `tts.edge_url`, with a client token as Edge's URL carries one.
    pub fn edge_url(&self) -> String {
        format!("ws://{}/edge?TrustedClientToken=TESTTOKEN", self.served.addr())
    }

    pub fn requests(&self) -> Vec<SpeechRequest> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}
