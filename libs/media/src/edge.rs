//! Edge TTS: Microsoft Edge's read-aloud service, which needs no key (upstream's default
//! voice). One WebSocket per chunk of text: a `speech.config` message naming the output
//! format, then the SSML; the service answers `turn.start`, binary audio frames (a 2-byte
//! header length, the header, the audio) and `turn.end`. The browser's `Sec-MS-GEC` token (a
//! SHA-256 of the five-minute Windows tick and the client token in the URL) rides in the URL.

use futures_util::{SinkExt, StreamExt};
use sha2::{Digest, Sha256};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

use hermes_config::TtsConfig;

use crate::speech_error::SpeechError;

/// The Edge release whose token scheme this follows.
const EDGE_VERSION: &str = "130.0.2849.68";
/// A WebSocket message's limit, less room for the headers and SSML around the text.
const MAX_CHUNK_BYTES: usize = 60_000;
/// Seconds between 1601-01-01 (Windows' epoch) and 1970-01-01.
const WINDOWS_EPOCH_OFFSET: u64 = 11_644_473_600;

/// `en-US-AriaNeural` as the service names it.
fn long_voice_name(voice: &str) -> String {
    if voice.starts_with("Microsoft Server Speech") {
        return voice.to_owned();
    }
    let mut parts = voice.splitn(3, '-');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(lang), Some(region), Some(name)) => {
            // `zh-CN-liaoning-XiaobeiNeural`: the region takes the dialect.
            let (region, name) = match name.split_once('-') {
                Some((dialect, rest)) => (format!("{region}-{dialect}"), rest.to_owned()),
                None => (region.to_owned(), name.to_owned()),
            };
            format!("Microsoft Server Speech Text to Speech Voice ({lang}-{region}, {name})")
        }
        _ => voice.to_owned(),
    }
}

/// The `Sec-MS-GEC` token for `unix_seconds` and the URL's client token.
fn gec_token(unix_seconds: u64, client_token: &str) -> String {
    let ticks = (unix_seconds + WINDOWS_EPOCH_OFFSET) * 10_000_000;
    let ticks = ticks - ticks % 3_000_000_000;
    let digest = Sha256::digest(format!("{ticks}{client_token}").as_bytes());
    digest.iter().map(|b| format!("{b:02X}")).collect()
}

fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Control characters make the service fail (a vertical tab from an OCR'd PDF).
            c if c.is_control() && c != '\n' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// `text` in chunks of at most `max` bytes, split between words where one is near.
fn chunks(text: &str, max: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text.trim();
    while rest.len() > max {
        let mut end = max;
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        let end = rest[..end].rfind(' ').filter(|i| *i > max / 2).unwrap_or(end);
        out.push(rest[..end].trim().to_owned());
        rest = rest[end..].trim_start();
    }
    if !rest.is_empty() {
        out.push(rest.to_owned());
    }
    out
}

/// JavaScript's date string, as the browser sends it.
fn timestamp() -> String {
    chrono::Utc::now().format("%a %b %d %Y %H:%M:%S GMT+0000 (Coordinated Universal Time)").to_string()
}

fn failed(what: &str, e: impl std::fmt::Display) -> SpeechError {
    SpeechError::Failed(format!("Edge TTS {what}: {e}"))
}

/// `text` spoken by Edge in `config.edge_voice` and `config.edge_format`.
pub(crate) async fn speak(config: &TtsConfig, text: &str) -> Result<Vec<u8>, SpeechError> {
    let voice = long_voice_name(&config.edge_voice);
    let rate = format!("{:+}%", ((config.speed.clamp(0.25, 4.0) - 1.0) * 100.0).round() as i32);
    let mut audio = Vec::new();
    for chunk in chunks(&xml_escape(text), MAX_CHUNK_BYTES) {
        audio.extend(speak_chunk(config, &voice, &rate, &chunk).await?);
    }
    Ok(audio)
}

async fn speak_chunk(config: &TtsConfig, voice: &str, rate: &str, escaped: &str) -> Result<Vec<u8>, SpeechError> {
    let client_token = reqwest::Url::parse(&config.edge_url)
        .map_err(|e| failed("URL", e))?
        .query_pairs()
        .find(|(k, _)| k.eq_ignore_ascii_case("TrustedClientToken"))
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let joiner = if config.edge_url.contains('?') { '&' } else { '?' };
    let url = format!(
        "{}{joiner}ConnectionId={}&Sec-MS-GEC={}&Sec-MS-GEC-Version=1-{EDGE_VERSION}",
        config.edge_url,
        uuid::Uuid::now_v7().simple(),
        gec_token(now, &client_token)
    );
    let mut request = url.into_client_request().map_err(|e| failed("URL", e))?;
    let headers = request.headers_mut();
    headers.insert("Origin", HeaderValue::from_static("chrome-extension://jdiccldimpdaibmpdkjnbmckianbfold"));
    headers.insert("Pragma", HeaderValue::from_static("no-cache"));
    headers.insert("Cache-Control", HeaderValue::from_static("no-cache"));
    headers.insert(
        "User-Agent",
        HeaderValue::from_static(
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36 Edg/130.0.0.0",
        ),
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(request).await.map_err(|e| failed("is unreachable", e))?;
    let date = timestamp();
    let speech_config = format!(
        "X-Timestamp:{date}\r\nContent-Type:application/json; charset=utf-8\r\nPath:speech.config\r\n\r\n\
         {{\"context\":{{\"synthesis\":{{\"audio\":{{\"metadataoptions\":{{\"sentenceBoundaryEnabled\":false,\
         \"wordBoundaryEnabled\":false}},\"outputFormat\":\"{}\"}}}}}}}}\r\n",
        config.edge_format
    );
    let ssml = format!(
        "X-RequestId:{}\r\nContent-Type:application/ssml+xml\r\nX-Timestamp:{date}Z\r\nPath:ssml\r\n\r\n\
         <speak version='1.0' xmlns='http://www.w3.org/2001/10/synthesis' xml:lang='en-US'><voice name='{voice}'>\
         <prosody pitch='+0Hz' rate='{rate}' volume='+0%'>{escaped}</prosody></voice></speak>",
        uuid::Uuid::now_v7().simple()
    );
    ws.send(Message::text(speech_config)).await.map_err(|e| failed("refused the request", e))?;
    ws.send(Message::text(ssml)).await.map_err(|e| failed("refused the request", e))?;
    let (mut audio, mut started) = (Vec::new(), false);
    while let Some(message) = ws.next().await {
        match message.map_err(|e| failed("dropped the connection", e))? {
            Message::Text(text) => {
                let path = text.lines().find_map(|l| l.strip_prefix("Path:")).map(str::trim).unwrap_or_default();
                match path {
                    "turn.start" => started = true,
                    "turn.end" => break,
                    _ => {}
                }
            }
            Message::Binary(frame) if started && frame.len() >= 2 => {
                let header = usize::from(u16::from_be_bytes([frame[0], frame[1]]));
                if let Some(data) = frame.get(2 + header..) {
                    audio.extend_from_slice(data);
                }
            }
            Message::Close(_) => break,
            _ => {}
        }
    }
    let _ = ws.close(None).await;
    if audio.is_empty() {
        return Err(SpeechError::Failed(format!("Edge TTS sent no audio (is the voice {voice} right?)")));
    }
    Ok(audio)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn voices_get_the_services_long_names() {
        assert_eq!(
            long_voice_name("en-US-AriaNeural"),
            "Microsoft Server Speech Text to Speech Voice (en-US, AriaNeural)"
        );
        assert_eq!(
            long_voice_name("zh-CN-liaoning-XiaobeiNeural"),
            "Microsoft Server Speech Text to Speech Voice (zh-CN-liaoning, XiaobeiNeural)"
        );
    }

    #[test]
    fn the_token_changes_every_five_minutes_and_is_upper_hex() {
        let token = gec_token(1_764_000_000, "6A5AA1D4EAFF4E9FB37E23D68491D6F4");
        assert_eq!(token.len(), 64);
        assert!(token.chars().all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()));
        assert_eq!(token, gec_token(1_764_000_000 + 1, "6A5AA1D4EAFF4E9FB37E23D68491D6F4"));
        // 1_764_000_000 is 00:00 past a five-minute mark + 0 s; five minutes on is another window.
        assert_ne!(token, gec_token(1_764_000_000 + 300, "6A5AA1D4EAFF4E9FB37E23D68491D6F4"));
    }

    #[test]
    fn text_is_escaped_and_cut_between_words() {
        assert_eq!(xml_escape("a < b & 'c'\u{b}"), "a &lt; b &amp; &apos;c&apos; ");
        assert_eq!(chunks("alpha beta gamma delta", 12), ["alpha beta", "gamma delta"]);
        assert_eq!(chunks("语音合成测试", 7), ["语音", "合成", "测试"]);
    }
}
