//! The `web` toolset: `web_search` and `web_extract` with upstream Hermes's contracts, over
//! Firecrawl, Tavily, Exa, SearXNG, Brave Search or (for extraction) Hermes's own fetcher.
//!
//! Two HTTP clients, two trust rules. Services the operator configured (a SearXNG or a
//! Firecrawl inside the cluster) are reached by [`Web::services`], which trusts their hosts.
//! Every URL the model chose is reached by [`Web::pages`], which reaches public addresses
//! only (checked on each resolved connection and each redirect hop), except the hosts the
//! operator allowed in `web.allow_private_hosts`. A URL is handed to an extract service to
//! fetch only when that service is its vendor's cloud, and after the same check
//! ([`Web::refuse_page`], [`Web::hands_urls_to`]).

mod builtin;
pub mod condense;
mod services;
mod tools;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use hermes_config::{WebBackend, WebConfig};
use hermes_net_policy::outbound::{Policy, client_for};

pub use condense::PageCondenser;
pub use services::{Page, SearchHit};
pub use tools::{Allowance, DailyAllowance, Metered, QuotaSpent, WebExtract, WebSearch, WebTurn};

/// Where each service is reached when the operator did not say.
const FIRECRAWL_CLOUD: &str = "https://api.firecrawl.dev";

/// The extract services' own clouds, which fetch a page from their network, never ours.
const VENDOR_CLOUDS: [(WebBackend, &str); 3] = [
    (WebBackend::Firecrawl, "api.firecrawl.dev"),
    (WebBackend::Tavily, "api.tavily.com"),
    (WebBackend::Exa, "api.exa.ai"),
];

/// A capability of the web toolset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    Search,
    Extract,
}

/// A tenant's own keys for the web services, each already checked to be allowed to go to the
/// service's host (they override the operator's).
#[derive(Clone, Default)]
pub struct TenantWebKeys(HashMap<WebBackend, String>);

impl std::fmt::Debug for TenantWebKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl FromIterator<(WebBackend, String)> for TenantWebKeys {
    fn from_iter<I: IntoIterator<Item = (WebBackend, String)>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

/// The worker's web services: settings and the two clients, shared by every turn.
pub struct Web {
    config: WebConfig,
    services: reqwest::Client,
    pages: reqwest::Client,
    page_policy: Arc<Policy>,
}

impl std::fmt::Debug for Web {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Web").finish_non_exhaustive()
    }
}

/// The `host:port` of a URL, as the outbound policy lists trusted hosts.
fn authority(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    Some(format!("{}:{}", parsed.host_str()?, parsed.port_or_known_default()?))
}

impl Web {
    /// The web services under `config`; `trusted` are the operator's other private hosts
    /// (`outbound.trusted_private_hosts`), which services may live on too.
    pub fn new(config: &WebConfig, trusted: &[String]) -> Result<Self, reqwest::Error> {
        let timeout = Duration::from_secs(config.timeout_seconds.max(1));
        let connect = timeout.min(Duration::from_secs(10));
        let mut service_hosts: Vec<String> = trusted.to_vec();
        let configured = [config.firecrawl_api_url.as_deref(), config.searxng_url.as_deref()];
        let bases = [config.tavily_base_url.as_str(), config.exa_base_url.as_str(), config.brave_base_url.as_str()];
        service_hosts.extend(configured.into_iter().flatten().chain(bases).filter_map(authority));
        let services = client_for(Arc::new(Policy::trusting(service_hosts)), connect, timeout)?;
        let page_policy = Arc::new(Policy::trusting(&config.allow_private_hosts));
        let pages = client_for(page_policy.clone(), connect, timeout)?;
        Ok(Self { config: config.clone(), services, pages, page_policy })
    }

    pub fn config(&self) -> &WebConfig {
        &self.config
    }

    /// Where `backend` is reached: the operator's URL, else the service's public API.
    pub fn base_url(&self, backend: WebBackend) -> Option<&str> {
        let base = match backend {
            WebBackend::Firecrawl => self.config.firecrawl_api_url.as_deref().unwrap_or(FIRECRAWL_CLOUD),
            WebBackend::Tavily => &self.config.tavily_base_url,
            WebBackend::Exa => &self.config.exa_base_url,
            WebBackend::Brave => &self.config.brave_base_url,
            WebBackend::Searxng => self.config.searxng_url.as_deref()?,
            WebBackend::Builtin => return None,
        };
        Some(base.trim_end_matches('/'))
    }

    /// Whether `backend` is handed the model's URLs to fetch itself: only when it is its
    /// vendor's cloud over https. A service the operator hosts (a self-hosted Firecrawl, or
    /// anything at another URL) may sit where the cluster is reachable, and it follows
    /// redirects and resolves names again: a public page could send it to the metadata address
    /// or an in-cluster service. None of their APIs takes a page's bytes instead (Firecrawl's
    /// `/v2/scrape`, Tavily's `/extract` and Exa's `/contents` take URLs), so for such a service
    /// the worker fetches the page with [`Web::pages`] and reads it with the built-in extractor.
    pub fn hands_urls_to(&self, backend: WebBackend) -> bool {
        let Some(base) = self.base_url(backend).and_then(|b| reqwest::Url::parse(b).ok()) else { return false };
        let cloud = VENDOR_CLOUDS.iter().find(|(b, _)| *b == backend).map(|(_, host)| *host);
        base.scheme() == "https" && cloud.is_some_and(|host| base.host_str() == Some(host))
    }

    /// The key `backend` is called with: the tenant's own, else the operator's.
    fn key(&self, backend: WebBackend, tenant: &TenantWebKeys) -> Option<String> {
        if let Some(own) = tenant.0.get(&backend) {
            return Some(own.clone());
        }
        let operator = match backend {
            WebBackend::Firecrawl => &self.config.firecrawl_api_key,
            WebBackend::Tavily => &self.config.tavily_api_key,
            WebBackend::Exa => &self.config.exa_api_key,
            WebBackend::Brave => &self.config.brave_api_key,
            WebBackend::Searxng | WebBackend::Builtin => return None,
        };
        operator.as_deref().map(str::trim).filter(|k| !k.is_empty()).map(str::to_owned)
    }

    /// Whether `backend` can be called: it has its key, or (SearXNG, a self-hosted Firecrawl)
    /// its URL.
    /// The operator's side is `WebConfig::operator_can_call`, which new agents' default
    /// toolsets follow too.
    fn available(&self, backend: WebBackend, tenant: &TenantWebKeys) -> bool {
        self.config.operator_can_call(backend) || tenant.0.contains_key(&backend)
    }

    /// The service for `capability`, as upstream picks it: the capability's own setting, then
    /// the shared `web.backend`, then the first service with credentials in upstream's order;
    /// extraction falls back to the built-in fetcher. A setting that names a service which
    /// cannot do the capability is an error the model and operator can read.
    pub fn choose(&self, capability: Capability, tenant: &TenantWebKeys) -> Result<WebBackend, String> {
        let (specific, can): (_, fn(WebBackend) -> bool) = match capability {
            Capability::Search => (self.config.search_backend, WebBackend::searches),
            Capability::Extract => (self.config.extract_backend, WebBackend::extracts),
        };
        if let Some(backend) = specific {
            if !can(backend) {
                return Err(match capability {
                    Capability::Search => format!(
                        "{} cannot search; set web.search_backend to firecrawl, tavily, exa, searxng or brave",
                        backend.as_str()
                    ),
                    Capability::Extract => format!(
                        "{} is a search-only backend and cannot extract URL content; set web.extract_backend to firecrawl, tavily, exa or builtin",
                        backend.as_str()
                    ),
                });
            }
            if self.available(backend, tenant) {
                return Ok(backend);
            }
        }
        if let Some(backend) = self.config.backend.filter(|b| can(*b) && self.available(*b, tenant)) {
            return Ok(backend);
        }
        let detected = WebBackend::DETECTION_ORDER.into_iter().find(|b| can(*b) && self.available(*b, tenant));
        match (detected, capability) {
            (Some(backend), _) => Ok(backend),
            (None, Capability::Extract) => Ok(WebBackend::Builtin),
            (None, Capability::Search) => Err("no web search service is configured: the operator sets SEARXNG_URL, \
                 FIRECRAWL_API_KEY, TAVILY_API_KEY, EXA_API_KEY or BRAVE_SEARCH_API_KEY (or the team adds its own key)"
                .into()),
        }
    }

    /// Downloads a file the model named by URL (`vision_analyze`'s images), with the pages'
    /// guard: the same refusals, each redirect re-checked, at most `max_bytes`.
    pub async fn fetch_bytes(&self, url: &str, max_bytes: usize) -> Result<Vec<u8>, String> {
        if let Some(why) = self.refuse_page(url).await {
            return Err(why);
        }
        let response =
            self.pages.get(url).send().await.map_err(|e| format!("could not fetch it: {}", services::describe(&e)))?;
        if !response.status().is_success() {
            return Err(format!("it answered HTTP {}", response.status().as_u16()));
        }
        hermes_net_policy::outbound::read_capped(response, max_bytes).await.map_err(|e| match e {
            hermes_net_policy::outbound::ReadError::TooLarge(max) => {
                format!("it is larger than {} MB", max / (1024 * 1024))
            }
            other => other.to_string(),
        })
    }

    /// Why a URL the model chose may not be fetched (`None`: it may): not http(s), a secret in
    /// it, or a host that is not public (names are resolved and every address checked).
    pub async fn refuse_page(&self, url: &str) -> Option<String> {
        let Ok(parsed) = reqwest::Url::parse(url) else { return Some(format!("`{url}` is not a URL")) };
        if carries_secret(url) {
            return Some(
                "the URL contains what appears to be an API key or token; secrets are never sent in URLs".into(),
            );
        }
        if let Some(why) = self.page_policy.refuse(&parsed) {
            return Some(why);
        }
        let host = parsed.host_str()?.trim_start_matches('[').trim_end_matches(']').to_owned();
        if host.parse::<IpAddr>().is_ok() || self.page_policy.trusts(&host, parsed.port_or_known_default()) {
            return None;
        }
        match tokio::net::lookup_host((host.as_str(), 0)).await {
            Ok(addrs) => {
                let addrs: Vec<_> = addrs.collect();
                match addrs.iter().find(|a| !hermes_net_policy::is_public(a.ip())) {
                    Some(private) => Some(format!("{host} resolves to {} which is not a public address", private.ip())),
                    None if addrs.is_empty() => Some(format!("{host} does not resolve")),
                    None => None,
                }
            }
            Err(_) => Some(format!("{host} does not resolve")),
        }
    }
}

/// Whether `url`, as written or percent-decoded, carries something shaped like a key.
fn carries_secret(url: &str) -> bool {
    let decoded = percent_decode(url);
    [url, decoded.as_str()].iter().any(|u| hermes_tools::text::redact(u, &[]) != *u)
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests;
