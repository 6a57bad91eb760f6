//! Slack Socket Mode: a connection this pod keeps to Slack for an app, instead of a public
//! Events API URL. One pod per app holds it ([`crate::leased`]); the address comes from
//! `apps.connections.open` with the app-level token, fresh for every connection. Each envelope
//! carries what the Events API would have posted and is acknowledged by its `envelope_id`
//! only once it is stored, so an envelope that was not taken in is delivered again (and one
//! delivered twice is recognised by its event id). Slack asks for a reconnect every few hours
//! (`disconnect`); failed connections back off 2, 5, 10, 30, then 60 s.

use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

use hermes_chat::slack::SlackApi;
use hermes_core::{ChannelMode, ChannelStatus, Platform};
use hermes_store::Channel;

use crate::Gateway;
use crate::leased::{End, keep_connected};

/// Keeps the sockets of the Slack apps this pod holds the lease of, until `shutdown`.
pub async fn run(gw: Arc<Gateway>, shutdown: CancellationToken) {
    crate::leased::run(gw, shutdown, Platform::Slack, ChannelMode::Socket, |gw, channel, stop| async move {
        serve(&gw, &channel, &stop).await;
    })
    .await;
}

async fn serve(gw: &Gateway, channel: &Channel, stop: &CancellationToken) {
    keep_connected(gw, channel, stop, || connection(gw, channel, stop)).await;
}

/// One connection: how it ended, and whether it opened.
async fn connection(gw: &Gateway, channel: &Channel, stop: &CancellationToken) -> (End, bool) {
    let mut opened = false;
    let end = connected(gw, channel, stop, &mut opened).await;
    (end, opened)
}

/// The socket of one connection, as `connect_async_with_config` opens it.
type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connected(gw: &Gateway, channel: &Channel, stop: &CancellationToken, opened: &mut bool) -> End {
    let mut ws = match open(gw, channel).await {
        Ok(ws) => ws,
        Err(end) => return end,
    };
    // A connection that hears nothing for three pings (not even Slack's own) is dead.
    let every = Duration::from_secs(gw.config.gateway.socket_heartbeat_seconds.max(1));
    let mut heard = Instant::now();
    let mut ping = tokio::time::interval(every);
    loop {
        let frame = tokio::select! {
            () = stop.cancelled() => {
                let _ = ws.close(None).await;
                return End::Again;
            }
            _ = ping.tick() => {
                if heard.elapsed() > every * 3 {
                    return End::Failed("Slack went silent".into());
                }
                if let Err(e) = ws.send(Message::Ping(Vec::new().into())).await {
                    return End::Failed(e.to_string());
                }
                continue;
            }
            frame = ws.next() => frame,
        };
        let text = match frame {
            None => return End::Failed("Slack closed the socket".into()),
            Some(Err(e)) => return End::Failed(e.to_string()),
            Some(Ok(Message::Text(text))) => text,
            Some(Ok(Message::Close(_))) => return End::Failed("Slack closed the socket".into()),
            Some(Ok(_)) => {
                heard = Instant::now();
                continue;
            }
        };
        heard = Instant::now();
        // Boxed: a waiting socket's task then holds only the socket, not the state of taking
        // a message in (tens of KB a bot).
        if let Some(end) = Box::pin(on_envelope(gw, channel, &mut ws, &text, opened)).await {
            return end;
        }
    }
}

/// Opens a socket at a fresh address from `apps.connections.open`, with the app-level token.
async fn open(gw: &Gateway, channel: &Channel) -> Result<Socket, End> {
    let token = match channel.credentials(gw.secrets.as_ref()) {
        Ok(c) => c["app_token"].as_str().unwrap_or_default().to_owned(),
        Err(e) => return Err(End::Refused(e.to_string())),
    };
    if token.is_empty() {
        return Err(End::Refused("the channel has no app-level token".into()));
    }
    let url = match SlackApi::new(gw.http.clone(), &channel.api_base, &token).open_socket().await {
        Ok(url) => url,
        Err(e) if e.is_permanent() => return Err(End::Refused(e.to_string())),
        Err(e) => return Err(End::Failed(e.to_string())),
    };
    let connect =
        tokio_tungstenite::connect_async_with_config(url.as_str(), Some(hermes_chat::kept_socket::config()), false);
    match tokio::time::timeout(Duration::from_secs(30), connect).await {
        Ok(Ok((ws, _))) => Ok(ws),
        Ok(Err(e)) => Err(End::Failed(e.to_string())),
        Err(_) => Err(End::Failed("connecting timed out".into())),
    }
}

/// One text frame: notes Slack's hello, ends on its disconnect, and takes an envelope in
/// before acknowledging it. `Some` ends the connection.
async fn on_envelope(gw: &Gateway, channel: &Channel, ws: &mut Socket, text: &str, opened: &mut bool) -> Option<End> {
    let Ok(envelope) = serde_json::from_str::<Value>(text) else { return None };
    match envelope["type"].as_str() {
        Some("hello") => {
            *opened = true;
            tracing::info!(channel.id = %channel.id, "Slack socket open");
        }
        Some("disconnect") => {
            tracing::info!(channel.id = %channel.id, reason = %envelope["reason"], "Slack asks for a new socket");
            return Some(End::Again);
        }
        _ => {}
    }
    let envelope_id = envelope["envelope_id"].as_str()?;
    // The channel as it is now: changed policies apply at once.
    let current = match gw.store.system().gateway_channel(channel.id).await {
        Ok(c) if c.status == ChannelStatus::Active && c.mode == ChannelMode::Socket => c,
        Ok(_) | Err(hermes_store::StoreError::NotFound) => return Some(End::Gone),
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the channel; Slack will deliver the envelope again");
            return None;
        }
    };
    match take(gw, &current, &envelope).await {
        Ok(response) => {
            let mut ack = json!({ "envelope_id": envelope_id });
            if let Some(payload) = response
                && envelope["accepts_response_payload"].as_bool() == Some(true)
            {
                ack["payload"] = payload;
            }
            if let Err(e) = ws.send(Message::Text(ack.to_string().into())).await {
                return Some(End::Failed(e.to_string()));
            }
        }
        Err(e) => tracing::warn!(error = %e, "cannot take a Slack envelope in; it comes again"),
    }
    None
}

/// Takes one envelope in; what to answer Slack with, if anything.
async fn take(gw: &Gateway, channel: &Channel, envelope: &Value) -> Result<Option<Value>, crate::error::IngestError> {
    let payload = &envelope["payload"];
    match envelope["type"].as_str() {
        Some("events_api") => {
            if let Some(msg) = super::event::parse(payload, channel.bot_username.as_deref()) {
                gw.take_in(channel, msg, payload).await?;
            }
            Ok(None)
        }
        Some("interactive") => {
            if let Some(press) = super::event::parse_press(payload) {
                gw.press(channel, press, payload).await?;
            }
            Ok(None)
        }
        Some("slash_commands") => {
            let form: std::collections::HashMap<String, String> = payload
                .as_object()
                .map(|o| o.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned()))).collect())
                .unwrap_or_default();
            let Some(msg) = super::event::parse_command(&form) else { return Ok(None) };
            gw.take_in(channel, msg, payload).await?;
            Ok(Some(json!({ "response_type": "ephemeral", "text": "On it…" })))
        }
        _ => Ok(None),
    }
}
