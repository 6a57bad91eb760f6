//! The Slack Web API methods Hermes calls (bot token in `Authorization: Bearer`), Slack's
//! request signing (`v0=` HMAC-SHA256 over `v0:{timestamp}:{body}`, five-minute replay
//! window), and Markdown in Slack's own `mrkdwn`.

use std::time::Duration;

use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

/// Slack's limit on one message's text is 40,000 characters; parts stay under it with room.
pub const MAX_MESSAGE_CHARS: usize = 39_000;
/// How old a signed request may be (Slack's replay rule).
pub const MAX_SIGNATURE_AGE_SECONDS: i64 = 300;

/// A failed call.
#[derive(Debug, thiserror::Error)]
pub enum SlackError {
    #[error("Slack answered {0}")]
    Api(String),
    #[error("Slack asks to wait {0} s")]
    RateLimited(u64),
    #[error("cannot reach Slack: {0}")]
    Transport(String),
}

impl SlackError {
    /// The bot can never post here (removed, token revoked, channel gone).
    pub fn is_permanent(&self) -> bool {
        matches!(self, Self::Api(e) if matches!(e.as_str(),
            "channel_not_found" | "not_in_channel" | "is_archived" | "account_inactive" | "invalid_auth"
            | "token_revoked" | "not_authed"))
    }
}

/// `v0=` signature of a request body.
pub fn signature(secret: &str, timestamp: &str, body: &[u8]) -> String {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else { return String::new() };
    mac.update(b"v0:");
    mac.update(timestamp.as_bytes());
    mac.update(b":");
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    format!("v0={}", digest.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// Whether a request is Slack's: the signature matches (in constant time) and the timestamp
/// is within five minutes of `now`.
pub fn verify(secret: &str, timestamp: &str, given: &str, body: &[u8], now: i64) -> bool {
    let Ok(ts) = timestamp.parse::<i64>() else { return false };
    // `abs_diff`: a timestamp near i64::MIN must not overflow the difference.
    if now.abs_diff(ts) > MAX_SIGNATURE_AGE_SECONDS.unsigned_abs() {
        return false;
    }
    let expected = signature(secret, timestamp, body);
    let (a, b) = (expected.as_bytes(), given.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Where Slack serves shared files (`url_private_download`).
const SLACK_FILE_HOSTS: [&str; 1] = ["files.slack.com"];

/// One bot's Web API.
#[derive(Clone)]
pub struct SlackApi {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl SlackApi {
    pub fn new(http: reqwest::Client, base: &str, token: &str) -> Self {
        Self { http, base: base.trim_end_matches('/').to_owned(), token: token.to_owned() }
    }

    async fn call(&self, method: &str, params: &Value) -> Result<Value, SlackError> {
        let request = self.http.post(format!("{}/{method}", self.base)).json(params);
        self.checked(request).await
    }

    /// Sends `request` with the token; Slack's answer, or the error it describes.
    async fn checked(&self, request: reqwest::RequestBuilder) -> Result<Value, SlackError> {
        let resp = crate::body::send(request.bearer_auth(&self.token), Duration::from_secs(30))
            .await
            .map_err(SlackError::Transport)?;
        if resp.status().as_u16() == 429 {
            let wait = resp.headers().get("retry-after").and_then(|v| v.to_str().ok()?.parse().ok()).unwrap_or(5);
            return Err(SlackError::RateLimited(wait));
        }
        if resp.status().is_server_error() {
            return Err(SlackError::Transport(format!("HTTP {}", resp.status())));
        }
        let body = crate::body::json(resp).await.map_err(SlackError::Transport)?;
        if body["ok"].as_bool() == Some(true) {
            Ok(body)
        } else {
            Err(SlackError::Api(body["error"].as_str().unwrap_or("unknown_error").to_owned()))
        }
    }

    /// Looks for a message the bot posted but did not record (its sender died): the one in the
    /// conversation (or `thread`) since `oldest` whose metadata carries `part_key`. Needs the
    /// `*:history` scopes; without them nothing is found.
    pub async fn find_by_metadata(
        &self,
        channel: &str,
        thread: Option<&str>,
        oldest: i64,
        part_key: &str,
    ) -> Option<String> {
        let mut params = json!({ "channel": channel, "oldest": oldest.to_string(), "limit": 100,
                                 "include_all_metadata": true });
        let method = match thread {
            Some(ts) => {
                params["ts"] = json!(ts);
                "conversations.replies"
            }
            None => "conversations.history",
        };
        let found = match self.call(method, &params).await {
            Ok(found) => found,
            Err(e) => {
                tracing::info!(error = %e, "cannot read the conversation to look for a part in doubt");
                return None;
            }
        };
        found["messages"].as_array()?.iter().find_map(|m| {
            (m["metadata"]["event_payload"]["part_key"] == part_key).then(|| m["ts"].as_str().map(str::to_owned))?
        })
    }

    /// Shares a file in a conversation (in `thread` if given): an upload address, the bytes,
    /// then the share. Slack's file id.
    pub async fn upload_file(
        &self,
        channel: &str,
        thread: Option<&str>,
        file: &crate::OutFile<'_>,
    ) -> Result<String, SlackError> {
        // This method takes form fields, not JSON.
        let length = file.data.len().to_string();
        let form = [("filename", file.name), ("length", length.as_str())];
        let request = self.http.post(format!("{}/files.getUploadURLExternal", self.base)).form(&form);
        let got = self.checked(request).await?;
        let (Some(url), Some(id)) = (got["upload_url"].as_str(), got["file_id"].as_str()) else {
            return Err(SlackError::Api("no_upload_url".into()));
        };
        let sent = crate::body::send(self.http.post(url).body(file.data.to_vec()), Duration::from_secs(120))
            .await
            .map_err(SlackError::Transport)?;
        if !sent.status().is_success() {
            return Err(SlackError::Transport(format!("the upload answered HTTP {}", sent.status())));
        }
        let mut share = json!({ "files": [{ "id": id, "title": file.name }], "channel_id": channel });
        if let Some(thread) = thread {
            share["thread_ts"] = json!(thread);
        }
        self.call("files.completeUploadExternal", &share).await?;
        Ok(id.to_owned())
    }

    /// A Socket Mode address to connect to (called with the app-level token, once per
    /// connection).
    pub async fn open_socket(&self) -> Result<String, SlackError> {
        let opened = self.call("apps.connections.open", &json!({})).await?;
        opened["url"].as_str().map(str::to_owned).ok_or_else(|| SlackError::Api("no_socket_url".into()))
    }

    /// The bot's user id (how messages mention it) and its team.
    pub async fn auth_test(&self) -> Result<(String, String), SlackError> {
        let me = self.call("auth.test", &json!({})).await?;
        Ok((
            me["user_id"].as_str().unwrap_or_default().to_owned(),
            me["team_id"].as_str().unwrap_or_default().to_owned(),
        ))
    }

    /// Posts a message; its `ts` (Slack's message id).
    pub async fn post_message(&self, params: &Value) -> Result<String, SlackError> {
        let sent = self.call("chat.postMessage", params).await?;
        Ok(sent["ts"].as_str().unwrap_or_default().to_owned())
    }

    /// Whether the bot's token may be sent to fetch `url`: Slack's own file host (over https), or
    /// the API base the operator bound the bot to (a self-hosted gateway, a test emulator). An
    /// event names the URL, and whoever can sign one (the tenant holds the signing secret) could
    /// otherwise point it anywhere and read the answer back in the conversation.
    pub fn may_fetch(&self, url: &str) -> bool {
        let Ok(url) = reqwest::Url::parse(url) else { return false };
        let own = reqwest::Url::parse(&self.base).is_ok_and(|base| base.origin() == url.origin());
        own || (url.scheme() == "https" && url.host_str().is_some_and(|h| SLACK_FILE_HOSTS.contains(&h)))
    }

    /// Downloads a file someone shared (`url_private_download`, on Slack's file host only),
    /// refusing more than `max_bytes` as soon as they arrive.
    pub async fn download(&self, url: &str, max_bytes: u64) -> Result<Vec<u8>, SlackError> {
        if !self.may_fetch(url) {
            return Err(SlackError::Api("file_host_refused".into()));
        }
        let resp = crate::body::send(self.http.get(url).bearer_auth(&self.token), Duration::from_secs(60))
            .await
            .map_err(SlackError::Transport)?;
        if !resp.status().is_success() {
            return Err(SlackError::Transport(format!("HTTP {}", resp.status())));
        }
        crate::body::bytes(resp, max_bytes).await.map_err(|e| match e {
            crate::body::ReadError::TooLarge(_) => SlackError::Api("file_too_large".into()),
            other => SlackError::Transport(other.to_string()),
        })
    }

    /// Removes one of the bot's messages (a preview the final answer replaces).
    pub async fn delete_message(&self, channel: &str, ts: &str) -> Result<(), SlackError> {
        self.call("chat.delete", &json!({ "channel": channel, "ts": ts })).await.map(|_| ())
    }

    /// Replaces a message's text and blocks.
    pub async fn update_message(&self, channel: &str, ts: &str, text: &str) -> Result<(), SlackError> {
        self.call("chat.update", &json!({ "channel": channel, "ts": ts, "text": text, "blocks": [] })).await?;
        Ok(())
    }
}

/// The Markdown agents write, as Slack `mrkdwn`: `**bold**` is `*bold*`, links are
/// `<url|text>`, and `&`, `<`, `>` are escaped as Slack asks (code stays as it is).
pub fn mrkdwn(md: &str) -> String {
    let mut out = String::with_capacity(md.len());
    let mut in_block = false;
    for (i, line) in md.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            out.push_str("```");
            continue;
        }
        let escaped = line.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
        if in_block {
            out.push_str(&escaped);
            continue;
        }
        out.push_str(&links(&escaped.replace("**", "*").replace("__", "_")));
    }
    out
}

/// `[text](http...)` as `<url|text>`.
fn links(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        let parsed = after.find("](").and_then(|close| {
            let url_part = &after[close + 2..];
            let end = url_part.find(')')?;
            let url = &url_part[..end];
            (url.starts_with("https://") || url.starts_with("http://")).then_some((close, end, url))
        });
        match parsed {
            Some((close, end, url)) => {
                out.push_str(&rest[..open]);
                out.push_str(&format!("<{url}|{}>", &after[..close]));
                rest = &after[close + 2 + end + 1..];
            }
            None => {
                out.push_str(&rest[..=open]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";

    #[test]
    fn slacks_documented_signature_vector_verifies_and_replays_do_not() {
        let expected = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
        assert_eq!(BODY.len(), 362);
        assert_eq!(signature(SECRET, "1531420618", BODY.as_bytes()), expected);
        assert!(verify(SECRET, "1531420618", expected, BODY.as_bytes(), 1_531_420_618 + 60));
        // Another timestamp, a changed body, or an old request: refused.
        assert_eq!(
            signature(SECRET, "1531420619", BODY.as_bytes()),
            "v0=ffbf8ca586db401fa71716579fba59aea718787d68572406a7236da28a871144"
        );
        assert!(!verify(SECRET, "1531420619", expected, BODY.as_bytes(), 1_531_420_619));
        assert!(!verify(SECRET, "1531420618", expected, b"token=changed", 1_531_420_618));
        assert!(!verify(SECRET, "1531420618", expected, BODY.as_bytes(), 1_531_420_618 + 301));
        assert!(!verify(SECRET, "-9223372036854775808", expected, BODY.as_bytes(), 1_531_420_618), "no overflow");
    }

    #[test]
    fn markdown_becomes_mrkdwn() {
        assert_eq!(mrkdwn("**bold** & <tag> [docs](https://x.dev)"), "*bold* &amp; &lt;tag&gt; <https://x.dev|docs>");
        assert_eq!(mrkdwn("```\na<b\n```"), "```\na&lt;b\n```");
        assert_eq!(mrkdwn("[x](javascript:1) [y]"), "[x](javascript:1) [y]");
    }
}
