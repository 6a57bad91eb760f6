//! The Chrome DevTools Protocol over Chromium's `--remote-debugging-pipe`: JSON messages
//! ended by a NUL byte, both ways, on any byte stream (here the sandbox program's stdio).
//! Calls carry an id and get the answer with that id; everything else is an event, of which
//! the browser keeps what the tools need: JavaScript dialogs, console messages, uncaught
//! exceptions and page loads.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

/// The most console messages kept (the oldest go first).
const MAX_CONSOLE: usize = 200;
/// The largest message read (a full accessibility tree of a big page, a screenshot).
const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// What went wrong talking to the browser.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CdpError {
    /// The browser is gone (it exited, or its sandbox did).
    #[error("the browser is not running: {0}")]
    Closed(String),
    /// The browser answered the call with an error.
    #[error("{0}")]
    Protocol(String),
    #[error("the browser did not answer within {0} s")]
    Timeout(u64),
}

/// A JavaScript dialog waiting for an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dialog {
    /// `alert`, `confirm`, `prompt` or `beforeunload`.
    pub kind: String,
    pub message: String,
    pub default_prompt: String,
}

/// A console message or an uncaught exception.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleEntry {
    /// `log`, `warning`, `error`, ... or `exception`.
    pub level: String,
    pub text: String,
}

/// What the events told so far.
#[derive(Debug, Default)]
pub(crate) struct PageState {
    pub dialog: Option<Dialog>,
    pub console: Vec<ConsoleEntry>,
    pub loads: u64,
    /// Documents the sandbox's egress proxy refused, by loader id: why.
    pub refused: HashMap<String, String>,
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>>;

/// One connection to a browser.
pub struct Cdp {
    out: mpsc::Sender<Vec<u8>>,
    pending: Pending,
    next_id: AtomicU64,
    pub(crate) state: Arc<Mutex<PageState>>,
    closed: Arc<Mutex<Option<String>>>,
}

impl std::fmt::Debug for Cdp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cdp").finish_non_exhaustive()
    }
}

fn text_of(args: &Value) -> String {
    let parts: Vec<String> = args
        .as_array()
        .map(|a| {
            a.iter()
                .map(|v| match v["value"].as_str() {
                    Some(s) => s.to_owned(),
                    None if !v["value"].is_null() => v["value"].to_string(),
                    None => v["description"].as_str().unwrap_or_default().to_owned(),
                })
                .collect()
        })
        .unwrap_or_default();
    parts.join(" ")
}

impl Cdp {
    /// Speaks CDP over `io`. `ended` says why the other side stopped, when it knows.
    pub fn start<S>(io: S, ended: impl Fn() -> Option<String> + Send + 'static) -> Self
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (mut reader, mut writer) = tokio::io::split(io);
        let (out, mut outgoing) = mpsc::channel::<Vec<u8>>(64);
        hermes_telemetry::tasks::spawn("browser_cdp_writer", async move {
            while let Some(mut message) = outgoing.recv().await {
                message.push(0);
                if writer.write_all(&message).await.is_err() {
                    break;
                }
            }
        });
        let pending: Pending = Arc::default();
        let state: Arc<Mutex<PageState>> = Arc::default();
        let closed: Arc<Mutex<Option<String>>> = Arc::default();
        let (p, s, cl) = (pending.clone(), state.clone(), closed.clone());
        hermes_telemetry::tasks::spawn("browser_cdp_reader", async move {
            let mut buf: Vec<u8> = Vec::new();
            let mut chunk = vec![0u8; 256 * 1024];
            loop {
                let n = match reader.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                buf.extend_from_slice(&chunk[..n]);
                while let Some(end) = buf.iter().position(|b| *b == 0) {
                    let message: Vec<u8> = buf.drain(..=end).collect();
                    if let Ok(value) = serde_json::from_slice::<Value>(&message[..message.len() - 1]) {
                        dispatch(&p, &s, value);
                    }
                }
                if buf.len() > MAX_MESSAGE_BYTES {
                    break;
                }
            }
            let why = ended().unwrap_or_else(|| "it closed the connection".into());
            if let Ok(mut slot) = cl.lock() {
                *slot = Some(why.clone());
            }
            if let Ok(mut pending) = p.lock() {
                for (_, waiter) in pending.drain() {
                    let _ = waiter.send(Err(why.clone()));
                }
            }
        });
        Self { out, pending, next_id: AtomicU64::new(1), state, closed }
    }

    /// Why the connection is over, if it is.
    pub fn closed(&self) -> Option<String> {
        self.closed.lock().ok().and_then(|c| c.clone())
    }

    /// Calls `method` (in the page `session`, or on the browser) and waits `wait` at most.
    pub async fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
        wait: Duration,
    ) -> Result<Value, CdpError> {
        if let Some(why) = self.closed() {
            return Err(CdpError::Closed(why));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        let (tx, rx) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(id, tx);
        }
        let bytes = serde_json::to_vec(&message).map_err(|e| CdpError::Protocol(e.to_string()))?;
        if self.out.send(bytes).await.is_err() {
            return Err(CdpError::Closed(self.closed().unwrap_or_else(|| "it stopped reading".into())));
        }
        let answer = tokio::time::timeout(wait, rx).await;
        if answer.is_err()
            && let Ok(mut pending) = self.pending.lock()
        {
            pending.remove(&id);
        }
        match answer {
            Err(_) => Err(CdpError::Timeout(wait.as_secs())),
            Ok(Err(_)) => Err(CdpError::Closed(self.closed().unwrap_or_default())),
            Ok(Ok(Err(why))) if self.closed().is_some() => Err(CdpError::Closed(why)),
            Ok(Ok(Err(why))) => Err(CdpError::Protocol(why)),
            Ok(Ok(Ok(result))) => Ok(result),
        }
    }
}

/// Routes one message: an answer to its caller, an event into the page state.
fn dispatch(pending: &Pending, state: &Mutex<PageState>, message: Value) {
    if let Some(id) = message["id"].as_u64() {
        let waiter = pending.lock().ok().and_then(|mut p| p.remove(&id));
        if let Some(waiter) = waiter {
            let answer = match message.get("error") {
                Some(error) => Err(error["message"].as_str().unwrap_or("the call failed").to_owned()),
                None => Ok(message["result"].clone()),
            };
            let _ = waiter.send(answer);
        }
        return;
    }
    let params = &message["params"];
    let Ok(mut state) = state.lock() else { return };
    match message["method"].as_str().unwrap_or_default() {
        "Page.javascriptDialogOpening" => {
            state.dialog = Some(Dialog {
                kind: params["type"].as_str().unwrap_or("alert").to_owned(),
                message: params["message"].as_str().unwrap_or_default().to_owned(),
                default_prompt: params["defaultPrompt"].as_str().unwrap_or_default().to_owned(),
            });
        }
        "Page.javascriptDialogClosed" => state.dialog = None,
        "Page.loadEventFired" => state.loads += 1,
        "Network.responseReceived" if params["type"] == "Document" => {
            let refusal = params["response"]["headers"].as_object().and_then(|headers| {
                headers.iter().find(|(name, _)| name.eq_ignore_ascii_case(hermes_sandbox::EGRESS_REFUSED_HEADER))
            });
            if let (Some((_, why)), Some(loader)) = (refusal, params["loaderId"].as_str()) {
                if state.refused.len() >= MAX_CONSOLE {
                    state.refused.clear();
                }
                state.refused.insert(loader.to_owned(), why.as_str().unwrap_or_default().to_owned());
            }
        }
        "Runtime.consoleAPICalled" => {
            let entry = ConsoleEntry {
                level: params["type"].as_str().unwrap_or("log").to_owned(),
                text: text_of(&params["args"]),
            };
            push_console(&mut state, entry);
        }
        "Runtime.exceptionThrown" => {
            let details = &params["exceptionDetails"];
            let text = details["exception"]["description"].as_str().or_else(|| details["text"].as_str()).unwrap_or("");
            push_console(&mut state, ConsoleEntry { level: "exception".into(), text: text.to_owned() });
        }
        _ => {}
    }
}

fn push_console(state: &mut PageState, entry: ConsoleEntry) {
    if state.console.len() >= MAX_CONSOLE {
        state.console.remove(0);
    }
    state.console.push(entry);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn calls_get_their_answers_by_id_and_events_fill_the_page_state() {
        let (ours, mut theirs) = tokio::io::duplex(64 * 1024);
        let cdp = Cdp::start(ours, || None);
        let call = hermes_telemetry::tasks::spawn("browser_cdp_call", async move {
            let answer =
                cdp.call(Some("S1"), "Runtime.evaluate", json!({"expression": "1+1"}), Duration::from_secs(5)).await;
            (answer, cdp)
        });
        let mut got = Vec::new();
        let mut byte = [0u8; 1];
        while theirs.read_exact(&mut byte).await.is_ok() && byte[0] != 0 {
            got.push(byte[0]);
        }
        let sent: Value = serde_json::from_slice(&got).unwrap();
        assert_eq!((sent["method"].as_str(), sent["sessionId"].as_str()), (Some("Runtime.evaluate"), Some("S1")));
        let events = [
            json!({"method": "Page.javascriptDialogOpening", "params": {"type": "confirm", "message": "Sure?"}}),
            json!({"method": "Runtime.consoleAPICalled", "params": {"type": "error", "args": [{"value": "bad"}, {"value": 3}]}}),
            json!({"method": "Network.responseReceived", "params": {"type": "Document", "loaderId": "L1",
                "response": {"status": 403, "headers": {"x-hermes-egress-refused": "not public"}}}}),
            json!({"method": "Network.responseReceived", "params": {"type": "Document", "loaderId": "L2",
                "response": {"status": 403, "headers": {"server": "a site's own 403"}}}}),
            json!({"id": sent["id"], "result": {"result": {"value": 2}}}),
        ];
        for event in events {
            let mut bytes = serde_json::to_vec(&event).unwrap();
            bytes.push(0);
            theirs.write_all(&bytes).await.unwrap();
        }
        let (answer, cdp) = call.await.unwrap();
        assert_eq!(answer.unwrap()["result"]["value"], 2);
        {
            let state = cdp.state.lock().unwrap();
            assert_eq!(
                state.dialog.as_ref().map(|d| (d.kind.as_str(), d.message.as_str())),
                Some(("confirm", "Sure?"))
            );
            assert_eq!(state.console, [ConsoleEntry { level: "error".into(), text: "bad 3".into() }]);
            let refused: Vec<_> = state.refused.iter().collect();
            assert_eq!(refused, [(&"L1".to_owned(), &"not public".to_owned())], "only the proxy's own refusal");
        }
        drop(theirs);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let gone = cdp.call(None, "Browser.getVersion", json!({}), Duration::from_secs(1)).await;
        assert!(matches!(gone, Err(CdpError::Closed(_))), "{gone:?}");
    }
}
