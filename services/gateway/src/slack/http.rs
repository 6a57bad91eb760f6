//! Slack's calls to us. A request counts only with a valid signature made in the last five
//! minutes; anything else is refused and nothing is stored. `url_verification` is answered
//! with its challenge. Slack expects an answer within 3 seconds and retries otherwise; a
//! retried event has the same `event_id` and is taken once.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use hermes_chat::slack::verify;
use hermes_core::Platform;
use hermes_store::Channel;

use crate::Gateway;

type Answer = (StatusCode, Json<Value>);

fn refuse(status: StatusCode, why: &str) -> Answer {
    (status, Json(json!({ "ok": false, "error": why })))
}

/// The answer to Slack once a message or press was taken in (or not: Slack sends it again).
fn taken(result: Result<(), crate::error::IngestError>, what: &str) -> Answer {
    match result {
        Ok(()) => (StatusCode::OK, Json(json!({ "ok": true }))),
        Err(e) => {
            tracing::warn!(error = %e, "cannot take a Slack {what} in");
            refuse(StatusCode::INTERNAL_SERVER_ERROR, "try again")
        }
    }
}

/// The channel, if the request is Slack's for it.
async fn verified(gw: &Gateway, id: &str, headers: &HeaderMap, body: &[u8]) -> Result<Channel, Answer> {
    let id: hermes_core::ChannelId = id.parse().map_err(|_| refuse(StatusCode::NOT_FOUND, "no such channel"))?;
    let channel = match gw.store.system().gateway_channel(id).await {
        Ok(c) if c.platform == Platform::Slack => c,
        Ok(_) | Err(hermes_store::StoreError::NotFound) => {
            return Err(refuse(StatusCode::NOT_FOUND, "no such channel"));
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the channel");
            return Err(refuse(StatusCode::INTERNAL_SERVER_ERROR, "try again"));
        }
    };
    let secret = channel
        .credentials(gw.secrets.as_ref())
        .ok()
        .and_then(|c| c["signing_secret"].as_str().map(str::to_owned))
        .unwrap_or_default();
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let (ts, sig) = (header("x-slack-request-timestamp"), header("x-slack-signature"));
    if secret.is_empty() || !verify(&secret, &ts, &sig, body, chrono::Utc::now().timestamp()) {
        metrics::counter!("hermes_gateway_rejected_total", "platform" => "slack").increment(1);
        return Err(refuse(StatusCode::UNAUTHORIZED, "bad signature"));
    }
    Ok(channel)
}

/// A request Slack signed for the channel its path names: every handler here takes one, so
/// none reads a body that is not Slack's.
pub struct FromSlack {
    channel: Channel,
    body: Bytes,
}

impl FromRequest<Arc<Gateway>> for FromSlack {
    type Rejection = Response;

    async fn from_request(req: Request, gw: &Arc<Gateway>) -> Result<Self, Response> {
        let (mut parts, body) = req.into_parts();
        let Path(id) = Path::<String>::from_request_parts(&mut parts, gw).await.map_err(IntoResponse::into_response)?;
        let headers = parts.headers.clone();
        let body =
            Bytes::from_request(Request::from_parts(parts, body), gw).await.map_err(IntoResponse::into_response)?;
        let channel = verified(gw, &id, &headers, &body).await.map_err(IntoResponse::into_response)?;
        Ok(Self { channel, body })
    }
}

pub async fn events(State(gw): State<Arc<Gateway>>, FromSlack { channel, body }: FromSlack) -> Answer {
    let Ok(envelope) = serde_json::from_slice::<Value>(&body) else {
        return refuse(StatusCode::BAD_REQUEST, "not JSON");
    };
    if envelope["type"] == "url_verification" {
        return (StatusCode::OK, Json(json!({ "challenge": envelope["challenge"] })));
    }
    let Some(msg) = super::event::parse(&envelope, channel.bot_username.as_deref()) else {
        return (StatusCode::OK, Json(json!({ "ok": true })));
    };
    taken(gw.take_in(&channel, msg, &envelope).await, "event")
}

pub async fn interactive(State(gw): State<Arc<Gateway>>, FromSlack { channel, body }: FromSlack) -> Answer {
    // The body is `payload=<url-encoded JSON>`.
    let payload = form_urlencoded::parse(&body)
        .find(|(k, _)| k == "payload")
        .and_then(|(_, v)| serde_json::from_str::<Value>(&v).ok());
    let Some(payload) = payload else { return refuse(StatusCode::BAD_REQUEST, "no payload") };
    let Some(press) = super::event::parse_press(&payload) else {
        return (StatusCode::OK, Json(json!({ "ok": true })));
    };
    taken(gw.press(&channel, press, &payload).await, "button press")
}

/// The `/hermes` slash command: `/hermes <question>` asks the agent in that conversation and
/// `/hermes new` (or any gateway command without its slash) runs that command. Slack wants
/// an answer within 3 seconds, so the reply comes later as a message.
pub async fn command(State(gw): State<Arc<Gateway>>, FromSlack { channel, body }: FromSlack) -> Answer {
    let form: std::collections::HashMap<String, String> = form_urlencoded::parse(&body).into_owned().collect();
    let Some(msg) = super::event::parse_command(&form) else {
        return refuse(StatusCode::BAD_REQUEST, "not a slash command");
    };
    let raw = json!(form);
    match gw.take_in(&channel, msg, &raw).await {
        Ok(()) => (StatusCode::OK, Json(json!({ "response_type": "ephemeral", "text": "On it…" }))),
        Err(e) => {
            tracing::warn!(error = %e, "cannot take a Slack command in");
            refuse(StatusCode::INTERNAL_SERVER_ERROR, "try again")
        }
    }
}
