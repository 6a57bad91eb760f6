//! One request of each kind the load test sends, each checked: a 2xx answer that carries the
//! reply the scripted model gives (an echo, or the command's output after a tool call), so a
//! figure is never made of fast failures.

use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use serde_json::{Value, json};

/// What a turn asks the scripted model for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A plain answer (the model echoes).
    Plain,
    /// One `terminal` call in the sandbox (`$ echo …`), then the answer.
    Tool,
    /// A plain answer, streamed as SSE.
    Stream,
}

/// Where the load goes.
#[derive(Clone)]
pub struct Target {
    pub client: reqwest::Client,
    pub url: String,
    pub key: String,
}

/// A finished turn: how long it took and the session it ran in.
pub struct Done {
    pub took: Duration,
    pub session: Option<String>,
}

impl Target {
    pub fn new(url: &str, key: &str, timeout: Duration) -> anyhow::Result<Self> {
        let client =
            reqwest::Client::builder().pool_max_idle_per_host(4096).tcp_nodelay(true).timeout(timeout).build()?;
        Ok(Self { client, url: url.trim_end_matches('/').to_owned(), key: key.to_owned() })
    }

    /// Sends turn `n` of `kind` to `agent`, in `session` when given, and checks the reply.
    pub async fn turn(&self, agent: &str, kind: Kind, n: u64, session: Option<&str>) -> anyhow::Result<Done> {
        let word = format!("ping-{n}");
        let content = match kind {
            Kind::Tool => format!("$ echo {word}"),
            Kind::Plain | Kind::Stream => word.clone(),
        };
        let mut body = json!({"model": agent, "messages": [{"role": "user", "content": content}]});
        if kind == Kind::Stream {
            body["stream"] = json!(true);
        }
        let started = Instant::now();
        let mut request = self.client.post(format!("{}/v1/chat/completions", self.url)).bearer_auth(&self.key);
        if let Some(s) = session {
            request = request.header("x-hermes-session-id", s);
        }
        let resp = request.json(&body).send().await.context("request failed")?;
        let status = resp.status();
        let session = resp.headers().get("x-hermes-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let text = resp.text().await.context("reading the answer")?;
        let took = started.elapsed();
        if !status.is_success() {
            bail!("HTTP {status}: {}", cut(&text));
        }
        let answer = match kind {
            Kind::Stream => streamed_answer(&text)?,
            Kind::Plain | Kind::Tool => {
                let v: Value = serde_json::from_str(&text).with_context(|| format!("not JSON: {}", cut(&text)))?;
                v.pointer("/choices/0/message/content").and_then(Value::as_str).unwrap_or_default().to_owned()
            }
        };
        ensure!(answer.contains(&word), "the answer does not carry {word:?}: {}", cut(&answer));
        Ok(Done { took, session })
    }
}

/// The content of an SSE chat-completion stream, which must end with `[DONE]`.
fn streamed_answer(text: &str) -> anyhow::Result<String> {
    let mut answer = String::new();
    let mut done = false;
    for data in text.lines().filter_map(|l| l.strip_prefix("data: ")) {
        if data == "[DONE]" {
            done = true;
            break;
        }
        let chunk: Value = serde_json::from_str(data).with_context(|| format!("bad chunk: {}", cut(data)))?;
        if let Some(error) = chunk.get("error") {
            bail!("stream error: {error}");
        }
        if let Some(piece) = chunk.pointer("/choices/0/delta/content").and_then(Value::as_str) {
            answer.push_str(piece);
        }
    }
    ensure!(done, "the stream ended without [DONE]: {}", cut(text));
    Ok(answer)
}

fn cut(text: &str) -> String {
    text.chars().take(300).collect()
}
