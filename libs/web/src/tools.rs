//! `web_search` and `web_extract` as the model calls them, bound to one turn's tenant keys,
//! its daily allowance and the place long pages are saved.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use hermes_core::{TenantId, ToolsetName};
use hermes_tools::{ResultSpill, ToolCtx, ToolError, required_str};
use hermes_tools::{SimpleTool, ToolSpec, object_schema};

use crate::services::Call;
use crate::{Capability, Page, TenantWebKeys, Web, builtin};
use hermes_tools::window::{budget, render, stored, window};

/// URLs one `web_extract` call takes (upstream's five).
const MAX_URLS: usize = 5;

/// What a call uses up of a tenant's day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metered {
    Search,
    /// One page.
    Extract,
}

impl Metered {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Search => "search",
            Self::Extract => "extract",
        }
    }
}

/// Today's allowance was used up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("today's {what} allowance ({limit}) is spent")]
pub struct QuotaSpent {
    pub what: &'static str,
    pub limit: u32,
}

/// A tenant's daily allowance of searches and pages (the worker's is in Redis, shared by
/// every worker).
pub trait Allowance: Send + Sync {
    /// Takes `n` of `what` from `tenant`'s allowance for today, or says it is spent (then
    /// nothing is taken).
    fn take(&self, tenant: TenantId, what: Metered, n: u32) -> BoxFuture<'_, Result<(), QuotaSpent>>;
}

/// An in-process allowance with fixed limits (0: none), for tests and single-process use.
#[derive(Debug, Default)]
pub struct DailyAllowance {
    pub searches: u32,
    pub extracts: u32,
    used: Mutex<HashMap<(TenantId, Metered), u32>>,
}

impl DailyAllowance {
    pub fn new(searches: u32, extracts: u32) -> Self {
        Self { searches, extracts, used: Mutex::default() }
    }
}

impl Allowance for DailyAllowance {
    fn take(&self, tenant: TenantId, what: Metered, n: u32) -> BoxFuture<'_, Result<(), QuotaSpent>> {
        let limit = match what {
            Metered::Search => self.searches,
            Metered::Extract => self.extracts,
        };
        let outcome = match self.used.lock() {
            Ok(mut used) => {
                let count = used.entry((tenant, what)).or_default();
                if limit > 0 && *count + n > limit {
                    Err(QuotaSpent { what: what.as_str(), limit })
                } else {
                    *count += n;
                    Ok(())
                }
            }
            Err(_) => Ok(()),
        };
        Box::pin(async move { outcome })
    }
}

/// What both tools share within a turn.
pub struct WebTurn {
    pub web: Arc<Web>,
    pub keys: TenantWebKeys,
    pub allowance: Arc<dyn Allowance>,
    /// Where the full text of a cut page goes; `None` when the turn cannot read files back
    /// (then the footer says how to see more instead).
    pub spill: Option<Arc<dyn ResultSpill>>,
    /// Summarises pages over the budget, when the agent's `web_extract` task has models of its
    /// own; `None`: such pages are cut (`crate::condense`).
    pub condenser: Option<Arc<dyn crate::PageCondenser>>,
}

impl WebTurn {
    fn call(&self, capability: Capability) -> Result<Call<'_>, ToolError> {
        let backend = self.web.choose(capability, &self.keys).map_err(ToolError::RespondToModel)?;
        Ok(Call {
            client: &self.web.services,
            backend,
            base: self.web.base_url(backend).unwrap_or_default(),
            key: None,
        })
    }

    async fn take(&self, tenant: TenantId, what: Metered, n: u32) -> Result<(), ToolError> {
        self.allowance.take(tenant, what, n).await.map_err(|spent| {
            ToolError::RespondToModel(format!(
                "{spent} for this team; it renews at 00:00 UTC. Answer with what you already have, \
                 or tell the user the web quota is used up."
            ))
        })
    }
}

pub struct WebSearch(pub Arc<WebTurn>);

impl SimpleTool for WebSearch {
    const SPEC: ToolSpec = ToolSpec::new(
        "web_search",
        ToolsetName::Web,
        "Search the web for information. Returns up to 5 results by default with titles, URLs, and descriptions. \
         The query is passed through to the configured backend, so operators such as site:domain, filetype:pdf, \
         intitle:word, -term, and \"exact phrase\" may work when the backend supports them.",
    )
    .read_only();

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "query": { "type": "string", "description": "The search query to look up on the web. You may include backend-supported operators such as site:example.com, filetype:pdf, intitle:word, -term, or \"exact phrase\"." },
                "limit": { "type": "integer", "description": "Maximum number of results to return. Defaults to 5.", "minimum": 1, "maximum": 100, "default": 5 }
            }),
            &["query"],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let query = required_str(&args, "query")?.trim();
        if query.is_empty() {
            return Err(ToolError::RespondToModel("the query is empty".into()));
        }
        let limit = args.get("limit").and_then(Value::as_u64).map_or(5, |l| l.clamp(1, 100)) as usize;
        let turn = &self.0;
        let mut call = turn.call(Capability::Search)?;
        let key = turn.web.key(call.backend, &turn.keys);
        call.key = key.as_deref();
        turn.take(ctx.tenant_id, Metered::Search, 1).await?;
        let hits = call.search(query, limit).await.map_err(ToolError::RespondToModel)?;
        tracing::info!(backend = call.backend.as_str(), results = hits.len(), "web search");
        let answer = json!({ "success": true, "data": { "web": hits } });
        serde_json::to_string_pretty(&answer).map_err(|e| ToolError::Unavailable(e.to_string()))
    }
}

pub struct WebExtract(pub Arc<WebTurn>);

impl SimpleTool for WebExtract {
    const SPEC: ToolSpec = ToolSpec::new(
        "web_extract",
        ToolsetName::Web,
        "Extract content from web page URLs. Returns page content in markdown format. Also works with PDF URLs \
         (arxiv papers, documents, etc.): pass the PDF link directly and it converts to text. Pages within the \
         character budget (15,000 by default; raise it with char_limit, up to 500,000) come whole; longer ones come \
         as their beginning and end with a [TRUNCATED] footer that says where the full text is saved and how to \
         read the middle with read_file (agents given a web_extract model get a summary of a longer page instead, \
         the full text saved the same way). If a URL fails or needs JavaScript, use the browser tools instead.",
    )
    .read_only()
    // Pages are budgeted here; the result is never saved whole a second time.
    .never_spilled();

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "urls": { "type": "array", "items": { "type": "string" }, "description": "List of URLs to extract content from (max 5 URLs per call)", "maxItems": MAX_URLS },
                "char_limit": { "type": "integer", "description": "Characters of each page to return whole (default 15,000; 2,000 to 500,000).", "minimum": 2000, "maximum": 500000 }
            }),
            &["urls"],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let urls: Vec<String> = match args.get("urls") {
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(|u| u.trim().to_owned()).collect(),
            Some(Value::String(one)) => vec![one.trim().to_owned()],
            _ => return Err(ToolError::RespondToModel("urls must be a list of URLs".into())),
        };
        let urls: Vec<String> = urls.into_iter().filter(|u| !u.is_empty()).take(MAX_URLS).collect();
        if urls.is_empty() {
            return Err(ToolError::RespondToModel("give at least one URL".into()));
        }
        let turn = &self.0;
        let budget = budget(args.get("char_limit").and_then(Value::as_u64), turn.web.config().extract_char_limit);
        // Refused URLs are neither fetched nor handed to a service.
        let mut refused = HashMap::new();
        for url in &urls {
            if let Some(why) = turn.web.refuse_page(url).await {
                refused.insert(url.clone(), format!("Blocked: {why}"));
            }
        }
        let allowed: Vec<String> = urls.iter().filter(|u| !refused.contains_key(*u)).cloned().collect();
        let mut fetched = if allowed.is_empty() { Vec::new() } else { self.fetch(ctx, &allowed).await? };
        let mut results = Vec::with_capacity(urls.len());
        for (i, url) in urls.iter().enumerate() {
            let page = match refused.remove(url) {
                Some(why) => Page::failed(url, why),
                None if !fetched.is_empty() => fetched.remove(0),
                None => Page::failed(url, "not fetched"),
            };
            results.push(self.shown(ctx, page, budget, i + 1).await);
        }
        serde_json::to_string_pretty(&json!({ "results": results })).map_err(|e| ToolError::Unavailable(e.to_string()))
    }
}

impl WebExtract {
    /// The pages at `urls` (all allowed), from the chosen service, or read by the worker when
    /// that service may not be handed URLs ([`crate::Web::hands_urls_to`]); the day's
    /// allowance is taken first.
    async fn fetch(&self, ctx: &ToolCtx, urls: &[String]) -> Result<Vec<Page>, ToolError> {
        let turn = &self.0;
        let mut call = turn.call(Capability::Extract)?;
        turn.take(ctx.tenant_id, Metered::Extract, urls.len() as u32).await?;
        if !turn.web.hands_urls_to(call.backend) {
            tracing::info!(backend = "builtin", configured = call.backend.as_str(), pages = urls.len(), "web extract");
            let max = turn.web.config().max_download_bytes;
            let fetches = urls.iter().map(|u| builtin::fetch(&turn.web.pages, u, max));
            return Ok(futures_util::future::join_all(fetches).await);
        }
        let key = turn.web.key(call.backend, &turn.keys);
        call.key = key.as_deref();
        tracing::info!(backend = call.backend.as_str(), pages = urls.len(), "web extract");
        call.extract(urls).await.map_err(ToolError::RespondToModel)
    }

    /// One page as the model gets it: whole, else summarised or cut, with the full text saved.
    async fn shown(&self, ctx: &ToolCtx, page: Page, budget: usize, n: usize) -> Value {
        let (text, over_cap) = stored(&page.content);
        let cut = window(text, budget);
        let whole = matches!(cut, hermes_tools::window::Window::Whole(_));
        let saved = match (whole, &self.0.spill) {
            (true, _) => Ok(String::new()),
            (false, None) => Err("the turn has no file tools to read it back with".to_owned()),
            (false, Some(spill)) => {
                let name = format!("{}-page{n}.md", ctx.call_id);
                spill.save_as(ctx, &name, text).await.map_err(|e| e.to_string())
            }
        };
        let saved = saved.as_deref().map_err(String::as_str);
        let summary = match &self.0.condenser {
            Some(condenser) if !whole => {
                let summary = crate::condense::summarise(condenser.as_ref(), &page.url, &page.title, text, budget);
                match tokio::time::timeout(crate::condense::SUMMARY_TIMEOUT, summary).await {
                    Ok(Ok(summary)) => Ok(summary),
                    Ok(Err(e)) => {
                        tracing::warn!(error = %e, "cannot summarise the page; cutting it");
                        Err(())
                    }
                    Err(_) => {
                        tracing::warn!("summarising the page took too long; cutting it");
                        Err(())
                    }
                }
            }
            _ => Err(()),
        };
        let mut content = match summary {
            Ok(summary) => crate::condense::render(&summary, saved),
            Err(()) => render(&cut, saved),
        };
        if over_cap {
            content.push_str("\n[Only the first 2,000,000 characters of this page were kept.]");
        }
        json!({ "url": page.url, "title": page.title, "content": content, "error": page.error })
    }
}
