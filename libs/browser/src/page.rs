//! One browser: a Chromium in the agent's sandbox with one page, driven over CDP. Every action
//! that may open a JavaScript dialog (a click, a key, a navigation) returns as soon as one
//! opens, since the page is frozen until it is answered (`browser_dialog`).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::allow::{self, CdpRefusal, Route, Scope};
use crate::cdp::{Cdp, CdpError, ConsoleEntry, Dialog};
use crate::snapshot::{Snapshot, render};

const CALL: Duration = Duration::from_secs(30);
/// How long a navigation may take to load.
const LOAD: Duration = Duration::from_secs(30);
/// How long an action waits for what it set off (a navigation, a dialog) to show.
const SETTLE: Duration = Duration::from_millis(400);

/// Why an action failed, said to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BrowserError {
    #[error("{0}")]
    Cdp(#[from] CdpError),
    /// The model named a ref the last snapshot did not have.
    #[error("{0} is not on the page's last snapshot; call browser_snapshot for fresh refs")]
    UnknownRef(String),
    #[error("{0}")]
    Refused(String),
    /// `browser_cdp` does not send that command.
    #[error(transparent)]
    NotAllowed(#[from] CdpRefusal),
}

/// What an action did: where the page is now, and a dialog it opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub url: String,
    pub title: String,
    pub dialog: Option<Dialog>,
}

impl Outcome {
    pub fn to_json(&self) -> Value {
        let mut out = json!({ "success": true, "url": self.url, "title": self.title });
        if let Some(d) = &self.dialog {
            out["pending_dialog"] = json!({ "type": d.kind, "message": d.message, "default_prompt": d.default_prompt });
            out["note"] =
                json!("A JavaScript dialog is open and the page waits for it: answer it with browser_dialog.");
        }
        out
    }
}

/// A live page.
pub struct Page {
    cdp: Cdp,
    /// The page's own browser context: in memory only, so nothing it stores (cookies,
    /// storage, cache) reaches the disk another conversation's programs can read.
    context: String,
    target: String,
    session: String,
    refs: Mutex<HashMap<String, i64>>,
    last_used: Mutex<Instant>,
}

impl std::fmt::Debug for Page {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Page").field("session", &self.session).finish_non_exhaustive()
    }
}

/// The key's name and virtual key code for `browser_press`.
fn key_code(key: &str) -> Option<(&'static str, i64, Option<&'static str>)> {
    Some(match key.to_ascii_lowercase().as_str() {
        "enter" | "return" => ("Enter", 13, Some("\r")),
        "tab" => ("Tab", 9, None),
        "escape" | "esc" => ("Escape", 27, None),
        "backspace" => ("Backspace", 8, None),
        "delete" => ("Delete", 46, None),
        "space" | " " => (" ", 32, Some(" ")),
        "arrowup" | "up" => ("ArrowUp", 38, None),
        "arrowdown" | "down" => ("ArrowDown", 40, None),
        "arrowleft" | "left" => ("ArrowLeft", 37, None),
        "arrowright" | "right" => ("ArrowRight", 39, None),
        "home" => ("Home", 36, None),
        "end" => ("End", 35, None),
        "pageup" => ("PageUp", 33, None),
        "pagedown" => ("PageDown", 34, None),
        _ => return None,
    })
}

impl Page {
    /// Opens a page, in a new in-memory browser context whose downloads are denied, in the
    /// browser on `cdp`, and turns on the events the tools read.
    pub async fn open(cdp: Cdp) -> Result<Self, BrowserError> {
        let created = cdp.call(None, "Target.createBrowserContext", json!({}), CALL).await?;
        let context = id_in(&created, "browserContextId")?;
        let deny = json!({ "behavior": "deny", "browserContextId": context });
        cdp.call(None, "Browser.setDownloadBehavior", deny, CALL).await?;
        let params = json!({ "url": "about:blank", "browserContextId": context });
        let target = id_in(&cdp.call(None, "Target.createTarget", params, CALL).await?, "targetId")?;
        let attached =
            cdp.call(None, "Target.attachToTarget", json!({ "targetId": target, "flatten": true }), CALL).await?;
        let session = id_in(&attached, "sessionId")?;
        for domain in ["Page.enable", "Runtime.enable", "Network.enable"] {
            cdp.call(Some(&session), domain, json!({}), CALL).await?;
        }
        Ok(Self { cdp, context, target, session, refs: Mutex::default(), last_used: Mutex::new(Instant::now()) })
    }

    /// When it was last used (the pool closes idle pages).
    pub fn idle_for(&self) -> Duration {
        self.last_used.lock().map(|t| t.elapsed()).unwrap_or_default()
    }

    /// Why the browser is gone, if it is.
    pub fn closed(&self) -> Option<String> {
        self.cdp.closed()
    }

    fn touch(&self) {
        if let Ok(mut t) = self.last_used.lock() {
            *t = Instant::now();
        }
    }

    async fn call(&self, method: &str, params: Value) -> Result<Value, BrowserError> {
        self.touch();
        Ok(self.cdp.call(Some(&self.session), method, params, CALL).await?)
    }

    fn dialog(&self) -> Option<Dialog> {
        self.cdp.state.lock().ok().and_then(|s| s.dialog.clone())
    }

    fn loads(&self) -> u64 {
        self.cdp.state.lock().map(|s| s.loads).unwrap_or_default()
    }

    /// Runs `action`; returns early when a dialog opens (the page is frozen until answered).
    async fn or_dialog<T>(
        &self,
        action: impl Future<Output = Result<T, BrowserError>>,
    ) -> Result<Option<T>, BrowserError> {
        tokio::pin!(action);
        loop {
            tokio::select! {
                done = &mut action => return done.map(Some),
                () = tokio::time::sleep(Duration::from_millis(50)) => {
                    if self.dialog().is_some() {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// Waits until a load past `before` (or a dialog), at most `limit`.
    async fn wait_load(&self, before: u64, limit: Duration) {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline && self.loads() <= before && self.dialog().is_none() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Where the page is (unless a dialog holds it).
    pub async fn outcome(&self) -> Result<Outcome, BrowserError> {
        if let Some(dialog) = self.dialog() {
            return Ok(Outcome { url: String::new(), title: String::new(), dialog: Some(dialog) });
        }
        let here = self.evaluate("[location.href, document.title]").await?;
        Ok(Outcome {
            url: here[0].as_str().unwrap_or_default().to_owned(),
            title: here[1].as_str().unwrap_or_default().to_owned(),
            dialog: None,
        })
    }

    /// Goes to `url` (an http(s) page) and waits for it to load.
    pub async fn navigate(&self, url: &str) -> Result<Outcome, BrowserError> {
        let Some(url) = allow::web_url(url) else {
            return Err(CdpRefusal::NotWeb { method: "browser_navigate".into(), url: url.into() }.into());
        };
        let before = self.loads();
        let went = self.or_dialog(self.call("Page.navigate", json!({ "url": url }))).await?;
        if let Some(error) = went.as_ref().and_then(|w| w["errorText"].as_str()).filter(|e| !e.is_empty()) {
            return Err(BrowserError::Refused(format!("the page could not be loaded: {error}")));
        }
        self.wait_load(before, LOAD).await;
        let loader = went.as_ref().and_then(|w| w["loaderId"].as_str()).unwrap_or_default();
        if let Some(why) = self.cdp.state.lock().ok().and_then(|s| s.refused.get(loader).cloned()) {
            return Err(BrowserError::Refused(format!("the sandbox's network rules refused {url}: {why}")));
        }
        self.outcome().await
    }

    /// The page's accessibility snapshot; its refs replace the last ones.
    pub async fn snapshot(&self, full: bool) -> Result<Snapshot, BrowserError> {
        if let Some(dialog) = self.dialog() {
            return Err(BrowserError::Refused(format!(
                "a {} dialog is open (\"{}\"); answer it with browser_dialog first",
                dialog.kind, dialog.message
            )));
        }
        let tree = self.call("Accessibility.getFullAXTree", json!({})).await?;
        let snapshot = render(tree["nodes"].as_array().map(Vec::as_slice).unwrap_or_default(), full);
        if let Ok(mut refs) = self.refs.lock() {
            refs.clone_from(&snapshot.refs);
        }
        Ok(snapshot)
    }

    fn node(&self, reference: &str) -> Result<i64, BrowserError> {
        let key = reference.trim().trim_start_matches('@');
        self.refs
            .lock()
            .ok()
            .and_then(|r| r.get(key).copied())
            .ok_or_else(|| BrowserError::UnknownRef(reference.into()))
    }

    /// Clicks the element `reference` names, as a mouse would (at its centre).
    pub async fn click(&self, reference: &str) -> Result<Outcome, BrowserError> {
        let node = self.node(reference)?;
        let _ = self.call("DOM.scrollIntoViewIfNeeded", json!({ "backendNodeId": node })).await;
        let before = self.loads();
        let clicked = self.or_dialog(async {
            match self.call("DOM.getBoxModel", json!({ "backendNodeId": node })).await {
                Ok(model) => {
                    let q: Vec<f64> = model["model"]["content"]
                        .as_array()
                        .map(|a| a.iter().filter_map(Value::as_f64).collect())
                        .unwrap_or_default();
                    let (x, y) = if q.len() >= 8 { ((q[0] + q[4]) / 2.0, (q[1] + q[5]) / 2.0) } else { (0.0, 0.0) };
                    for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
                        let params = json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 });
                        self.call("Input.dispatchMouseEvent", params).await?;
                    }
                    Ok(())
                }
                // Not laid out (hidden, zero-sized): the DOM's own click.
                Err(_) => self.on_node(node, "function() { this.click(); }").await.map(|_| ()),
            }
        });
        clicked.await?;
        self.wait_load(before, SETTLE).await;
        self.outcome().await
    }

    /// Calls `function` with the node as `this`.
    async fn on_node(&self, node: i64, function: &str) -> Result<Value, BrowserError> {
        let object = self.call("DOM.resolveNode", json!({ "backendNodeId": node })).await?;
        let id = object["object"]["objectId"].clone();
        self.call(
            "Runtime.callFunctionOn",
            json!({ "objectId": id, "functionDeclaration": function, "returnByValue": true }),
        )
        .await
    }

    /// Types `text` into the field `reference` names, clearing it first.
    pub async fn type_text(&self, reference: &str, text: &str) -> Result<Outcome, BrowserError> {
        let node = self.node(reference)?;
        self.call("DOM.focus", json!({ "backendNodeId": node })).await?;
        let clear = "function() { if ('value' in this) { this.value = ''; this.dispatchEvent(new Event('input', {bubbles: true})); } \
                     else if (this.isContentEditable) { this.textContent = ''; } }";
        self.on_node(node, clear).await?;
        self.or_dialog(self.call("Input.insertText", json!({ "text": text }))).await?;
        self.outcome().await
    }

    /// Presses a key on the focused element.
    pub async fn press(&self, key: &str) -> Result<Outcome, BrowserError> {
        let Some((name, code, text)) = key_code(key) else {
            return Err(BrowserError::Refused(format!(
                "{key} is not a key I can press; use Enter, Tab, Escape, Backspace, Delete, Space, ArrowUp, ArrowDown, \
                 ArrowLeft, ArrowRight, Home, End, PageUp or PageDown"
            )));
        };
        let before = self.loads();
        self.or_dialog(async {
            let mut down = json!({ "type": "keyDown", "key": name, "windowsVirtualKeyCode": code, "code": name });
            if let Some(text) = text {
                down["text"] = json!(text);
            }
            self.call("Input.dispatchKeyEvent", down).await?;
            self.call(
                "Input.dispatchKeyEvent",
                json!({ "type": "keyUp", "key": name, "windowsVirtualKeyCode": code, "code": name }),
            )
            .await
        })
        .await?;
        self.wait_load(before, SETTLE).await;
        self.outcome().await
    }

    /// Scrolls most of a screen up or down.
    pub async fn scroll(&self, down: bool) -> Result<Outcome, BrowserError> {
        let by = if down { "0.8" } else { "-0.8" };
        self.evaluate(&format!("window.scrollBy(0, window.innerHeight * {by}), [scrollX, scrollY]")).await?;
        self.outcome().await
    }

    /// Goes back one page in history.
    pub async fn back(&self) -> Result<Outcome, BrowserError> {
        let history = self.call("Page.getNavigationHistory", json!({})).await?;
        let index = history["currentIndex"].as_u64().unwrap_or_default() as usize;
        let Some(entry) = index.checked_sub(1).and_then(|i| history["entries"].get(i)) else {
            return Err(BrowserError::Refused("there is no earlier page to go back to".into()));
        };
        let before = self.loads();
        self.or_dialog(self.call("Page.navigateToHistoryEntry", json!({ "entryId": entry["id"] }))).await?;
        self.wait_load(before, LOAD).await;
        self.outcome().await
    }

    /// `expression`'s value (awaited when a promise), or why it threw.
    pub async fn evaluate(&self, expression: &str) -> Result<Value, BrowserError> {
        let params = json!({ "expression": expression, "returnByValue": true, "awaitPromise": true });
        let answer = self.call("Runtime.evaluate", params).await?;
        if let Some(details) = answer.get("exceptionDetails") {
            let why =
                details["exception"]["description"].as_str().or_else(|| details["text"].as_str()).unwrap_or("it threw");
            return Err(BrowserError::Refused(format!("the expression threw: {why}")));
        }
        Ok(answer["result"]["value"].clone())
    }

    /// A raw CDP call (`browser_cdp`), if the allow-list has it (`crate::allow`): page-level
    /// domains in the conversation's page, `Target.*` and `Browser.*` on the browser, held to
    /// the page's own browser context.
    pub async fn cdp(&self, method: &str, params: Value) -> Result<Value, BrowserError> {
        let scope = Scope { context: &self.context, page: &self.target };
        match allow::check(method, params, scope)? {
            (Route::Browser, params) => {
                self.touch();
                Ok(self.cdp.call(None, method, params, CALL).await?)
            }
            (Route::Page, params) => self.call(method, params).await,
        }
    }

    /// The page's images: URL, alt text and size.
    pub async fn images(&self) -> Result<Value, BrowserError> {
        self.evaluate(
            "[...document.images].slice(0, 100).map(i => ({src: i.currentSrc || i.src, alt: i.alt, \
             width: i.naturalWidth, height: i.naturalHeight}))",
        )
        .await
    }

    /// The console so far (then forgotten, when `clear`).
    pub fn console(&self, clear: bool) -> Vec<ConsoleEntry> {
        let Ok(mut state) = self.cdp.state.lock() else { return Vec::new() };
        if clear { std::mem::take(&mut state.console) } else { state.console.clone() }
    }

    /// Answers the open dialog.
    pub async fn answer_dialog(&self, accept: bool, prompt_text: Option<&str>) -> Result<Dialog, BrowserError> {
        let Some(dialog) = self.dialog() else {
            return Err(BrowserError::Refused("no dialog is open".into()));
        };
        let mut params = json!({ "accept": accept });
        if let Some(text) = prompt_text {
            params["promptText"] = json!(text);
        }
        self.call("Page.handleJavaScriptDialog", params).await?;
        if let Ok(mut state) = self.cdp.state.lock() {
            state.dialog = None;
        }
        Ok(dialog)
    }

    /// A PNG of what the page shows.
    pub async fn screenshot(&self) -> Result<Vec<u8>, BrowserError> {
        use base64::Engine;
        let shot = self.call("Page.captureScreenshot", json!({ "format": "png" })).await?;
        base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap_or_default())
            .map_err(|_| BrowserError::Refused("the screenshot could not be read".into()))
    }

    /// Closes the browser (its process exits; the sandbox stays).
    pub async fn close(&self) {
        let _ = self.cdp.call(None, "Browser.close", json!({}), Duration::from_secs(5)).await;
    }
}

/// The id `field` of a browser's answer.
fn id_in(answer: &Value, field: &str) -> Result<String, BrowserError> {
    answer[field]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| BrowserError::Refused(format!("the browser answered without a {field}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_named_as_upstream_names_them() {
        assert_eq!(key_code("Enter"), Some(("Enter", 13, Some("\r"))));
        assert_eq!(key_code("arrowdown").map(|k| k.1), Some(40));
        assert_eq!(key_code("F13"), None);
    }
}
