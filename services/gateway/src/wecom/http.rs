//! WeCom's calls to us. Every one is signed (`msg_signature` over token, timestamp, nonce and
//! the ciphertext) and encrypted; anything that does not open is refused and nothing is stored.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;

use hermes_chat::wecom::{WecomCrypt, xml_field};
use hermes_core::Platform;
use hermes_store::Channel;

use crate::Gateway;
use crate::incoming::{ChatKind, Incoming, IncomingFile};

/// The query's parameters, percent-decoded once. WeCom's base64 values may hold a literal
/// `+`, which a form decoder would wrongly turn into a space.
fn query(raw: Option<&str>) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for pair in raw.unwrap_or_default().split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        out.insert(k.to_owned(), percent_decode(v));
    }
    out
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push(u8::try_from(h * 16 + l).unwrap_or(b'?'));
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One of WeCom's calls to a channel: the channel, its callback keys and the call's query.
struct Callback {
    channel: Channel,
    crypt: WecomCrypt,
    query: HashMap<String, String>,
}

impl Callback {
    /// The call to channel `id` with the raw query `raw`; the status to answer when there is
    /// no such channel or its keys cannot be read.
    async fn of(gw: &Gateway, id: &str, raw: Option<&str>) -> Result<Self, (StatusCode, String)> {
        let (channel, crypt) = keys(gw, id).await.map_err(|status| (status, String::new()))?;
        Ok(Self { channel, crypt, query: query(raw) })
    }

    /// A query parameter (empty when missing).
    fn get(&self, key: &str) -> &str {
        self.query.get(key).map(String::as_str).unwrap_or_default()
    }
}

/// The channel and its callback keys.
async fn keys(gw: &Gateway, id: &str) -> Result<(Channel, WecomCrypt), StatusCode> {
    let id: hermes_core::ChannelId = id.parse().map_err(|_| StatusCode::NOT_FOUND)?;
    let channel = match gw.store.system().gateway_channel(id).await {
        Ok(c) if c.platform == Platform::Wecom => c,
        Ok(_) | Err(hermes_store::StoreError::NotFound) => return Err(StatusCode::NOT_FOUND),
        Err(_) => return Err(StatusCode::INTERNAL_SERVER_ERROR),
    };
    let creds = channel.credentials(gw.secrets.as_ref()).map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?;
    let text = |k: &str| creds[k].as_str().unwrap_or_default().to_owned();
    let crypt = WecomCrypt::new(&text("token"), &text("aes_key"), &text("corp_id"))
        .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?;
    Ok((channel, crypt))
}

fn rejected() -> (StatusCode, String) {
    metrics::counter!("hermes_gateway_rejected_total", "platform" => "wecom").increment(1);
    (StatusCode::UNAUTHORIZED, String::new())
}

/// URL verification: the decrypted `echostr`, and nothing else, as the body.
pub async fn verify(
    State(gw): State<Arc<Gateway>>,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> (StatusCode, String) {
    let call = match Callback::of(&gw, &id, raw.as_deref()).await {
        Ok(call) => call,
        Err(answer) => return answer,
    };
    // The echo is harmless to replay (it only proves we hold the keys): WeCom's published
    // vector, from 2014, still verifies.
    match call.crypt.open(call.get("timestamp"), call.get("nonce"), call.get("echostr"), call.get("msg_signature")) {
        Ok(plain) => (StatusCode::OK, plain),
        Err(_) => rejected(),
    }
}

/// A message: taken in once (by `MsgId`), answered later through the message API.
pub async fn receive(
    State(gw): State<Arc<Gateway>>,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
    body: Bytes,
) -> (StatusCode, String) {
    let call = match Callback::of(&gw, &id, raw.as_deref()).await {
        Ok(call) => call,
        Err(answer) => return answer,
    };
    let outer = String::from_utf8_lossy(&body);
    let Some(encrypted) = xml_field(&outer, "Encrypt") else { return rejected() };
    let now = chrono::Utc::now().timestamp();
    let signed = (call.get("timestamp"), call.get("nonce"));
    let Ok(inner) = call.crypt.open_fresh(signed, encrypted, call.get("msg_signature"), now) else {
        return rejected();
    };
    let channel = call.channel;
    let Some(msg) = parse(&inner) else {
        // Events and media are not conversations (yet): accepted so WeCom does not resend them.
        return (StatusCode::OK, String::new());
    };
    let raw = serde_json::json!({ "xml": inner });
    match gw.take_in(&channel, msg, &raw).await {
        Ok(()) => (StatusCode::OK, String::new()),
        Err(e) => {
            tracing::warn!(error = %e, "cannot take a WeCom message in; WeCom will send it again");
            (StatusCode::INTERNAL_SERVER_ERROR, String::new())
        }
    }
}

/// A text, image, voice, file or video message from a person (media are fetched with their
/// `MediaId`; a voice message WeCom already recognised comes as its text).
fn parse(xml: &str) -> Option<Incoming> {
    let (text, files) = match xml_field(xml, "MsgType")? {
        "text" => (xml_field(xml, "Content")?.trim().to_owned(), Vec::new()),
        "voice" => match xml_field(xml, "Recognition").map(str::trim).filter(|t| !t.is_empty()) {
            Some(recognised) => (recognised.to_owned(), Vec::new()),
            None => {
                let format = xml_field(xml, "Format").unwrap_or("amr").to_ascii_lowercase();
                let recording = IncomingFile {
                    file_id: xml_field(xml, "MediaId")?.to_owned(),
                    name: Some(format!("voice.{format}")),
                    mime: format!("audio/{format}"),
                    size: None,
                    key: None,
                };
                (String::new(), vec![recording])
            }
        },
        "image" => {
            let image = IncomingFile {
                file_id: xml_field(xml, "MediaId")?.to_owned(),
                name: None,
                mime: "image/jpeg".into(),
                size: None,
                key: None,
            };
            (String::new(), vec![image])
        }
        // A document or a video: kept whole in the sender's workspace inbox (the name, when
        // WeCom gives one, tells its type).
        kind @ ("file" | "video") => {
            let name = xml_field(xml, "FileName").map(str::to_owned);
            let name = name.unwrap_or_else(|| if kind == "video" { "video.mp4".into() } else { "file".into() });
            let mime = if kind == "video" { "video/mp4" } else { "application/octet-stream" };
            let size = xml_field(xml, "FileSize").and_then(|s| s.trim().parse().ok());
            let file = IncomingFile {
                file_id: xml_field(xml, "MediaId")?.to_owned(),
                name: Some(name),
                mime: mime.into(),
                size,
                key: None,
            };
            (String::new(), vec![file])
        }
        _ => return None,
    };
    let from = xml_field(xml, "FromUserName")?.to_owned();
    let key = xml_field(xml, "MsgId")
        .map_or_else(|| format!("{from}:{}", xml_field(xml, "CreateTime").unwrap_or("")), str::to_owned);
    Some(Incoming {
        dedupe_key: key,
        chat_id: from.clone(),
        kind: ChatKind::Direct,
        thread: None,
        user_id: from,
        user_name: None,
        message_id: None,
        text,
        addressed: true,
        files,
        reply_token: None,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn query_values_are_decoded_once_and_a_plus_stays_a_plus() {
        let q = super::query(Some("echostr=P9nA%2FqY%2B4R%3D%3D&nonce=1+2"));
        assert_eq!(q["echostr"], "P9nA/qY+4R==");
        assert_eq!(q["nonce"], "1+2");
    }

    #[test]
    fn a_voice_message_is_its_recognised_text_or_a_recording_to_transcribe() {
        let voice = |extra: &str| {
            format!(
                "<xml><ToUserName><![CDATA[corp]]></ToUserName><FromUserName><![CDATA[zhangsan]]></FromUserName>\
                 <CreateTime>1700000000</CreateTime><MsgType><![CDATA[voice]]></MsgType>\
                 <MediaId><![CDATA[media-1]]></MediaId><Format><![CDATA[amr]]></Format>{extra}<MsgId>9</MsgId></xml>"
            )
        };
        let recognised = super::parse(&voice("<Recognition><![CDATA[明天开会]]></Recognition>")).unwrap();
        assert_eq!((recognised.text.as_str(), recognised.files.len()), ("明天开会", 0));
        let recording = super::parse(&voice("")).unwrap();
        assert!(recording.text.is_empty());
        assert_eq!(recording.files[0].file_id, "media-1");
        assert_eq!(
            (recording.files[0].mime.as_str(), recording.files[0].name.as_deref()),
            ("audio/amr", Some("voice.amr"))
        );
    }

    #[test]
    fn a_file_message_is_a_document_for_the_inbox_by_its_name_and_size() {
        let file = "<xml><FromUserName><![CDATA[zhangsan]]></FromUserName><CreateTime>1700000000</CreateTime>\
                    <MsgType><![CDATA[file]]></MsgType><MediaId><![CDATA[media-7]]></MediaId>\
                    <FileName><![CDATA[Q3 report.pdf]]></FileName><FileSize>48213</FileSize><MsgId>11</MsgId></xml>";
        let msg = super::parse(file).unwrap();
        let got = &msg.files[0];
        assert_eq!(
            (got.file_id.as_str(), got.name.as_deref(), got.size),
            ("media-7", Some("Q3 report.pdf"), Some(48213))
        );
        assert_eq!(got.mime, "application/octet-stream", "the gateway tells the type from the name");
        let video = file.replace("[file]", "[video]").replace("<FileName><![CDATA[Q3 report.pdf]]></FileName>", "");
        assert_eq!(super::parse(&video).unwrap().files[0].name.as_deref(), Some("video.mp4"));
    }
}
