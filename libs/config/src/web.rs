//! The `web` toolset's settings (`[web]`): which search and extract services to use, the
//! operator's keys for them, the page budget and the daily quotas. Upstream's environment
//! variables (`FIRECRAWL_API_KEY`, `SEARXNG_URL`, ...) fill the same fields, so an operator who
//! ran upstream Hermes sets nothing new ([`UPSTREAM_ENV`]).

use serde::{Deserialize, Serialize};

/// A web search or extract service (`web.backend`, `web.search_backend`, `web.extract_backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WebBackend {
    /// Firecrawl's cloud or a self-hosted Firecrawl (`firecrawl_api_url`): search and extract.
    Firecrawl,
    /// Tavily: search and extract.
    Tavily,
    /// Exa: search and extract.
    Exa,
    /// A self-hosted SearXNG (`searxng_url`, no key): search only.
    Searxng,
    /// Brave Search's API: search only.
    #[serde(alias = "brave-free")]
    Brave,
    /// Hermes itself fetches the page (readability, HTML to Markdown, PDFs as text): extract
    /// only, no third-party service.
    Builtin,
}

impl WebBackend {
    /// Upstream's auto-detection order: the first one with credentials is used.
    pub const DETECTION_ORDER: [WebBackend; 5] =
        [WebBackend::Firecrawl, WebBackend::Tavily, WebBackend::Exa, WebBackend::Searxng, WebBackend::Brave];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Firecrawl => "firecrawl",
            Self::Tavily => "tavily",
            Self::Exa => "exa",
            Self::Searxng => "searxng",
            Self::Brave => "brave",
            Self::Builtin => "builtin",
        }
    }

    pub fn searches(self) -> bool {
        self != Self::Builtin
    }

    pub fn extracts(self) -> bool {
        matches!(self, Self::Firecrawl | Self::Tavily | Self::Exa | Self::Builtin)
    }
}

/// Environment variables upstream Hermes reads, and the setting each one fills.
pub const UPSTREAM_ENV: [(&str, &str); 13] = [
    ("FIRECRAWL_API_KEY", "web.firecrawl_api_key"),
    ("FIRECRAWL_API_URL", "web.firecrawl_api_url"),
    ("TAVILY_API_KEY", "web.tavily_api_key"),
    ("TAVILY_BASE_URL", "web.tavily_base_url"),
    ("EXA_API_KEY", "web.exa_api_key"),
    ("SEARXNG_URL", "web.searxng_url"),
    ("BRAVE_SEARCH_API_KEY", "web.brave_api_key"),
    ("GROQ_API_KEY", "stt.groq_api_key"),
    ("VOICE_TOOLS_OPENAI_KEY", "stt.openai_api_key"),
    ("FAL_KEY", "image_gen.fal_key"),
    ("FAL_IMAGE_MODEL", "image_gen.model"),
    ("ELEVENLABS_API_KEY", "tts.elevenlabs_api_key"),
    ("BROWSER_INACTIVITY_TIMEOUT", "browser.inactivity_seconds"),
];

/// `[web]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct WebConfig {
    /// Both capabilities' service; unset: auto-detected from the keys present.
    pub backend: Option<WebBackend>,
    /// Overrides `backend` for `web_search`.
    pub search_backend: Option<WebBackend>,
    /// Overrides `backend` for `web_extract`; with no extract service `builtin` is used.
    pub extract_backend: Option<WebBackend>,
    pub firecrawl_api_key: Option<String>,
    /// A self-hosted Firecrawl (the key is optional then). Operator-set, so it may be an
    /// in-cluster address.
    pub firecrawl_api_url: Option<String>,
    pub tavily_api_key: Option<String>,
    pub tavily_base_url: String,
    pub exa_api_key: Option<String>,
    pub exa_base_url: String,
    /// A SearXNG instance (with `json` among its `formats`); may be in-cluster.
    pub searxng_url: Option<String>,
    pub brave_api_key: Option<String>,
    pub brave_base_url: String,
    /// Characters of a page `web_extract` returns whole (a call's `char_limit` may change it);
    /// clamped to 2,000–500,000.
    pub extract_char_limit: usize,
    /// Each tenant's searches per UTC day unless its own quota says otherwise (0: no limit).
    pub searches_per_day: u32,
    /// Each tenant's extracted pages per UTC day (0: no limit).
    pub extracts_per_day: u32,
    /// Hosts (`name`, `name:port`, an address) that URLs the model chooses may reach although
    /// they are private: an intranet wiki the operator means to expose. Nothing else private
    /// is fetched for a model.
    pub allow_private_hosts: Vec<String>,
    /// A search or a page fetch gives up after this long.
    pub timeout_seconds: u64,
    /// The built-in extractor downloads at most this much of a page.
    pub max_download_bytes: usize,
}

impl Default for WebConfig {
    fn default() -> Self {
        Self {
            backend: None,
            search_backend: None,
            extract_backend: None,
            firecrawl_api_key: None,
            firecrawl_api_url: None,
            tavily_api_key: None,
            tavily_base_url: "https://api.tavily.com".into(),
            exa_api_key: None,
            exa_base_url: "https://api.exa.ai".into(),
            searxng_url: None,
            brave_api_key: None,
            brave_base_url: "https://api.search.brave.com".into(),
            extract_char_limit: 15_000,
            searches_per_day: 1_000,
            extracts_per_day: 1_000,
            allow_private_hosts: Vec::new(),
            timeout_seconds: 30,
            max_download_bytes: 10 * 1024 * 1024,
        }
    }
}

impl WebConfig {
    /// Whether the operator's settings let `backend` be called: its key, or (SearXNG, a
    /// self-hosted Firecrawl) its URL; the built-in extractor always. A tenant's own key may
    /// make another one callable for its turns.
    pub fn operator_can_call(&self, backend: WebBackend) -> bool {
        let has = |v: &Option<String>| v.as_deref().is_some_and(|v| !v.trim().is_empty());
        match backend {
            WebBackend::Builtin => true,
            WebBackend::Searxng => has(&self.searxng_url),
            WebBackend::Firecrawl => has(&self.firecrawl_api_key) || self.firecrawl_api_url.is_some(),
            WebBackend::Tavily => has(&self.tavily_api_key),
            WebBackend::Exa => has(&self.exa_api_key),
            WebBackend::Brave => has(&self.brave_api_key),
        }
    }

    /// Whether `web_search` works with the operator's settings alone, as the worker chooses
    /// its service: a `search_backend` that cannot search is an error, and otherwise any
    /// search service the operator can call serves (`web_extract` always has the built-in
    /// fetcher, so search is what the `web` toolset needs).
    pub fn searches(&self) -> bool {
        self.search_backend.is_none_or(WebBackend::searches)
            && WebBackend::DETECTION_ORDER.into_iter().any(|b| self.operator_can_call(b))
    }

    /// The keys this section holds, which a dump masks.
    pub(crate) fn keys_mut(&mut self) -> [&mut Option<String>; 4] {
        [&mut self.firecrawl_api_key, &mut self.tavily_api_key, &mut self.exa_api_key, &mut self.brave_api_key]
    }
}
