//! The third-party services' HTTP APIs, each mapped to upstream's shapes: a search hit is
//! `{title, url, description, position}`, an extracted page `{url, title, content, error}`.
//! Keys travel in headers only, so no key is ever in a URL, a log line or an error text.

use serde::Serialize;
use serde_json::{Value, json};

use hermes_config::WebBackend;
use hermes_net_policy::outbound::read_capped;

/// A service answer larger than this is refused (a search is kilobytes; five pages of
/// Markdown a few megabytes).
const MAX_SERVICE_BODY: usize = 16 * 1024 * 1024;

/// One search result, as upstream's `data.web` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchHit {
    pub title: String,
    pub url: String,
    pub description: String,
    pub position: usize,
}

/// One extracted page (or why it could not be).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Page {
    pub url: String,
    pub title: String,
    pub content: String,
    pub error: Option<String>,
}

impl Page {
    pub fn failed(url: &str, error: impl Into<String>) -> Self {
        Self { url: url.to_owned(), error: Some(error.into()), ..Self::default() }
    }
}

/// A service call, ready to send.
pub(crate) struct Call<'a> {
    pub client: &'a reqwest::Client,
    pub backend: WebBackend,
    pub base: &'a str,
    pub key: Option<&'a str>,
}

fn name(backend: WebBackend) -> &'static str {
    match backend {
        WebBackend::Firecrawl => "Firecrawl",
        WebBackend::Tavily => "Tavily",
        WebBackend::Exa => "Exa",
        WebBackend::Searxng => "SearXNG",
        WebBackend::Brave => "Brave Search",
        WebBackend::Builtin => "the built-in extractor",
    }
}

fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or_default().to_owned()
}

fn list<'v>(v: &'v Value, key: &str) -> &'v [Value] {
    v.get(key).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

impl Call<'_> {
    fn with_key(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let Some(key) = self.key else { return request };
        match self.backend {
            WebBackend::Exa => request.header("x-api-key", key),
            WebBackend::Brave => request.header("X-Subscription-Token", key),
            _ => request.bearer_auth(key),
        }
    }

    /// Sends `request` and reads the JSON answer; a failure names the service and the HTTP
    /// status, never the request (which may hold the key).
    async fn json(&self, request: reqwest::RequestBuilder) -> Result<Value, String> {
        let service = name(self.backend);
        let response = self
            .with_key(request.header("Accept", "application/json"))
            .send()
            .await
            .map_err(|e| format!("could not reach {service}: {}", describe(&e)))?;
        let status = response.status();
        if !status.is_success() {
            let hint = match status.as_u16() {
                401 | 403 => " (the key was refused)",
                402 | 429 => " (out of credits or rate-limited)",
                _ => "",
            };
            return Err(format!("{service} returned HTTP {}{hint}", status.as_u16()));
        }
        let body = read_capped(response, MAX_SERVICE_BODY).await.map_err(|e| format!("{service}: {e}"))?;
        serde_json::from_slice(&body).map_err(|_| format!("{service} answered with something that is not JSON"))
    }

    /// Up to `limit` results for `query`.
    pub async fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>, String> {
        let (base, client) = (self.base, self.client);
        let hits: Vec<(String, String, String)> = match self.backend {
            WebBackend::Searxng => {
                let answer = self
                    .json(client.get(with_query(
                        &format!("{base}/search"),
                        &[("q", query), ("format", "json"), ("pageno", "1")],
                    )?))
                    .await?;
                let mut results = list(&answer, "results").to_vec();
                // SearXNG scores its merged results; best first, as upstream sorts them.
                let score = |r: &Value| r.get("score").and_then(Value::as_f64).unwrap_or(0.0);
                results.sort_by(|a, b| score(b).total_cmp(&score(a)));
                results.iter().map(|r| (text(r, "title"), text(r, "url"), text(r, "content"))).collect()
            }
            WebBackend::Brave => {
                // Brave's `count` stops at 20.
                let count = limit.clamp(1, 20).to_string();
                let answer = self
                    .json(
                        client
                            .get(with_query(&format!("{base}/res/v1/web/search"), &[("q", query), ("count", &count)])?),
                    )
                    .await?;
                let web = answer.get("web").cloned().unwrap_or_default();
                list(&web, "results")
                    .iter()
                    .map(|r| (text(r, "title"), text(r, "url"), text(r, "description")))
                    .collect()
            }
            WebBackend::Tavily => {
                let body = json!({ "query": query, "max_results": limit });
                let answer = self.json(client.post(format!("{base}/search")).json(&body)).await?;
                list(&answer, "results")
                    .iter()
                    .map(|r| (text(r, "title"), text(r, "url"), text(r, "content")))
                    .collect()
            }
            WebBackend::Exa => {
                let body = json!({ "query": query, "numResults": limit, "contents": { "highlights": true } });
                let answer = self.json(client.post(format!("{base}/search")).json(&body)).await?;
                list(&answer, "results")
                    .iter()
                    .map(|r| {
                        let highlights: Vec<&str> = list(r, "highlights").iter().filter_map(Value::as_str).collect();
                        (text(r, "title"), text(r, "url"), highlights.join(" "))
                    })
                    .collect()
            }
            WebBackend::Firecrawl => {
                let body = json!({ "query": query, "limit": limit });
                let answer = self.json(client.post(format!("{base}/v2/search")).json(&body)).await?;
                // v2 answers `data.web`; v1 (older self-hosted ones) a bare `data` list.
                let data = answer.get("data").cloned().unwrap_or_default();
                let results = if data.is_array() {
                    data.as_array().cloned().unwrap_or_default()
                } else {
                    list(&data, "web").to_vec()
                };
                results.iter().map(|r| (text(r, "title"), text(r, "url"), text(r, "description"))).collect()
            }
            WebBackend::Builtin => return Err("the built-in extractor cannot search".into()),
        };
        Ok(hits
            .into_iter()
            .filter(|(_, url, _)| !url.is_empty())
            .take(limit)
            .enumerate()
            .map(|(i, (title, url, description))| SearchHit { title, url, description, position: i + 1 })
            .collect())
    }

    /// The pages at `urls`, in their order (a page the service could not read carries its error).
    pub async fn extract(&self, urls: &[String]) -> Result<Vec<Page>, String> {
        let (base, client) = (self.base, self.client);
        let pages = match self.backend {
            WebBackend::Tavily => {
                let answer = self.json(client.post(format!("{base}/extract")).json(&json!({ "urls": urls }))).await?;
                let mut pages: Vec<Page> = list(&answer, "results")
                    .iter()
                    .map(|r| {
                        let content = Some(text(r, "raw_content"))
                            .filter(|c| !c.is_empty())
                            .unwrap_or_else(|| text(r, "content"));
                        Page { url: text(r, "url"), title: text(r, "title"), content, error: None }
                    })
                    .collect();
                for failed in list(&answer, "failed_results") {
                    let error =
                        Some(text(failed, "error")).filter(|e| !e.is_empty()).unwrap_or("extraction failed".into());
                    pages.push(Page::failed(&text(failed, "url"), error));
                }
                pages
            }
            WebBackend::Exa => {
                let answer = self
                    .json(client.post(format!("{base}/contents")).json(&json!({ "urls": urls, "text": true })))
                    .await?;
                list(&answer, "results")
                    .iter()
                    .map(|r| Page {
                        url: text(r, "url"),
                        title: text(r, "title"),
                        content: text(r, "text"),
                        error: None,
                    })
                    .collect()
            }
            WebBackend::Firecrawl => {
                let mut pages = Vec::with_capacity(urls.len());
                for url in urls {
                    let body = json!({ "url": url, "formats": ["markdown"] });
                    pages.push(match self.json(client.post(format!("{base}/v2/scrape")).json(&body)).await {
                        Ok(answer) => {
                            let data = answer.get("data").cloned().unwrap_or_default();
                            let metadata = data.get("metadata").cloned().unwrap_or_default();
                            Page {
                                url: url.clone(),
                                title: text(&metadata, "title"),
                                content: text(&data, "markdown"),
                                error: None,
                            }
                        }
                        Err(e) => Page::failed(url, e),
                    });
                }
                pages
            }
            other => return Err(format!("{} is a search-only backend and cannot extract URL content", name(other))),
        };
        Ok(in_order(urls, pages))
    }
}

/// `url` with `params` as its query string.
fn with_query(url: &str, params: &[(&str, &str)]) -> Result<reqwest::Url, String> {
    reqwest::Url::parse_with_params(url, params).map_err(|_| format!("the service URL {url} is not a URL"))
}

/// `pages` in the order of `urls` (services answer in their own order), with a page for each
/// URL the service left out.
fn in_order(urls: &[String], mut pages: Vec<Page>) -> Vec<Page> {
    let mut ordered = Vec::with_capacity(urls.len());
    for url in urls {
        let found =
            pages.iter().position(|p| &p.url == url || p.url.trim_end_matches('/') == url.trim_end_matches('/'));
        ordered.push(match found {
            Some(i) => pages.remove(i),
            None => Page::failed(url, "the service returned nothing for this URL"),
        });
    }
    ordered
}

/// A transport error's text with its causes (keys travel in headers, so the URL it names
/// holds none).
pub(crate) fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_come_back_in_the_order_asked_and_missing_ones_say_so() {
        let urls = vec!["https://a.test/".to_owned(), "https://b.test/x".to_owned()];
        let pages = vec![Page { url: "https://b.test/x".into(), content: "B".into(), ..Page::default() }];
        let ordered = in_order(&urls, pages);
        assert_eq!(ordered[0].error.as_deref(), Some("the service returned nothing for this URL"));
        assert_eq!(ordered[1].content, "B");
    }
}
