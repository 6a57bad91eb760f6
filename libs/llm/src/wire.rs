//! What the three transports share on the wire: the POST with its key and the status mapped to
//! an error class, and the SSE loop that feeds a stream's events to an accumulator. A transport
//! says only how its request is made and how its stream folds ([`WireApi`]).

use std::time::Duration;

use eventsource_stream::Eventsource;
use futures_util::StreamExt;

use hermes_core::ReasoningReplay;
use serde_json::Value;

use crate::accumulate::Streamed;
use crate::endpoint::{Endpoint, SendError, Transport};
use crate::{ChatRequest, ChatResponse, DeltaSink, LlmError};

/// Most of an error body that is read (a misbehaving server may send megabytes).
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// How an endpoint's key travels.
#[derive(Debug, Clone, Copy)]
pub(crate) enum KeyHeader {
    /// `Authorization: Bearer <key>` (OpenAI and every server copying it).
    Bearer,
    /// The key as the value of a header of its own (Anthropic's `x-api-key`).
    Named(&'static str),
}

/// One provider API: its request and how its stream folds; every such API is a [`Transport`].
pub(crate) trait WireApi: Send + Sync {
    type Fold: StreamFold + Default + Send;
    /// How the key travels.
    const KEY: KeyHeader;
    /// Whether an answer that is not an event stream is taken whole (servers that ignore
    /// `stream: true`).
    const TAKES_WHOLE_BODY: bool = false;
    /// The streaming request (URL, headers, body) for `request` at `endpoint`.
    fn request(&self, endpoint: &Endpoint, request: &ChatRequest) -> reqwest::RequestBuilder;
}

impl<W: WireApi> Transport for W {
    async fn send(
        &self,
        endpoint: &Endpoint,
        key: Option<&str>,
        request: &ChatRequest,
        sink: &mut dyn DeltaSink,
    ) -> Result<ChatResponse, SendError> {
        let response = post(self.request(endpoint, request), key, W::KEY).await?;
        let mut fold = W::Fold::default();
        if W::TAKES_WHOLE_BODY && !is_event_stream(&response) {
            let text = response.text().await.map_err(|e| SendError::fresh(transport_error(&e)))?;
            fold.push(&text, sink).map_err(SendError::fresh)?;
            return Ok(finished(fold, endpoint));
        }
        let fold = read_events(response, fold, sink).await?;
        Ok(finished(fold, endpoint))
    }
}

/// The answer `fold` holds, with the reasoning to send back stamped with the API and model
/// that wrote it.
fn finished<F: StreamFold>(mut fold: F, endpoint: &Endpoint) -> ChatResponse {
    let items = fold.take_replay();
    let mut response = fold.finish();
    if !items.is_empty() {
        response.message.replay = Some(ReasoningReplay {
            api: endpoint.api_mode,
            base_url: endpoint.base_url.clone(),
            model: endpoint.model.clone(),
            items,
        });
    }
    response
}

fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// Sends `request` (URL, headers and body already set) with `key`; a failed status becomes its
/// error class, with the server's `Retry-After` when it sent one.
async fn post(
    request: reqwest::RequestBuilder,
    key: Option<&str>,
    header: KeyHeader,
) -> Result<reqwest::Response, SendError> {
    let request = match (key, header) {
        (Some(key), KeyHeader::Bearer) => request.bearer_auth(key),
        (Some(key), KeyHeader::Named(name)) => request.header(name, key),
        (None, _) => request,
    };
    let response = request.send().await.map_err(|e| SendError::fresh(transport_error(&e)))?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let text = read_capped(response, ERROR_BODY_LIMIT).await;
    Err(SendError::fresh(LlmError::from_status(status.as_u16(), &text, retry_after)))
}

/// Folds one provider's stream events into its answer.
pub(crate) trait StreamFold {
    /// The event that ends a whole stream, named when the stream closes before it.
    const END: &'static str;
    /// Feeds one event's `data`.
    fn push(&mut self, data: &str, sink: &mut dyn DeltaSink) -> Result<(), LlmError>;
    /// What has been streamed so far: every transport's accumulator keeps one.
    fn streamed(&self) -> &Streamed;
    /// Whether anything reached the sink (after that, a retry would duplicate output).
    fn has_emitted(&self) -> bool {
        self.streamed().emitted
    }
    /// Whether the stream has said all it will: reading stops.
    fn is_done(&self) -> bool {
        self.streamed().done
    }
    /// Whether what arrived is a whole answer when the stream closes.
    fn is_complete(&self) -> bool {
        self.is_done()
    }
    /// Reasoning the provider wants back verbatim on the next call (taken once, before
    /// [`StreamFold::finish`]).
    fn take_replay(&mut self) -> Vec<Value> {
        Vec::new()
    }
    /// The finished response.
    fn finish(self) -> ChatResponse;
}

/// Reads `response`'s server-sent events into `fold` until it ends; the fold, whole.
async fn read_events<F: StreamFold>(
    response: reqwest::Response,
    mut fold: F,
    sink: &mut dyn DeltaSink,
) -> Result<F, SendError> {
    let mut events = response.bytes_stream().eventsource();
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| SendError {
            error: LlmError::network(format!("stream broke: {e}")),
            emitted: fold.has_emitted(),
        })?;
        if event.data.trim().is_empty() {
            continue;
        }
        fold.push(&event.data, sink).map_err(|error| SendError { error, emitted: fold.has_emitted() })?;
        if fold.is_done() {
            break;
        }
    }
    if !fold.is_complete() {
        return Err(SendError {
            error: LlmError::network(format!("stream ended before {}", F::END)),
            emitted: fold.has_emitted(),
        });
    }
    Ok(fold)
}

/// Reads at most `limit` bytes of an error body.
async fn read_capped(response: reqwest::Response, limit: usize) -> String {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        let room = limit.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..room.min(chunk.len())]);
        if body.len() >= limit {
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

pub(crate) fn transport_error(e: &reqwest::Error) -> LlmError {
    if e.is_timeout() { LlmError::timeout() } else { LlmError::network(e.to_string()) }
}
