//! WeCom (企业微信) self-built apps: the callback encryption ("WXBizMsgCrypt": SHA-1 signature
//! over the sorted token, timestamp, nonce and ciphertext; AES-256-CBC with the key's first 16
//! bytes as IV, PKCS#7 padding to 32 bytes, `random(16) | len(4, big-endian) | msg |
//! receiveid`), and the message API with its access token cached and refreshed.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use aes::Aes256;
use base64::Engine;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use cbc::cipher::block_padding::NoPadding;
use cbc::cipher::{BlockDecryptMut, BlockEncryptMut, KeyIvInit};
use serde_json::{Value, json};
use sha1::{Digest, Sha1};

/// WeCom's limit on one text message.
pub const MAX_MESSAGE_CHARS: usize = 2_048;
const PAD_BLOCK: usize = 32;
/// How far a callback's signed timestamp may be from now (WeCom retries within seconds).
pub const MAX_CALLBACK_AGE_SECONDS: i64 = 300;

/// Why a callback could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CryptError {
    #[error("the EncodingAESKey is not 43 base64 characters")]
    BadKey,
    #[error("the signature does not match")]
    BadSignature,
    #[error("the ciphertext cannot be decrypted")]
    BadCiphertext,
    #[error("the message is for another app (receive id)")]
    WrongReceiver,
    #[error("the signed timestamp is too old or in the future")]
    Stale,
}

/// One app's callback keys.
#[derive(Clone)]
pub struct WecomCrypt {
    token: String,
    key: [u8; 32],
    receive_id: String,
}

/// Base64 that accepts the non-zero trailing bits every real EncodingAESKey has.
pub(crate) fn lenient() -> GeneralPurpose {
    GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(DecodePaddingMode::Indifferent),
    )
}

impl WecomCrypt {
    pub fn new(token: &str, encoding_aes_key: &str, receive_id: &str) -> Result<Self, CryptError> {
        if encoding_aes_key.len() != 43 {
            return Err(CryptError::BadKey);
        }
        let bytes = lenient().decode(format!("{encoding_aes_key}=")).map_err(|_| CryptError::BadKey)?;
        let key: [u8; 32] = bytes.try_into().map_err(|_| CryptError::BadKey)?;
        Ok(Self { token: token.to_owned(), key, receive_id: receive_id.to_owned() })
    }

    /// The IV: the key's first 16 bytes.
    fn iv(&self) -> [u8; 16] {
        let mut iv = [0u8; 16];
        iv.copy_from_slice(&self.key[..16]);
        iv
    }

    /// `msg_signature` of a callback or reply.
    pub fn signature(&self, timestamp: &str, nonce: &str, encrypted: &str) -> String {
        let mut parts = [self.token.as_str(), timestamp, nonce, encrypted];
        parts.sort_unstable();
        let digest = Sha1::digest(parts.concat().as_bytes());
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The plaintext of a signed callback value (`Encrypt`, or `echostr`).
    /// Opens a signed callback: the signature must match (in constant time) and the signed
    /// timestamp be within [`MAX_CALLBACK_AGE_SECONDS`] of `now`, so a captured callback cannot
    /// be replayed later.
    pub fn open_fresh(
        &self,
        (timestamp, nonce): (&str, &str),
        encrypted: &str,
        signature: &str,
        now: i64,
    ) -> Result<String, CryptError> {
        let plain = self.open(timestamp, nonce, encrypted, signature)?;
        match timestamp.parse::<i64>() {
            Ok(ts) if now.abs_diff(ts) <= MAX_CALLBACK_AGE_SECONDS.unsigned_abs() => Ok(plain),
            _ => Err(CryptError::Stale),
        }
    }

    pub fn open(&self, timestamp: &str, nonce: &str, encrypted: &str, signature: &str) -> Result<String, CryptError> {
        let expected = self.signature(timestamp, nonce, encrypted);
        let same = expected.len() == signature.len()
            && expected.bytes().zip(signature.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0;
        if !same {
            return Err(CryptError::BadSignature);
        }
        self.decrypt(encrypted)
    }

    pub fn decrypt(&self, encrypted: &str) -> Result<String, CryptError> {
        let mut data =
            base64::engine::general_purpose::STANDARD.decode(encrypted).map_err(|_| CryptError::BadCiphertext)?;
        if data.is_empty() || data.len() % 16 != 0 {
            return Err(CryptError::BadCiphertext);
        }
        // Padding is stripped by hand: WeCom pads to 32 bytes, not to the cipher's 16.
        cbc::Decryptor::<Aes256>::new(&self.key.into(), &self.iv().into())
            .decrypt_padded_mut::<NoPadding>(&mut data)
            .map_err(|_| CryptError::BadCiphertext)?;
        let pad = usize::from(*data.last().ok_or(CryptError::BadCiphertext)?);
        if pad == 0 || pad > PAD_BLOCK || pad > data.len() {
            return Err(CryptError::BadCiphertext);
        }
        data.truncate(data.len() - pad);
        if data.len() < 20 {
            return Err(CryptError::BadCiphertext);
        }
        let len = u32::from_be_bytes([data[16], data[17], data[18], data[19]]) as usize;
        let body = data.get(20..20 + len).ok_or(CryptError::BadCiphertext)?;
        let receiver = &data[20 + len..];
        if !self.receive_id.is_empty() && receiver != self.receive_id.as_bytes() {
            return Err(CryptError::WrongReceiver);
        }
        String::from_utf8(body.to_vec()).map_err(|_| CryptError::BadCiphertext)
    }

    /// Encrypts `msg` with the 16 `random` bytes in front (a passive reply, or a test's callback).
    pub fn encrypt(&self, msg: &str, random: &[u8; 16]) -> String {
        let mut data = Vec::with_capacity(msg.len() + 64);
        data.extend_from_slice(random);
        data.extend_from_slice(&u32::try_from(msg.len()).unwrap_or(u32::MAX).to_be_bytes());
        data.extend_from_slice(msg.as_bytes());
        data.extend_from_slice(self.receive_id.as_bytes());
        let pad = PAD_BLOCK - data.len() % PAD_BLOCK;
        data.extend(std::iter::repeat_n(u8::try_from(pad).unwrap_or(32), pad));
        let len = data.len();
        if cbc::Encryptor::<Aes256>::new(&self.key.into(), &self.iv().into())
            .encrypt_padded_mut::<NoPadding>(&mut data, len)
            .is_err()
        {
            // Unreachable: the data was padded to whole blocks above.
            return String::new();
        }
        base64::engine::general_purpose::STANDARD.encode(data)
    }
}

/// A field of WeCom's XML (`<Tag><![CDATA[value]]></Tag>` or `<Tag>value</Tag>`).
pub fn xml_field<'a>(xml: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let start = xml.find(&open)? + open.len();
    let end = start + xml[start..].find(&format!("</{tag}>"))?;
    let value = &xml[start..end];
    Some(value.strip_prefix("<![CDATA[").and_then(|v| v.strip_suffix("]]>")).unwrap_or(value))
}

/// A failed API call.
#[derive(Debug, thiserror::Error)]
pub enum WecomError {
    #[error("WeCom answered {code}: {message}")]
    Api { code: i64, message: String },
    #[error("cannot reach WeCom: {0}")]
    Transport(String),
}

impl WecomError {
    /// Frequency limits (45009, 45033, 45047): worth a later retry.
    pub fn is_rate_limit(&self) -> bool {
        matches!(self, Self::Api { code: 45009 | 45033 | 45047, .. })
    }

    /// The app cannot reach this person (not in its visible range, bad credentials).
    pub fn is_permanent(&self) -> bool {
        matches!(self, Self::Api { code: 40001 | 40013 | 40056 | 60020 | 81013 | 301002, .. })
    }
}

/// One app's message API; the access token is shared by clones and refreshed when it expires.
#[derive(Clone)]
pub struct WecomApi {
    http: reqwest::Client,
    base: String,
    corp_id: String,
    secret: String,
    agent_id: i64,
    token: Arc<Mutex<Option<(String, Instant)>>>,
}

impl WecomApi {
    pub fn new(http: reqwest::Client, base: &str, corp_id: &str, secret: &str, agent_id: i64) -> Self {
        Self {
            http,
            base: base.trim_end_matches('/').to_owned(),
            corp_id: corp_id.to_owned(),
            secret: secret.to_owned(),
            agent_id,
            token: Arc::default(),
        }
    }

    async fn get(&self, url: String) -> Result<Value, WecomError> {
        let resp =
            crate::body::send(self.http.get(url), Duration::from_secs(15)).await.map_err(WecomError::Transport)?;
        checked(crate::body::json(resp).await.map_err(WecomError::Transport)?)
    }

    /// The access token, fetched again five minutes before it expires.
    async fn access_token(&self, fresh: bool) -> Result<String, WecomError> {
        if !fresh
            && let Some((token, until)) = self.token.lock().unwrap_or_else(PoisonError::into_inner).clone()
            && Instant::now() < until
        {
            return Ok(token);
        }
        let url = format!("{}/cgi-bin/gettoken?corpid={}&corpsecret={}", self.base, self.corp_id, self.secret);
        let got = self.get(url).await?;
        let token = got["access_token"].as_str().unwrap_or_default().to_owned();
        let lasts = Duration::from_secs(got["expires_in"].as_u64().unwrap_or(7200).saturating_sub(300));
        *self.token.lock().unwrap_or_else(PoisonError::into_inner) = Some((token.clone(), Instant::now() + lasts));
        Ok(token)
    }

    /// Checks the credentials (fetches a token).
    pub async fn check(&self) -> Result<(), WecomError> {
        self.access_token(true).await.map(|_| ())
    }

    /// Sends a text message to one person (their WeCom user id).
    pub async fn send_text(&self, to_user: &str, text: &str) -> Result<String, WecomError> {
        self.send(
            json!({ "touser": to_user, "msgtype": "text", "agentid": self.agent_id, "text": { "content": text } }),
        )
        .await
    }

    /// Sends uploaded media (`image` or `file`) to one person.
    pub async fn send_media(&self, to_user: &str, kind: &str, media_id: &str) -> Result<String, WecomError> {
        let mut body = json!({ "touser": to_user, "msgtype": kind, "agentid": self.agent_id });
        body[kind] = json!({ "media_id": media_id });
        self.send(body).await
    }

    async fn send(&self, body: Value) -> Result<String, WecomError> {
        let url = |token: &str| format!("{}/cgi-bin/message/send?access_token={token}", self.base);
        let sent = self.call(|token| self.http.post(url(token)).json(&body), 0).await?.json()?;
        Ok(sent["msgid"].as_str().unwrap_or_default().to_owned())
    }

    /// Uploads a file as temporary media (`image` or `file`, valid three days); its media id.
    pub async fn upload_media(&self, kind: &str, file: &crate::OutFile<'_>) -> Result<String, WecomError> {
        let url = |token: &str| format!("{}/cgi-bin/media/upload?access_token={token}&type={kind}", self.base);
        // Built again for a retry with a fresh token (a form is read once); an unusable type
        // goes as bytes without one.
        let part = || reqwest::multipart::Part::bytes(file.data.to_vec()).file_name(file.name.to_owned());
        let form =
            || reqwest::multipart::Form::new().part("media", part().mime_str(file.mime).unwrap_or_else(|_| part()));
        let uploaded = self.call(|token| self.http.post(url(token)).multipart(form()), 0).await?.json()?;
        uploaded["media_id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| WecomError::Transport("WeCom gave no media id".into()))
    }

    /// A file someone sent the app (its `MediaId`), at most `max_bytes`.
    pub async fn download_media(&self, media_id: &str, max_bytes: u64) -> Result<Vec<u8>, WecomError> {
        let url = |token: &str| format!("{}/cgi-bin/media/get?access_token={token}&media_id={media_id}", self.base);
        match self.call(|token| self.http.get(url(token)), max_bytes).await? {
            Answer::Bytes(bytes) => Ok(bytes),
            Answer::Json(_) => Err(WecomError::Transport("WeCom answered without the file".into())),
        }
    }

    /// Calls WeCom with a token (`make` builds the request for it), fetching a new token once
    /// when WeCom says it expired. A JSON answer is checked; anything else is a file of at
    /// most `max_bytes`.
    async fn call(&self, make: impl Fn(&str) -> reqwest::RequestBuilder, max_bytes: u64) -> Result<Answer, WecomError> {
        let transport = |e: reqwest::Error| WecomError::Transport(e.without_url().to_string());
        let mut fresh = false;
        loop {
            let token = self.access_token(fresh).await?;
            let mut resp =
                crate::body::send(make(&token), Duration::from_secs(60)).await.map_err(WecomError::Transport)?;
            let kind = resp.headers().get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
            if !kind.contains("json") && !kind.starts_with("text/plain") {
                let mut bytes = Vec::new();
                while let Some(chunk) = resp.chunk().await.map_err(transport)? {
                    bytes.extend_from_slice(&chunk);
                    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > max_bytes {
                        return Err(WecomError::Transport("the file is too large".into()));
                    }
                }
                return Ok(Answer::Bytes(bytes));
            }
            let body = crate::body::json(resp).await.map_err(WecomError::Transport)?;
            match checked(body) {
                // An expired or revoked token: fetch a new one, once.
                Err(WecomError::Api { code: 40014 | 42001, .. }) if !fresh => fresh = true,
                Ok(v) => return Ok(Answer::Json(v)),
                Err(e) => return Err(e),
            }
        }
    }
}

/// What WeCom answered: JSON, or a file's bytes.
enum Answer {
    Json(Value),
    Bytes(Vec<u8>),
}

impl Answer {
    fn json(self) -> Result<Value, WecomError> {
        match self {
            Self::Json(v) => Ok(v),
            Self::Bytes(_) => Err(WecomError::Transport("WeCom answered with a file, not JSON".into())),
        }
    }
}

fn checked(body: Value) -> Result<Value, WecomError> {
    match body["errcode"].as_i64().unwrap_or(0) {
        0 => Ok(body),
        code => Err(WecomError::Api { code, message: body["errmsg"].as_str().unwrap_or_default().to_owned() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Set A of WeCom's published samples (doc 91144; Go and PHP SDKs).
    const TOKEN: &str = "QDG6eK";
    const KEY: &str = "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C";
    const CORP: &str = "wx5823bf96d3bd56c7";

    #[test]
    fn the_published_url_verification_vector_opens() {
        let crypt = WecomCrypt::new(TOKEN, KEY, CORP).unwrap();
        let echostr = "P9nAzCzyDtyTWESHep1vC5X9xho/qYX3Zpb4yKa9SKld1DsH3Iyt3tP3zNdtp+4RPcs8TgAE7OaBO+FZXvnaqQ==";
        let plain = crypt.open("1409659589", "263014780", echostr, "5c45ff5e21c57e6ad56bac8758b79b1d9ac89fd3").unwrap();
        assert_eq!(plain, "1616140317555161061");
        assert_eq!(
            crypt.open("1409659589", "263014780", echostr, "5c45ff5e21c57e6ad56bac8758b79b1d9ac89fd4"),
            Err(CryptError::BadSignature)
        );
        assert_eq!(
            WecomCrypt::new(TOKEN, KEY, "another-corp").unwrap().decrypt(echostr),
            Err(CryptError::WrongReceiver)
        );
    }

    #[test]
    fn the_published_xml_and_json_message_vectors_open() {
        let crypt = WecomCrypt::new(TOKEN, KEY, CORP).unwrap();
        let xml = "RypEvHKD8QQKFhvQ6QleEB4J58tiPdvo+rtK1I9qca6aM/wvqnLSV5zEPeusUiX5L5X/0lWfrf0QADHHhGd3QczcdCUpj911L3vg3W/sYYvuJTs3TUUkSUXxaccAS0qhxchrRYt66wiSpGLYL42aM6A8dTT+6k4aSknmPj48kzJs8qLjvd4Xgpue06DOdnLxAUHzM6+kDZ+HMZfJYuR+LtwGc2hgf5gsijff0ekUNXZiqATP7PF5mZxZ3Izoun1s4zG4LUMnvw2r+KqCKIw+3IQH03v+BCA9nMELNqbSf6tiWSrXJB3LAVGUcallcrw8V2t9EL4EhzJWrQUax5wLVMNS0+rUPA3k22Ncx4XXZS9o0MBH27Bo6BpNelZpS+/uh9KsNlY6bHCmJU9p8g7m3fVKn28H3KDYA5Pl/T8Z1ptDAVe0lXdQ2YoyyH2uyPIGHBZZIs2pDBS8R07+qN+E7Q==";
        let plain = crypt.open("1409659813", "1372623149", xml, "477715d11cdb4164915debcba66cb864d751f3e6").unwrap();
        assert_eq!(plain.len(), 284);
        assert_eq!(xml_field(&plain, "Content"), Some("hello"));
        assert_eq!(xml_field(&plain, "FromUserName"), Some("mycreate"));
        assert_eq!(xml_field(&plain, "MsgId"), Some("4561255354251345929"));
        let json_msg = "CZWs4CWRpI4VolQlvn4dlEC1alN2MUEY2VklGehgBVLBrlVF7SyT+SV+Toj43l4ayJ9UMGKphktKKmP7B2j/P1ey67XB8PBgS7Wr5/8+w/yWriZv3Vmoo/MH3/1HsIWZrPQ3N2mJrelStIfI2Y8kLKXA7EhfZgZX4o+ffdkZDM76SEl79Ib9mw7TGjZ9Aw/x/A2VjNbV1E8BtEbRxYYcQippYNw7hr8sFfa3nW1xLdxokt8QkRX83vK3DFP2F6TQFPL2Tu98UwhcUpPvdJBuu1/yiOQIScppV3eOuLWEsko=";
        let plain =
            crypt.open("1409659813", "1372623149", json_msg, "0623cbc5a8cbee5bcc137c70de99575366fc2af3").unwrap();
        assert!(plain.contains("\"Content\":\"hello\""), "{plain}");
    }

    #[test]
    fn what_we_encrypt_opens_again_with_chinese_text_and_any_length() {
        let crypt = WecomCrypt::new(TOKEN, KEY, CORP).unwrap();
        for msg in ["", "你好", &"汉".repeat(1000), &"a".repeat(12)] {
            let sealed = crypt.encrypt(msg, b"0123456789abcdef");
            assert_eq!(crypt.decrypt(&sealed).unwrap(), msg);
        }
        assert_eq!(WecomCrypt::new(TOKEN, "short", CORP).err(), Some(CryptError::BadKey));
    }
}
