//! upstream's `browser_*` tools over [`crate::Browsers`]: refs from the last snapshot (`@e3`),
//! results as JSON with `success`, a failure said in `error`. `browser_vision` lives in the
//! worker, which has the vision model and keeps the screenshot with the turn.

use std::sync::Arc;

use serde_json::{Value, json};

use hermes_core::ToolsetName;
use hermes_tools::window;
use hermes_tools::{ResultSpill, SimpleTool, ToolCtx, ToolError, ToolSpec, object_schema, required_str};

use crate::{BrowserError, BrowserKey, Browsers, CdpRefusal, Page, allow};

/// What the browser tools of one turn share.
pub struct BrowserTurn {
    pub browsers: Arc<Browsers>,
    /// Where a long snapshot is saved whole, when the turn can read files.
    pub spill: Option<Arc<dyn ResultSpill>>,
}

impl BrowserTurn {
    fn key(ctx: &ToolCtx) -> BrowserKey {
        BrowserKey { tenant: ctx.tenant_id, agent: ctx.agent_id, session: ctx.session_id, workspace: ctx.workspace }
    }

    /// The conversation's open browser; the tools other than `browser_navigate` need one.
    pub fn page(&self, ctx: &ToolCtx) -> Result<Arc<Page>, String> {
        self.browsers
            .existing(Self::key(ctx))
            .ok_or_else(|| "no page is open in this conversation: call browser_navigate first".to_owned())
    }
}

fn failed(error: impl std::fmt::Display) -> String {
    json!({ "success": false, "error": error.to_string() }).to_string()
}

fn answer(result: Result<Value, BrowserError>) -> String {
    match result {
        Ok(value) => value.to_string(),
        Err(e) => failed(e),
    }
}

/// Runs `action` on the conversation's page, or says there is none.
async fn on_page<F, Fut>(turn: &BrowserTurn, ctx: &ToolCtx, action: F) -> String
where
    F: FnOnce(Arc<Page>) -> Fut,
    Fut: Future<Output = Result<Value, BrowserError>>,
{
    match turn.page(ctx) {
        Ok(page) => answer(action(page).await),
        Err(why) => failed(why),
    }
}

macro_rules! browser_tool {
    ($name:ident) => {
        pub struct $name(pub Arc<BrowserTurn>);
    };
}

browser_tool!(BrowserNavigate);
browser_tool!(BrowserSnapshot);
browser_tool!(BrowserClick);
browser_tool!(BrowserType);
browser_tool!(BrowserScroll);
browser_tool!(BrowserPress);
browser_tool!(BrowserBack);
browser_tool!(BrowserGetImages);
browser_tool!(BrowserConsole);
browser_tool!(BrowserDialog);
browser_tool!(BrowserCdp);

/// The most of a raw CDP answer the model reads (the snapshot's budget).
const CDP_ANSWER_CHARS: usize = 15_000;

impl SimpleTool for BrowserNavigate {
    const SPEC: ToolSpec = ToolSpec::new(
        "browser_navigate",
        ToolsetName::Browser,
        "Open a URL in the browser (call this first; the browser starts in your sandbox and stays open for this \
         conversation). Use it for pages that need JavaScript or interaction; for reading a page, web_extract is \
         faster. Then call browser_snapshot to see the page's elements and their refs.",
    );

    fn parameters(&self) -> Value {
        object_schema(
            json!({ "url": { "type": "string", "description": "The URL to open (http or https)." } }),
            &["url"],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let url = required_str(&args, "url")?.trim();
        let Ok(parsed) = reqwest::Url::parse(url) else {
            return Err(ToolError::RespondToModel(format!("`{url}` is not a URL")));
        };
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ToolError::RespondToModel("only http:// and https:// pages are opened".into()));
        }
        let page = match self.0.browsers.page(BrowserTurn::key(ctx)).await {
            Ok(page) => page,
            Err(e) => return Ok(failed(e)),
        };
        Ok(answer(page.navigate(url).await.map(|o| o.to_json())))
    }
}

impl SimpleTool for BrowserSnapshot {
    const SPEC: ToolSpec = ToolSpec::new(
        "browser_snapshot",
        ToolsetName::Browser,
        "The page's accessibility tree: each element you can act on has a ref (e.g. [ref=e5]) to pass to \
         browser_click or browser_type as @e5. full=false (default) lists only those elements; full=true shows \
         headings, text and structure too.",
    )
    .read_only();

    fn parameters(&self) -> Value {
        object_schema(
            json!({ "full": { "type": "boolean", "description": "Show the whole page, not only interactive elements.", "default": false } }),
            &[],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let full = args.get("full").and_then(Value::as_bool).unwrap_or(false);
        let page = match self.0.page(ctx) {
            Ok(page) => page,
            Err(why) => return Ok(failed(why)),
        };
        let snapshot = match page.snapshot(full).await {
            Ok(snapshot) => snapshot,
            Err(e) => return Ok(failed(e)),
        };
        let budget = self.0.browsers.config().snapshot_chars.max(window::MIN_BUDGET);
        let cut = window::window(&snapshot.text, budget);
        let saved = match (&cut, &self.0.spill) {
            (window::Window::Whole(_), _) => Ok(String::new()),
            (_, Some(spill)) => spill.save(ctx, &snapshot.text).await.map_err(|e| e.to_string()),
            (_, None) => Err("this conversation cannot read files".to_owned()),
        };
        let text = window::render(&cut, saved.as_deref().map_err(String::as_str));
        let here = page.outcome().await.unwrap_or_else(|_| crate::Outcome {
            url: String::new(),
            title: String::new(),
            dialog: None,
        });
        Ok(json!({
            "success": true,
            "url": here.url,
            "title": here.title,
            "snapshot": text,
            "element_count": snapshot.refs.len(),
        })
        .to_string())
    }
}

impl SimpleTool for BrowserClick {
    const SPEC: ToolSpec = ToolSpec::new(
        "browser_click",
        ToolsetName::Browser,
        "Click an element by its ref from the last browser_snapshot (e.g. @e5).",
    );

    fn parameters(&self) -> Value {
        object_schema(json!({ "ref": { "type": "string", "description": "The element's ref, e.g. @e5." } }), &["ref"])
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let reference = required_str(&args, "ref")?.to_owned();
        Ok(on_page(&self.0, ctx, async |page| page.click(&reference).await.map(|o| o.to_json())).await)
    }
}

impl SimpleTool for BrowserType {
    const SPEC: ToolSpec = ToolSpec::new(
        "browser_type",
        ToolsetName::Browser,
        "Type text into a field by its ref from the last browser_snapshot; the field is cleared first.",
    );

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "ref": { "type": "string", "description": "The field's ref, e.g. @e3." },
                "text": { "type": "string", "description": "The text to type." }
            }),
            &["ref", "text"],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let reference = required_str(&args, "ref")?.to_owned();
        let text = required_str(&args, "text")?.to_owned();
        Ok(on_page(&self.0, ctx, async |page| page.type_text(&reference, &text).await.map(|o| o.to_json())).await)
    }
}

impl SimpleTool for BrowserScroll {
    const SPEC: ToolSpec = ToolSpec::new("browser_scroll", ToolsetName::Browser, "Scroll the page up or down.");

    fn parameters(&self) -> Value {
        object_schema(json!({ "direction": { "type": "string", "enum": ["up", "down"] } }), &["direction"])
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let down = match required_str(&args, "direction")? {
            "down" => true,
            "up" => false,
            _ => return Err(ToolError::RespondToModel("direction is up or down".into())),
        };
        Ok(on_page(&self.0, ctx, async |page| page.scroll(down).await.map(|o| o.to_json())).await)
    }
}

impl SimpleTool for BrowserPress {
    const SPEC: ToolSpec = ToolSpec::new(
        "browser_press",
        ToolsetName::Browser,
        "Press a key on the focused element: Enter, Tab, Escape, ArrowDown, ArrowUp, Backspace, ...",
    );

    fn parameters(&self) -> Value {
        object_schema(json!({ "key": { "type": "string", "description": "The key, e.g. Enter." } }), &["key"])
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let key = required_str(&args, "key")?.to_owned();
        Ok(on_page(&self.0, ctx, async |page| page.press(&key).await.map(|o| o.to_json())).await)
    }
}

impl SimpleTool for BrowserBack {
    const SPEC: ToolSpec = ToolSpec::new("browser_back", ToolsetName::Browser, "Go back to the previous page.");

    fn parameters(&self) -> Value {
        object_schema(json!({}), &[])
    }

    async fn run(&self, ctx: &ToolCtx, _args: Value) -> Result<String, ToolError> {
        Ok(on_page(&self.0, ctx, async |page| page.back().await.map(|o| o.to_json())).await)
    }
}

impl SimpleTool for BrowserGetImages {
    const SPEC: ToolSpec =
        ToolSpec::new("browser_get_images", ToolsetName::Browser, "List the page's images: URL, alt text and size.")
            .read_only();

    fn parameters(&self) -> Value {
        object_schema(json!({}), &[])
    }

    async fn run(&self, ctx: &ToolCtx, _args: Value) -> Result<String, ToolError> {
        Ok(on_page(&self.0, ctx, async |page| {
            let images = page.images().await?;
            let count = images.as_array().map_or(0, Vec::len);
            Ok(json!({ "success": true, "images": images, "count": count }))
        })
        .await)
    }
}

impl SimpleTool for BrowserConsole {
    const SPEC: ToolSpec = ToolSpec::new(
        "browser_console",
        ToolsetName::Browser,
        "The page's console messages and uncaught JavaScript errors (clear=true forgets them after reading), or \
         the value of a JavaScript expression evaluated in the page (expression=...).",
    );

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "clear": { "type": "boolean", "default": false },
                "expression": { "type": "string", "description": "JavaScript to evaluate in the page; its value is returned." }
            }),
            &[],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let clear = args.get("clear").and_then(Value::as_bool).unwrap_or(false);
        let expression = args.get("expression").and_then(Value::as_str).map(str::to_owned);
        Ok(on_page(&self.0, ctx, async |page| {
            if let Some(expression) = expression {
                let value = page.evaluate(&expression).await?;
                return Ok(json!({ "success": true, "result": value }));
            }
            let entries = page.console(clear);
            let (errors, messages): (Vec<_>, Vec<_>) = entries.iter().partition(|e| e.level == "exception");
            let list = |l: &[&crate::ConsoleEntry]| -> Vec<Value> {
                l.iter().map(|e| json!({ "type": e.level, "text": e.text })).collect()
            };
            Ok(json!({
                "success": true,
                "console_messages": list(&messages),
                "js_errors": list(&errors),
                "total_messages": messages.len(),
                "total_errors": errors.len(),
            }))
        })
        .await)
    }
}

impl SimpleTool for BrowserDialog {
    const SPEC: ToolSpec = ToolSpec::new(
        "browser_dialog",
        ToolsetName::Browser,
        "Answer the page's open JavaScript dialog (alert, confirm, prompt): action=accept or dismiss; prompt_text \
         for a prompt().",
    );

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "action": { "type": "string", "enum": ["accept", "dismiss"] },
                "prompt_text": { "type": "string", "description": "The answer to a prompt() dialog." }
            }),
            &["action"],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let accept = match required_str(&args, "action")? {
            "accept" => true,
            "dismiss" => false,
            _ => return Err(ToolError::RespondToModel("action is accept or dismiss".into())),
        };
        let text = args.get("prompt_text").and_then(Value::as_str).map(str::to_owned);
        Ok(on_page(&self.0, ctx, async |page| {
            let dialog = page.answer_dialog(accept, text.as_deref()).await?;
            let here = page.outcome().await?;
            Ok(json!({
                "success": true,
                "dialog": { "type": dialog.kind, "message": dialog.message },
                "action": if accept { "accept" } else { "dismiss" },
                "url": here.url,
                "title": here.title,
            }))
        })
        .await)
    }
}

impl SimpleTool for BrowserCdp {
    const SPEC: ToolSpec = ToolSpec::new(
        "browser_cdp",
        ToolsetName::Browser,
        "Send a raw Chrome DevTools Protocol command to the browser, for what the other browser tools cannot do \
         (e.g. Page.getFrameTree, Emulation.setGeolocationOverride, Network.getCookies, Browser.getVersion). \
         Only page-automation commands are sent (Page, Runtime, DOM, CSS, Input, Accessibility, Emulation, \
         Network cookies and bodies, and Target/Browser commands within this conversation's browser); a refused \
         command's answer lists them. Navigations open http(s) pages only. Returns the command's result.",
    );

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "method": { "type": "string", "description": "The CDP method, Domain.command (e.g. Page.getFrameTree)." },
                "params": { "type": "object", "description": "The command's parameters.", "properties": {}, "additionalProperties": true }
            }),
            &["method"],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let method = required_str(&args, "method")?.trim().to_owned();
        let well_formed = method.split_once('.').is_some_and(|(domain, command)| {
            !domain.is_empty() && !command.is_empty() && method.chars().all(|c| c.is_ascii_alphanumeric() || c == '.')
        });
        if !well_formed {
            return Err(ToolError::RespondToModel("method is Domain.command, e.g. Page.getFrameTree".into()));
        }
        let params = match args.get("params") {
            None | Some(Value::Null) => json!({}),
            Some(p @ Value::Object(_)) => p.clone(),
            Some(_) => return Err(ToolError::RespondToModel("params is an object".into())),
        };
        let page = match self.0.page(ctx) {
            Ok(page) => page,
            Err(why) => return Ok(failed(why)),
        };
        let result = match page.cdp(&method, params).await {
            Ok(result) => result,
            Err(BrowserError::NotAllowed(refusal @ CdpRefusal::NotAllowed(_))) => {
                return Ok(
                    json!({ "success": false, "error": refusal.to_string(), "allowed": allow::allowed() }).to_string()
                );
            }
            Err(e) => return Ok(failed(e)),
        };
        let text = result.to_string();
        if text.chars().count() > CDP_ANSWER_CHARS {
            let head: String = text.chars().take(CDP_ANSWER_CHARS).collect();
            return Ok(json!({ "success": true, "method": method, "result_truncated": head }).to_string());
        }
        Ok(json!({ "success": true, "method": method, "result": result }).to_string())
    }
}

/// Registers the browser tools (not `browser_vision`, the worker's) in `tools`.
pub fn register(turn: Arc<BrowserTurn>, tools: &mut hermes_tools::ToolRegistry) {
    tools.register(Arc::new(BrowserNavigate(turn.clone())));
    tools.register(Arc::new(BrowserSnapshot(turn.clone())));
    tools.register(Arc::new(BrowserClick(turn.clone())));
    tools.register(Arc::new(BrowserType(turn.clone())));
    tools.register(Arc::new(BrowserScroll(turn.clone())));
    tools.register(Arc::new(BrowserPress(turn.clone())));
    tools.register(Arc::new(BrowserBack(turn.clone())));
    tools.register(Arc::new(BrowserGetImages(turn.clone())));
    tools.register(Arc::new(BrowserConsole(turn.clone())));
    tools.register(Arc::new(BrowserDialog(turn.clone())));
    tools.register(Arc::new(BrowserCdp(turn)));
}
