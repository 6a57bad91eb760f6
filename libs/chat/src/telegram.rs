//! The Telegram Bot API methods Hermes calls, with Telegram's error envelope turned into
//! [`TelegramError`] (flood control's `retry_after`, a blocked bot, "message is not modified").

use std::time::Duration;

/// Telegram's limit on one message's text.
pub const MAX_MESSAGE_UTF16: usize = 4096;

use serde_json::{Value, json};

use crate::OutFile;

/// A failed call.
#[derive(Debug, thiserror::Error)]
pub enum TelegramError {
    #[error("Telegram answered {code}: {description}")]
    Api { code: i64, description: String, retry_after: Option<u64> },
    #[error("cannot reach Telegram: {0}")]
    Transport(String),
}

impl TelegramError {
    /// How long Telegram asks us to wait (flood control).
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Api { retry_after: Some(secs), .. } => Some(Duration::from_secs(*secs)),
            Self::Api { code: 429, description, .. } => {
                // Very old answers carry the wait only in the text: "retry after N".
                let secs = description.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(5);
                Some(Duration::from_secs(secs))
            }
            _ => None,
        }
    }

    /// The bot can never deliver to this chat (blocked, kicked, chat gone, bad token).
    pub fn is_permanent(&self) -> bool {
        match self {
            Self::Api { code: 401 | 403, .. } => true,
            Self::Api { code: 400, description, .. } => {
                let d = description.to_ascii_lowercase();
                d.contains("chat not found") || d.contains("bot was kicked") || d.contains("user is deactivated")
            }
            _ => false,
        }
    }

    /// Telegram refused the Markdown (bad entities): send the text plain instead.
    pub fn is_bad_markup(&self) -> bool {
        matches!(self, Self::Api { code: 400, description, .. } if description.contains("can't parse entities"))
    }

    /// An edit that changes nothing: a success.
    pub fn is_not_modified(&self) -> bool {
        matches!(self, Self::Api { description, .. } if description.contains("message is not modified"))
    }
}

/// Telegram's answer: the result, or the error it describes.
async fn envelope(resp: reqwest::Response) -> Result<Value, TelegramError> {
    let status = resp.status().as_u16();
    let body = crate::body::json(resp).await.map_err(TelegramError::Transport)?;
    if body["ok"].as_bool() == Some(true) {
        return Ok(body["result"].clone());
    }
    Err(TelegramError::Api {
        code: body["error_code"].as_i64().unwrap_or(i64::from(status)),
        description: body["description"].as_str().unwrap_or("unknown error").to_owned(),
        retry_after: body.pointer("/parameters/retry_after").and_then(Value::as_u64),
    })
}

/// One bot's API.
#[derive(Clone)]
pub struct TelegramApi {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl TelegramApi {
    pub fn new(http: reqwest::Client, base: &str, token: &str) -> Self {
        Self { http, base: base.trim_end_matches('/').to_owned(), token: token.to_owned() }
    }

    /// Calls `method`; `wait` bounds the call (a long poll waits longer than a send).
    async fn call(&self, method: &str, params: &Value, wait: Duration) -> Result<Value, TelegramError> {
        let url = format!("{}/bot{}/{method}", self.base, self.token);
        let resp = crate::body::send(self.http.post(url).json(params), wait).await.map_err(TelegramError::Transport)?;
        envelope(resp).await
    }

    /// Sends a file (a photo or voice bubble Telegram shows inline, an audio file, or a
    /// document); its message id.
    pub async fn send_file(&self, chat: &str, thread: Option<i64>, file: &OutFile<'_>) -> Result<i64, TelegramError> {
        let (method, field) = send_method(file.mime, file.data.len());
        let part = reqwest::multipart::Part::bytes(file.data.to_vec())
            .file_name(file.name.to_owned())
            .mime_str(file.mime)
            .map_err(|e| TelegramError::Transport(e.to_string()))?;
        let mut form = reqwest::multipart::Form::new().text("chat_id", chat.to_owned()).part(field, part);
        if let Some(thread) = thread {
            form = form.text("message_thread_id", thread.to_string());
        }
        let url = format!("{}/bot{}/{method}", self.base, self.token);
        let resp = crate::body::send(self.http.post(url).multipart(form), Duration::from_secs(120))
            .await
            .map_err(TelegramError::Transport)?;
        let sent = envelope(resp).await?;
        Ok(sent["message_id"].as_i64().unwrap_or_default())
    }

    /// The bot's user name (also proves the token works).
    pub async fn get_me(&self) -> Result<String, TelegramError> {
        let me = self.call("getMe", &json!({}), Duration::from_secs(15)).await?;
        Ok(me["username"].as_str().unwrap_or_default().to_owned())
    }

    /// Updates from `offset` on, waiting up to `timeout` for the first.
    pub async fn get_updates(&self, offset: i64, timeout: Duration) -> Result<Vec<Value>, TelegramError> {
        let params = json!({ "offset": offset, "timeout": timeout.as_secs(), "limit": 100,
                             "allowed_updates": ["message", "edited_message", "callback_query"] });
        let got = self.call("getUpdates", &params, timeout + Duration::from_secs(10)).await?;
        Ok(got.as_array().cloned().unwrap_or_default())
    }

    /// Sends a message; its id.
    pub async fn send_message(&self, params: &Value) -> Result<i64, TelegramError> {
        let sent = self.call("sendMessage", params, Duration::from_secs(30)).await?;
        Ok(sent["message_id"].as_i64().unwrap_or_default())
    }

    /// Stops a pressed button's spinner, showing `text` briefly.
    pub async fn answer_callback(&self, callback_id: &str, text: &str) -> Result<(), TelegramError> {
        let params = json!({ "callback_query_id": callback_id, "text": text });
        self.call("answerCallbackQuery", &params, Duration::from_secs(10)).await?;
        Ok(())
    }

    /// Replaces a message's text (and removes its buttons); an unchanged text is a success.
    pub async fn edit_text(&self, chat_id: &str, message_id: i64, text: &str) -> Result<(), TelegramError> {
        let params = json!({ "chat_id": chat_id, "message_id": message_id, "text": text,
                             "reply_markup": { "inline_keyboard": [] } });
        match self.call("editMessageText", &params, Duration::from_secs(15)).await {
            Err(e) if e.is_not_modified() => Ok(()),
            other => other.map(|_| ()),
        }
    }

    /// Looks for a message the bot sent but did not record (its sender died): among the
    /// `window` message ids after `after` in the chat (skipping `known` ones), the one whose text
    /// is exactly `text`. Telegram is asked to set that same text; only that message answers
    /// "not modified" (another person's message cannot be edited, a missing one is not found).
    pub async fn find_sent(&self, chat: &str, after: i64, known: &[i64], text: &Value, window: i64) -> Option<i64> {
        for id in (after + 1..=after + window).filter(|id| !known.contains(id)) {
            let mut params = text.clone();
            params["chat_id"] = json!(chat);
            params["message_id"] = json!(id);
            match self.call("editMessageText", &params, Duration::from_secs(15)).await {
                Err(e) if e.is_not_modified() => return Some(id),
                Ok(_) => {
                    // One of our own messages that we did not know of, now showing this text.
                    tracing::warn!(message_id = id, "a probe changed an unrecorded message of the bot");
                    return Some(id);
                }
                Err(e) if e.retry_after().is_some() => return None,
                Err(_) => {}
            }
        }
        None
    }

    /// Shows `text` in place of a message's text (a streaming preview); unchanged is fine.
    pub async fn edit_plain(&self, chat_id: &str, message_id: i64, text: &str) -> Result<(), TelegramError> {
        let params = json!({ "chat_id": chat_id, "message_id": message_id, "text": text });
        match self.call("editMessageText", &params, Duration::from_secs(15)).await {
            Err(e) if e.is_not_modified() => Ok(()),
            other => other.map(|_| ()),
        }
    }

    /// Downloads a file someone sent the bot, refusing more than `max_bytes`.
    pub async fn download(&self, file_id: &str, max_bytes: u64) -> Result<Vec<u8>, TelegramError> {
        let file = self.call("getFile", &json!({ "file_id": file_id }), Duration::from_secs(15)).await?;
        let path = file["file_path"].as_str().unwrap_or_default();
        if file["file_size"].as_u64().is_some_and(|n| n > max_bytes) {
            return Err(TelegramError::Api { code: 413, description: "file too large".into(), retry_after: None });
        }
        let url = format!("{}/file/bot{}/{path}", self.base, self.token);
        let resp =
            crate::body::send(self.http.get(url), Duration::from_secs(60)).await.map_err(TelegramError::Transport)?;
        if !resp.status().is_success() {
            let code = i64::from(resp.status().as_u16());
            return Err(TelegramError::Api {
                code,
                description: "the file could not be fetched".into(),
                retry_after: None,
            });
        }
        crate::body::bytes(resp, max_bytes).await.map_err(|e| match e {
            crate::body::ReadError::TooLarge(_) => {
                TelegramError::Api { code: 413, description: "file too large".into(), retry_after: None }
            }
            other => TelegramError::Transport(other.to_string()),
        })
    }

    /// Removes one of the bot's messages (a preview the final answer replaces).
    pub async fn delete_message(&self, chat_id: &str, message_id: i64) -> Result<(), TelegramError> {
        let params = json!({ "chat_id": chat_id, "message_id": message_id });
        self.call("deleteMessage", &params, Duration::from_secs(15)).await.map(|_| ())
    }

    pub async fn send_typing(&self, chat_id: &str) -> Result<(), TelegramError> {
        self.call("sendChatAction", &json!({ "chat_id": chat_id, "action": "typing" }), Duration::from_secs(10))
            .await?;
        Ok(())
    }

    pub async fn set_webhook(&self, url: &str, secret: &str) -> Result<(), TelegramError> {
        let params = json!({ "url": url, "secret_token": secret,
                             "allowed_updates": ["message", "edited_message", "callback_query"] });
        self.call("setWebhook", &params, Duration::from_secs(15)).await?;
        Ok(())
    }

    /// Registers the bot's command menu.
    pub async fn set_commands(&self, commands: &[(&str, &str)]) -> Result<(), TelegramError> {
        let list: Vec<Value> =
            commands.iter().map(|(name, about)| json!({ "command": name, "description": about })).collect();
        self.call("setMyCommands", &json!({ "commands": list }), Duration::from_secs(15)).await?;
        Ok(())
    }

    pub async fn delete_webhook(&self) -> Result<(), TelegramError> {
        self.call("deleteWebhook", &json!({}), Duration::from_secs(15)).await?;
        Ok(())
    }
}

/// The Bot API method and field for a file: photos up to 10 MB inline, Opus in OGG as a voice
/// bubble, MP3 in the audio player, anything else as a document.
fn send_method(mime: &str, len: usize) -> (&'static str, &'static str) {
    match mime {
        "image/png" | "image/jpeg" | "image/webp" if len <= 10 << 20 => ("sendPhoto", "photo"),
        "audio/ogg" => ("sendVoice", "voice"),
        "audio/mpeg" => ("sendAudio", "audio"),
        _ => ("sendDocument", "document"),
    }
}

#[cfg(test)]
mod tests {
    use super::send_method;

    #[test]
    fn files_go_by_the_method_that_shows_them_best() {
        assert_eq!(send_method("image/png", 1000), ("sendPhoto", "photo"));
        assert_eq!(send_method("image/png", 11 << 20), ("sendDocument", "document"), "too large for a photo");
        assert_eq!(send_method("audio/ogg", 1000), ("sendVoice", "voice"));
        assert_eq!(send_method("audio/mpeg", 1000), ("sendAudio", "audio"));
        assert_eq!(send_method("text/csv", 10), ("sendDocument", "document"));
    }
}
