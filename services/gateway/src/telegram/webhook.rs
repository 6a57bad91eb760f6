//! `POST /telegram/{channel}`: Telegram's webhook. The request is Telegram's only if it
//! carries the channel's secret in `X-Telegram-Bot-Api-Secret-Token` (compared in constant
//! time); anything else is refused and nothing is stored. A stored update answers 200 at once;
//! a storage failure answers 500 so Telegram delivers it again.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use hermes_core::{ChannelMode, Platform};

use crate::Gateway;

const SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";

/// Equal strings, compared without an early exit.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub async fn receive(
    State(gw): State<Arc<Gateway>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, Json<Value>) {
    let refuse = |status: StatusCode, why: &str| (status, Json(json!({ "ok": false, "description": why })));
    let Ok(id) = id.parse::<hermes_core::ChannelId>() else { return refuse(StatusCode::NOT_FOUND, "no such channel") };
    let channel = match gw.store.system().gateway_channel(id).await {
        Ok(c) if c.platform == Platform::Telegram && c.mode == ChannelMode::Webhook => c,
        Ok(_) | Err(hermes_store::StoreError::NotFound) => return refuse(StatusCode::NOT_FOUND, "no such channel"),
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the channel");
            return refuse(StatusCode::INTERNAL_SERVER_ERROR, "try again");
        }
    };
    let secret = headers.get(SECRET_HEADER).map(|v| v.as_bytes()).unwrap_or_default();
    if !same_secret(secret, channel.webhook_secret.as_bytes()) {
        metrics::counter!("hermes_gateway_rejected_total", "platform" => "telegram").increment(1);
        return refuse(StatusCode::UNAUTHORIZED, "bad secret token");
    }
    let Ok(update) = serde_json::from_slice::<Value>(&body) else {
        // Telegram never sends this; answering 200 stops a broken update from being repeated.
        return (StatusCode::OK, Json(json!({ "ok": true })));
    };
    let taken = if let Some(press) = super::update::parse_button(&update) {
        gw.press(&channel, press, &update).await
    } else if let Some(msg) = super::update::parse(&update, channel.bot_username.as_deref()) {
        gw.take_in(&channel, msg, &update).await
    } else {
        Ok(())
    };
    match taken {
        Ok(()) => (StatusCode::OK, Json(json!({ "ok": true }))),
        Err(e) => {
            tracing::warn!(error = %e, "cannot take a Telegram update in; Telegram will send it again");
            refuse(StatusCode::INTERNAL_SERVER_ERROR, "try again")
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn secrets_must_match_exactly() {
        assert!(super::same_secret(b"abc_DEF-123", b"abc_DEF-123"));
        assert!(!super::same_secret(b"abc_DEF-123", b"abc_DEF-124"));
        assert!(!super::same_secret(b"", b"x"));
        assert!(!super::same_secret(b"abc", b"abcd"));
    }
}
