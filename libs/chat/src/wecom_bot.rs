//! The WeCom AI bot's long connection (智能机器人长连接): a WebSocket to WeCom on which every
//! frame is JSON `{cmd, headers: {req_id}, body}` and every request is acknowledged with
//! `{headers: {req_id}, errcode, errmsg}` under the same `req_id`. The bot subscribes with
//! its BotID and secret first; then it receives `aibot_msg_callback` frames and answers with
//! `aibot_respond_msg` under the message's `req_id`, or pushes with `aibot_send_msg`.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub const DEFAULT_URL: &str = "wss://openws.work.weixin.qq.com";
/// Longest text in one message (Markdown content).
pub const MAX_MESSAGE_CHARS: usize = 4_000;
/// How long WeCom has to acknowledge a request.
pub const ACK_TIMEOUT: Duration = Duration::from_secs(5);

pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

#[derive(Debug, thiserror::Error)]
pub enum BotError {
    /// WeCom answered the request with an error code.
    #[error("WeCom answered {code}: {message}")]
    Refused { code: i64, message: String },
    #[error("WeCom socket: {0}")]
    Transport(String),
}

/// A fresh request id (`<prefix>_<unique>`, as WeCom's SDK makes them).
pub fn req_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::now_v7().simple())
}

/// A request frame.
pub fn frame(cmd: &str, req_id: &str, body: Option<Value>) -> Value {
    let mut frame = json!({ "cmd": cmd, "headers": { "req_id": req_id } });
    if let Some(body) = body {
        frame["body"] = body;
    }
    frame
}

/// The outcome of an acknowledgement frame.
pub fn ack_result(frame: &Value) -> Result<(), BotError> {
    match frame["errcode"].as_i64().unwrap_or(0) {
        0 => Ok(()),
        code => Err(BotError::Refused { code, message: frame["errmsg"].as_str().unwrap_or_default().to_owned() }),
    }
}

/// A subscribed connection.
pub struct BotSocket {
    pub ws: Ws,
}

impl BotSocket {
    /// Connects to `url` and subscribes as the bot; WeCom's refusal is [`BotError::Refused`].
    pub async fn subscribe(url: &str, bot_id: &str, secret: &str) -> Result<Self, BotError> {
        let transport = |e: &dyn std::fmt::Display| BotError::Transport(e.to_string());
        let connect = tokio_tungstenite::connect_async_with_config(url, Some(crate::kept_socket::config()), false);
        let (mut ws, _) = tokio::time::timeout(Duration::from_secs(30), connect)
            .await
            .map_err(|_| BotError::Transport("connecting timed out".into()))?
            .map_err(|e| transport(&e))?;
        let id = req_id("aibot_subscribe");
        let hello = frame("aibot_subscribe", &id, Some(json!({ "bot_id": bot_id, "secret": secret })));
        ws.send(Message::Text(hello.to_string().into())).await.map_err(|e| transport(&e))?;
        let answer = async {
            while let Some(msg) = ws.next().await {
                match msg.map_err(|e| transport(&e))? {
                    Message::Text(text) => {
                        let Ok(frame) = serde_json::from_str::<Value>(&text) else { continue };
                        if frame["headers"]["req_id"] == id.as_str() {
                            return ack_result(&frame);
                        }
                    }
                    Message::Close(_) => break,
                    _ => {}
                }
            }
            Err(BotError::Transport("WeCom closed the socket before answering the subscription".into()))
        };
        tokio::time::timeout(ACK_TIMEOUT * 2, answer)
            .await
            .map_err(|_| BotError::Transport("WeCom did not answer the subscription".into()))??;
        Ok(Self { ws })
    }

    /// Closes the connection politely.
    pub async fn close(mut self) {
        let _ = self.ws.close(None).await;
    }
}

/// Media WeCom hands the bot (an `image` or `file` with its `aeskey`) is encrypted:
/// AES-256-CBC with the key Base64-decoded from `aeskey`, the IV its first 16 bytes, and
/// PKCS#7 padding to 32-byte blocks.
pub fn decrypt_media(aeskey: &str, mut data: Vec<u8>) -> Result<Vec<u8>, BotError> {
    use cbc::cipher::{BlockDecryptMut, KeyIvInit, block_padding::NoPadding};
    let bad = |why: &str| BotError::Transport(format!("cannot decrypt the media: {why}"));
    let key = media_key(aeskey).ok_or_else(|| bad("the key is not 32 bytes of base64"))?;
    if data.is_empty() || !data.len().is_multiple_of(16) {
        return Err(bad("not whole blocks"));
    }
    let iv: [u8; 16] = key[..16].try_into().map_err(|_| bad("no IV"))?;
    cbc::Decryptor::<aes::Aes256>::new(&key.into(), &iv.into())
        .decrypt_padded_mut::<NoPadding>(&mut data)
        .map_err(|_| bad("the cipher refuses it"))?;
    let pad = usize::from(*data.last().ok_or_else(|| bad("empty"))?);
    if pad == 0 || pad > 32 || pad > data.len() {
        return Err(bad("bad padding"));
    }
    data.truncate(data.len() - pad);
    Ok(data)
}

/// Encrypts media the way WeCom does (for tests and emulators).
pub fn encrypt_media(aeskey: &str, plain: &[u8]) -> Option<Vec<u8>> {
    use cbc::cipher::{BlockEncryptMut, KeyIvInit, block_padding::NoPadding};
    let key = media_key(aeskey)?;
    let iv: [u8; 16] = key[..16].try_into().ok()?;
    let pad = 32 - plain.len() % 32;
    let mut data = plain.to_vec();
    data.extend(std::iter::repeat_n(u8::try_from(pad).ok()?, pad));
    let len = data.len();
    cbc::Encryptor::<aes::Aes256>::new(&key.into(), &iv.into()).encrypt_padded_mut::<NoPadding>(&mut data, len).ok()?;
    Some(data)
}

fn media_key(aeskey: &str) -> Option<[u8; 32]> {
    use base64::Engine;
    crate::wecom::lenient().decode(aeskey.trim()).ok()?.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_round_trips_with_wecoms_padding() {
        let key = "kWxPEV2UEDyxWpmPdKC3F4dgPDmOvfKX1HGnEUDS1aQ";
        for len in [0usize, 1, 31, 32, 33, 1000] {
            let plain: Vec<u8> = (0..len).map(|i| u8::try_from(i % 251).unwrap_or(0)).collect();
            let sealed = encrypt_media(key, &plain).unwrap();
            assert_eq!(sealed.len() % 32, 0);
            assert_eq!(decrypt_media(key, sealed).unwrap(), plain);
        }
        assert!(decrypt_media("short", vec![0; 32]).is_err());
        assert!(decrypt_media(key, vec![1, 2, 3]).is_err());
    }

    #[test]
    fn acknowledgements_carry_the_outcome() {
        assert!(ack_result(&json!({"headers": {"req_id": "x"}, "errcode": 0, "errmsg": "ok"})).is_ok());
        let refused = ack_result(&json!({"headers": {"req_id": "x"}, "errcode": 853000, "errmsg": "invalid bot_id"}));
        assert!(matches!(refused, Err(BotError::Refused { code: 853000, .. })));
        let ping = frame("ping", "ping_1", None);
        assert_eq!(ping, json!({"cmd": "ping", "headers": {"req_id": "ping_1"}}));
    }
}
