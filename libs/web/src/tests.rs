//! The web tools against the test site and scripted services on loopback: the services'
//! shapes and keys, the built-in extractor on real pages, the guard, the budget and the
//! spill, and the daily allowance.

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use hermes_config::{WebBackend, WebConfig};
use hermes_testkit::web::{LONG_PARAGRAPHS, WebWorld, long_paragraph};
use hermes_tools::SimpleTool;
use hermes_tools::{ResultSpill, ToolCtx, ToolError};

use super::*;

fn ctx() -> ToolCtx {
    ToolCtx::for_tests("call_7")
}

/// Keeps what was saved, by name.
#[derive(Default)]
struct Files(Mutex<Vec<(String, String)>>);

impl ResultSpill for Files {
    fn save<'a>(&'a self, ctx: &'a ToolCtx, text: &'a str) -> BoxFuture<'a, Result<String, ToolError>> {
        self.save_as(ctx, &ctx.call_id, text)
    }

    fn save_as<'a>(&'a self, _: &'a ToolCtx, name: &'a str, text: &'a str) -> BoxFuture<'a, Result<String, ToolError>> {
        self.0.lock().unwrap().push((name.to_owned(), text.to_owned()));
        Box::pin(async move { Ok(format!("/tmp/hermes-results/{name}")) })
    }
}

/// The services of `world`, with the test site allowed for the model's URLs.
fn config(world: &WebWorld) -> WebConfig {
    WebConfig {
        tavily_base_url: world.service("tavily"),
        exa_base_url: world.service("exa"),
        brave_base_url: world.service("brave"),
        allow_private_hosts: vec![world.host()],
        max_download_bytes: 2 * 1024 * 1024,
        ..WebConfig::default()
    }
}

struct Harness {
    turn: Arc<WebTurn>,
    files: Arc<Files>,
    /// One tenant's calls.
    ctx: ToolCtx,
}

fn harness(config: WebConfig, keys: TenantWebKeys, allowance: DailyAllowance) -> Harness {
    summarising(config, keys, allowance, None)
}

/// [`harness`] whose long pages `condenser` summarises.
fn summarising(
    config: WebConfig,
    keys: TenantWebKeys,
    allowance: DailyAllowance,
    condenser: Option<Arc<dyn PageCondenser>>,
) -> Harness {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let files = Arc::new(Files::default());
    let web = Arc::new(Web::new(&config, &[]).unwrap());
    let turn = Arc::new(WebTurn { web, keys, allowance: Arc::new(allowance), spill: Some(files.clone()), condenser });
    Harness { turn, files, ctx: ctx() }
}

impl Harness {
    async fn search(&self, query: &str, limit: u64) -> Result<Value, ToolError> {
        let out = WebSearch(self.turn.clone()).run(&self.ctx, json!({"query": query, "limit": limit})).await?;
        Ok(serde_json::from_str(&out).unwrap())
    }

    async fn extract(&self, args: Value) -> Result<Vec<Value>, ToolError> {
        let out = WebExtract(self.turn.clone()).run(&self.ctx, args).await?;
        let parsed: Value = serde_json::from_str(&out).unwrap();
        Ok(parsed["results"].as_array().unwrap().clone())
    }
}

fn message(e: ToolError) -> String {
    match e {
        ToolError::RespondToModel(m) | ToolError::Unavailable(m) => m,
        ToolError::Park(_) => "parked".into(),
    }
}

#[test]
fn the_service_is_chosen_as_upstream_does_and_extraction_always_has_one() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let base = WebConfig { searxng_url: Some("http://searxng:8080".into()), ..WebConfig::default() };
    let web = Web::new(&base, &[]).unwrap();
    let none = TenantWebKeys::default();
    assert_eq!(web.choose(Capability::Search, &none), Ok(WebBackend::Searxng));
    assert_eq!(web.choose(Capability::Extract, &none), Ok(WebBackend::Builtin), "SearXNG cannot extract");

    // Firecrawl comes first in upstream's order; a team's own Tavily key counts as configured.
    let both = WebConfig { firecrawl_api_url: Some("http://firecrawl:3002".into()), ..base.clone() };
    let web = Web::new(&both, &[]).unwrap();
    assert_eq!(web.choose(Capability::Search, &none), Ok(WebBackend::Firecrawl));
    let web = Web::new(&base, &[]).unwrap();
    let team = TenantWebKeys::from_iter([(WebBackend::Tavily, "tvly-team".to_owned())]);
    assert_eq!(web.choose(Capability::Search, &team), Ok(WebBackend::Tavily));
    assert_eq!(web.choose(Capability::Extract, &team), Ok(WebBackend::Tavily));

    // Per capability beats shared; naming a search-only service for extraction is an error.
    let split = WebConfig {
        backend: Some(WebBackend::Searxng),
        extract_backend: Some(WebBackend::Builtin),
        tavily_api_key: Some("tvly-op".into()),
        ..base.clone()
    };
    let web = Web::new(&split, &[]).unwrap();
    assert_eq!(web.choose(Capability::Search, &none), Ok(WebBackend::Searxng));
    assert_eq!(web.choose(Capability::Extract, &none), Ok(WebBackend::Builtin));
    let wrong = WebConfig { extract_backend: Some(WebBackend::Searxng), ..base.clone() };
    let err = Web::new(&wrong, &[]).unwrap().choose(Capability::Extract, &none).unwrap_err();
    assert!(err.contains("search-only") && err.contains("web.extract_backend"), "{err}");

    let bare = Web::new(&WebConfig::default(), &[]).unwrap();
    let err = bare.choose(Capability::Search, &none).unwrap_err();
    assert!(err.contains("SEARXNG_URL") && err.contains("TAVILY_API_KEY"), "{err}");
}

#[tokio::test]
async fn every_search_service_answers_in_upstreams_shape_with_its_key_in_its_header() {
    let world = WebWorld::start().await.unwrap();
    let cases = [
        (WebConfig { searxng_url: Some(world.service("searxng")), ..config(&world) }, "searxng", None),
        (
            WebConfig { brave_api_key: Some("brave-op".into()), ..config(&world) },
            "brave",
            Some(("x-subscription-token", "brave-op")),
        ),
        (
            WebConfig { tavily_api_key: Some("tvly-op".into()), ..config(&world) },
            "tavily",
            Some(("authorization", "Bearer tvly-op")),
        ),
        (WebConfig { exa_api_key: Some("exa-op".into()), ..config(&world) }, "exa", Some(("x-api-key", "exa-op"))),
        (WebConfig { firecrawl_api_url: Some(world.service("firecrawl")), ..config(&world) }, "firecrawl", None),
    ];
    for (cfg, service, key) in cases {
        let h = harness(cfg, TenantWebKeys::default(), DailyAllowance::default());
        let answer = h.search("ai agents", 2).await.unwrap();
        assert_eq!(answer["success"], true, "{service}: {answer}");
        let web = answer["data"]["web"].as_array().unwrap();
        assert_eq!(web.len(), 2, "{service}: the limit holds");
        assert_eq!(web[0]["position"], 1);
        assert_eq!(web[1]["position"], 2);
        for hit in web {
            assert!(hit["url"].as_str().unwrap().starts_with(&world.url("/site/")), "{service}: {hit}");
            assert!(hit["title"].is_string() && hit["description"].is_string());
        }
        let call = world.calls().into_iter().rev().find(|c| c.service == service).unwrap();
        if let Some((header, value)) = key {
            assert_eq!(call.headers.get(header).map(String::as_str), Some(value), "{service}");
        }
        assert!(!call.path.contains("op"), "keys never ride in URLs: {}", call.path);
        if service == "searxng" {
            // SearXNG's results are ranked by their score.
            assert_eq!(web[0]["title"], "Agents go to work");
            assert_eq!(web[0]["description"], "News about ai agents.");
            assert_eq!(web[1]["title"], "The long read");
        }
    }
}

#[tokio::test]
async fn a_teams_own_key_is_used_before_the_operators_and_a_refused_key_is_a_clear_error() {
    let world = WebWorld::start().await.unwrap();
    let cfg = WebConfig { tavily_api_key: Some("tvly-op".into()), ..config(&world) };
    let team = TenantWebKeys::from_iter([(WebBackend::Tavily, "tvly-team".to_owned())]);
    harness(cfg.clone(), team, DailyAllowance::default()).search("x", 5).await.unwrap();
    let call = world.calls().pop().unwrap();
    assert_eq!(call.headers["authorization"], "Bearer tvly-team");

    let revoked = TenantWebKeys::from_iter([(WebBackend::Tavily, "revoked".to_owned())]);
    let err = message(harness(cfg, revoked, DailyAllowance::default()).search("x", 5).await.unwrap_err());
    assert_eq!(err, "Tavily returned HTTP 401 (the key was refused)");
}

#[tokio::test]
async fn the_built_in_extractor_reads_real_pages_as_markdown_and_pdfs_as_text() {
    let world = WebWorld::start().await.unwrap();
    let h = harness(config(&world), TenantWebKeys::default(), DailyAllowance::default());
    let urls = [world.page("agents-news"), world.page("report.pdf"), world.page("notes.txt"), world.page("hop")];
    let pages = h.extract(json!({ "urls": urls })).await.unwrap();
    assert_eq!(pages.len(), 4);
    let news = pages[0]["content"].as_str().unwrap();
    assert_eq!(pages[0]["error"], Value::Null);
    assert!(pages[0]["title"].as_str().unwrap().contains("Agents go to work"));
    assert!(news.contains("**autonomous agents**") && news.contains("## Three things that changed"), "{news}");
    assert!(news.contains(&format!("({})", world.page("long"))), "links are absolute: {news}");
    assert!(!news.contains("Cookie preferences") && !news.contains("Sign in"), "no page chrome: {news}");
    let pdf = pages[1]["content"].as_str().unwrap();
    assert!(pdf.contains("Quarterly agent report") && pdf.contains("Median cold start: 150 ms"), "{pdf}");
    assert_eq!(pages[2]["content"], "plain notes\nsecond line\n");
    assert_eq!(pages[3]["content"], pages[0]["content"], "a redirect within the allowed site is followed");
    assert_eq!(pages[3]["url"], world.page("hop"), "results keep the URL asked for");
}

#[tokio::test]
async fn private_addresses_are_refused_directly_and_after_a_redirect_and_endless_bodies_are_cut() {
    let world = WebWorld::start().await.unwrap();
    let h = harness(config(&world), TenantWebKeys::default(), DailyAllowance::default());
    let port = world.host().rsplit_once(':').unwrap().1.to_owned();
    let urls = [
        world.page("to-private"),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        format!("http://localhost:{port}/site/agents-news"),
        world.page("huge"),
        world.page("notes.txt?api_key=sk-proj-abcdefghijklmnopqrstuvwxyz0123"),
    ];
    let pages = h.extract(json!({ "urls": urls })).await.unwrap();
    let errors: Vec<&str> = pages.iter().map(|p| p["error"].as_str().unwrap_or("")).collect();
    assert!(errors[0].contains("refused address") && errors[0].contains("169.254.169.254"), "{}", errors[0]);
    assert!(errors[1].starts_with("Blocked:") && errors[1].contains("not a public address"), "{}", errors[1]);
    assert!(errors[2].starts_with("Blocked:") && errors[2].contains("localhost"), "a name is resolved: {}", errors[2]);
    assert_eq!(errors[3], "the page is larger than 2 MB; it was not read");
    assert!(errors[4].contains("API key or token"), "{}", errors[4]);
    assert!(pages.iter().all(|p| p["content"] == ""), "nothing from refused pages");

    let odd =
        h.extract(json!({ "urls": [world.page("app"), world.page("image.png"), world.page("gone")] })).await.unwrap();
    assert!(odd[0]["error"].as_str().unwrap().contains("browser tools"), "{}", odd[0]);
    assert!(odd[1]["error"].as_str().unwrap().starts_with("not a text page (image/png)"), "{}", odd[1]);
    assert_eq!(odd[2]["error"], "the page answered HTTP 404");
}

#[tokio::test]
async fn a_long_page_comes_as_head_and_tail_with_the_full_text_saved_for_read_file() {
    let world = WebWorld::start().await.unwrap();
    let h = harness(config(&world), TenantWebKeys::default(), DailyAllowance::default());
    let pages = h.extract(json!({ "urls": [world.page("long")] })).await.unwrap();
    let content = pages[0]["content"].as_str().unwrap();
    let (shown, footer) = content.split_once("\n\n[TRUNCATED: ").unwrap();
    let shown_chars = shown.chars().count();
    assert!(
        (14_700..15_100).contains(&shown_chars),
        "the default budget (cut on lines), plus the marker: {shown_chars}"
    );
    assert!(shown.contains(&long_paragraph(1)) && shown.contains(&long_paragraph(LONG_PARAGRAPHS)));
    assert!(!shown.contains(&long_paragraph(200)), "the middle is left out");
    assert!(footer.contains("/tmp/hermes-results/call_7-page1.md"), "{footer}");
    assert!(footer.contains("read_file(path=\"/tmp/hermes-results/call_7-page1.md\", offset="), "{footer}");
    let saved = h.files.0.lock().unwrap().clone();
    assert_eq!(saved.len(), 1);
    assert_eq!(saved[0].0, "call_7-page1.md");
    assert!((1..=LONG_PARAGRAPHS).all(|n| saved[0].1.contains(&long_paragraph(n))), "the saved text is whole");

    // A larger char_limit returns it whole, and nothing is saved.
    let pages = h.extract(json!({ "urls": [world.page("long")], "char_limit": 200_000 })).await.unwrap();
    assert!(!pages[0]["content"].as_str().unwrap().contains("[TRUNCATED"));
    assert_eq!(h.files.0.lock().unwrap().len(), 1);
}

/// A scripted summariser: answers `summary N` (the Nth call), or fails the calls `fails` picks
/// by their kind and text; keeps what it was asked.
struct Condenser {
    asked: Mutex<Vec<(&'static str, String)>>,
    fails: fn(&str, &str) -> bool,
}

impl Condenser {
    fn new(fails: fn(&str, &str) -> bool) -> Arc<Self> {
        Arc::new(Self { asked: Mutex::default(), fails })
    }

    fn asked(&self) -> Vec<(&'static str, String)> {
        self.asked.lock().unwrap().clone()
    }
}

impl PageCondenser for Condenser {
    fn condense<'a>(&'a self, instructions: &'a str, text: String, _: u32) -> BoxFuture<'a, Result<String, String>> {
        let kind = if instructions.contains("one section") {
            "section"
        } else if instructions.contains("Join them") {
            "join"
        } else {
            "page"
        };
        let failed = (self.fails)(kind, &text);
        let mut asked = self.asked.lock().unwrap();
        asked.push((kind, text));
        let n = asked.len();
        Box::pin(async move { if failed { Err("overloaded".into()) } else { Ok(format!("summary {n}")) } })
    }
}

#[tokio::test]
async fn with_a_web_extract_model_a_long_page_comes_summarised_with_the_exact_text_saved() {
    let world = WebWorld::start().await.unwrap();
    let condenser = Condenser::new(|_, _| false);
    let h = summarising(config(&world), TenantWebKeys::default(), DailyAllowance::default(), Some(condenser.clone()));
    let pages = h.extract(json!({ "urls": [world.page("long")] })).await.unwrap();
    let content = pages[0]["content"].as_str().unwrap();
    assert!(content.starts_with("[SUMMARY of this "), "{content}");
    assert!(content.contains("saved at /tmp/hermes-results/call_7-page1.md"), "{content}");
    assert!(content.ends_with("]\n\nsummary 1"), "{content}");
    let asked = condenser.asked();
    assert_eq!(asked.len(), 1, "one call for a page of one section");
    assert!(asked[0].1.starts_with(&format!("Title: The long read\nSource: {}", world.page("long"))));
    assert!(asked[0].1.contains(&long_paragraph(200)), "the summariser reads the whole page, middle included");
    assert!((1..=LONG_PARAGRAPHS).all(|n| h.files.0.lock().unwrap()[0].1.contains(&long_paragraph(n))));

    // A page within the budget comes whole, unsummarised.
    let pages = h.extract(json!({ "urls": [world.page("long")], "char_limit": 200_000 })).await.unwrap();
    assert!(pages[0]["content"].as_str().unwrap().contains(&long_paragraph(200)));
    assert_eq!(condenser.asked().len(), 1);

    // A summariser that fails leaves the page cut as without one.
    let failing = Condenser::new(|_, _| true);
    let h = summarising(config(&world), TenantWebKeys::default(), DailyAllowance::default(), Some(failing));
    let pages = h.extract(json!({ "urls": [world.page("long")] })).await.unwrap();
    assert!(pages[0]["content"].as_str().unwrap().contains("\n\n[TRUNCATED: "));
}

#[tokio::test]
async fn a_very_long_page_is_summarised_in_sections_then_joined_and_says_how_much_was_read() {
    use crate::condense::{MAX_SECTIONS, SECTION_BYTES, render, summarise};
    let line = |n: usize| format!("line {n:06} {}\n", "x".repeat(87));
    let text: String = (0..5_000).map(line).collect();
    assert_eq!(text.chars().count(), 500_000);
    let condenser = Condenser::new(|_, _| false);
    let summary = summarise(condenser.as_ref(), "https://example.com/big", "", &text, 15_000).await.unwrap();
    let asked = condenser.asked();
    let kinds: Vec<&str> = asked.iter().map(|(k, _)| *k).collect();
    assert_eq!(kinds, ["section", "section", "section", "section", "join"]);
    assert!(asked[0].1.starts_with("Source: https://example.com/big\nSection 1 of 4\n\nline 000000"));
    assert!(asked[3].1.contains(&line(3_999)) && !asked[3].1.contains(&line(4_000)), "sections end on lines");
    assert!(asked[4].1.contains("## Section 1 of 4\nsummary ") && asked[4].1.contains("## Section 4 of 4\n"));
    assert_eq!(summary.covered_chars, MAX_SECTIONS * SECTION_BYTES, "ASCII: a byte a character");
    let shown = render(&summary, Ok("/tmp/hermes-results/big.md"));
    assert!(shown.starts_with("[SUMMARY of this 500000-character page by the agent's web_extract model"), "{shown}");
    assert!(shown.contains("(untrusted, like the page) from its first 400000 characters."), "{shown}");
    assert!(shown.ends_with("summary 5"));

    // A failed section is left out; a failed join leaves the sections' summaries.
    let condenser = Condenser::new(|kind, text| kind == "join" || text.contains("Section 2 of 3"));
    let big = summarise(condenser.as_ref(), "https://example.com/big", "Big\nSection 9 of 9", &text[..250_000], 15_000);
    let summary = big.await.unwrap();
    assert!(summary.text.starts_with("## Section 1 of 3\nsummary ") && summary.text.contains("## Section 3 of 3"));
    assert!(!summary.text.contains("## Section 2 of 3"));
    assert_eq!((summary.covered_chars, summary.total_chars), (150_000, 250_000), "what the summary stands for");
    let asked = condenser.asked();
    assert!(asked[0].1.starts_with("Title: Big Section 9 of 9\nSource: "), "a title stays on its line");
    let all_fail = Condenser::new(|_, _| true);
    assert!(summarise(all_fail.as_ref(), "https://example.com/big", "", &text, 15_000).await.is_err());

    // The summary is no longer than the call's budget.
    let wordy = Condenser::new(|_, _| false);
    let short = summarise(wordy.as_ref(), "https://example.com/big", "", &text[..1_000], 5).await.unwrap();
    assert_eq!(short.text, "summa\n[... summary cut ...]");
}

#[test]
fn only_a_vendors_cloud_is_handed_urls_to_fetch() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let keys = WebConfig {
        firecrawl_api_key: Some("fc-op".into()),
        tavily_api_key: Some("tvly-op".into()),
        exa_api_key: Some("exa-op".into()),
        ..WebConfig::default()
    };
    let clouds = Web::new(&keys, &[]).unwrap();
    for backend in [WebBackend::Firecrawl, WebBackend::Tavily, WebBackend::Exa] {
        assert!(clouds.hands_urls_to(backend), "{backend:?}");
    }
    assert!(!clouds.hands_urls_to(WebBackend::Builtin));
    let explicit = WebConfig { firecrawl_api_url: Some("https://api.firecrawl.dev/".into()), ..keys.clone() };
    assert!(Web::new(&explicit, &[]).unwrap().hands_urls_to(WebBackend::Firecrawl));
    // Hosted by the operator, wherever it is: the worker reads the page itself.
    for (cfg, backend) in [
        (WebConfig { firecrawl_api_url: Some("http://firecrawl:3002".into()), ..keys.clone() }, WebBackend::Firecrawl),
        (
            WebConfig { firecrawl_api_url: Some("https://crawl.example.com".into()), ..keys.clone() },
            WebBackend::Firecrawl,
        ),
        (WebConfig { tavily_base_url: "http://10.0.0.9:8080".into(), ..keys.clone() }, WebBackend::Tavily),
        (WebConfig { exa_base_url: "http://api.exa.ai".into(), ..keys.clone() }, WebBackend::Exa),
    ] {
        assert!(!Web::new(&cfg, &[]).unwrap().hands_urls_to(backend), "{cfg:?}");
    }
}

#[tokio::test]
async fn extraction_services_answer_in_order_and_one_the_operator_hosts_is_handed_no_url() {
    let world = WebWorld::start().await.unwrap();
    for (cfg, backend) in [
        (WebConfig { tavily_api_key: Some("tvly-op".into()), ..config(&world) }, WebBackend::Tavily),
        (WebConfig { exa_api_key: Some("exa-op".into()), ..config(&world) }, WebBackend::Exa),
        (WebConfig { firecrawl_api_url: Some(world.service("firecrawl")), ..config(&world) }, WebBackend::Firecrawl),
    ] {
        let service = backend.as_str();
        let h = harness(cfg, TenantWebKeys::default(), DailyAllowance::default());
        // The services' shapes, as their clouds answer them.
        let web = &h.turn.web;
        let key = web.key(backend, &TenantWebKeys::default());
        let base = web.base_url(backend).unwrap();
        let call = crate::services::Call { client: &web.services, backend, base, key: key.as_deref() };
        let urls = [world.page("agents-news"), world.page("long")];
        let pages = call.extract(&urls).await.unwrap();
        assert_eq!(pages[0].content, format!("# Extracted by {service}\n\nThe page at {}.", urls[0]), "{service}");
        assert_eq!(pages[1].content, format!("# Extracted by {service}\n\nThe page at {}.", urls[1]), "{service}");

        // Here it runs on the operator's own host: the tool hands it nothing and reads the pages itself.
        let before = world.calls().iter().filter(|c| c.service == service).count();
        let urls = [world.page("agents-news"), "http://10.0.0.7/admin".to_owned()];
        let pages = h.extract(json!({ "urls": urls })).await.unwrap();
        assert!(pages[0]["content"].as_str().unwrap().contains("**autonomous agents**"), "{service}: {}", pages[0]);
        assert!(pages[1]["error"].as_str().unwrap().starts_with("Blocked:"), "{service}");
        assert_eq!(world.calls().iter().filter(|c| c.service == service).count(), before, "{service} was called");
    }
}

#[tokio::test]
async fn the_daily_allowance_is_taken_per_search_and_per_page_and_a_spent_one_is_a_clear_error() {
    let world = WebWorld::start().await.unwrap();
    let cfg = WebConfig { searxng_url: Some(world.service("searxng")), ..config(&world) };
    let h = harness(cfg, TenantWebKeys::default(), DailyAllowance::new(1, 2));
    h.search("first", 5).await.unwrap();
    let err = message(h.search("second", 5).await.unwrap_err());
    assert!(err.starts_with("today's search allowance (1) is spent for this team; it renews at 00:00 UTC"), "{err}");
    let before = world.calls().len();
    let three = [world.page("notes.txt"), world.page("agents-news"), world.page("report.pdf")];
    let err = message(h.extract(json!({ "urls": three })).await.unwrap_err());
    assert!(err.starts_with("today's extract allowance (2) is spent"), "{err}");
    h.extract(json!({ "urls": [world.page("notes.txt"), world.page("agents-news")] })).await.unwrap();
    assert_eq!(world.calls().len(), before, "a spent allowance calls nothing");
}

#[tokio::test]
async fn bad_arguments_get_a_clear_answer() {
    let world = WebWorld::start().await.unwrap();
    let h = harness(config(&world), TenantWebKeys::default(), DailyAllowance::default());
    for (args, expected) in [
        (json!({}), "urls must be a list of URLs"),
        (json!({"urls": []}), "give at least one URL"),
        (json!({"urls": 7}), "urls must be a list of URLs"),
    ] {
        assert_eq!(message(h.extract(args).await.unwrap_err()), expected);
    }
    let pages = h.extract(json!({"urls": ["not a url"]})).await.unwrap();
    assert_eq!(pages[0]["error"], "Blocked: `not a url` is not a URL");
    let search = WebSearch(h.turn.clone());
    assert!(message(search.run(&ctx(), json!({"query": "  "})).await.unwrap_err()).contains("empty"));
    let err = message(search.run(&ctx(), json!({"query": "x"})).await.unwrap_err());
    assert!(err.starts_with("no web search service is configured"), "{err}");
}

#[tokio::test]
async fn a_self_hosted_extractor_is_never_handed_a_url_so_a_redirect_cannot_turn_it_inward() {
    use hermes_testkit::fetching_extractor::{CANARY_SECRET, Canary, FetchingExtractor, Redirector};
    let world = WebWorld::start().await.unwrap();
    // The metadata address, say: inside, where the extractor can reach and the worker may not.
    let canary = Canary::start().await.unwrap();
    // The attacker's page, public as far as the worker can tell, answers 302 to the canary.
    let bait = Redirector::start(&canary.url("/latest/meta-data/iam/security-credentials/")).await.unwrap();
    let firecrawl = FetchingExtractor::start().await.unwrap();
    let cfg = WebConfig {
        firecrawl_api_url: Some(firecrawl.base()),
        allow_private_hosts: vec![bait.host(), world.host()],
        ..config(&world)
    };
    let h = harness(cfg, TenantWebKeys::default(), DailyAllowance::default());
    assert_eq!(h.turn.web.choose(Capability::Extract, &TenantWebKeys::default()), Ok(WebBackend::Firecrawl));

    let pages = h.extract(json!({ "urls": [bait.url("/article"), world.page("agents-news")] })).await.unwrap();
    let shown = serde_json::to_string(&pages).unwrap();
    assert!(!shown.contains(CANARY_SECRET), "the inside answer reached the model: {shown}");
    assert_eq!(canary.hits(), 0, "the canary was reached");
    let error = pages[0]["error"].as_str().unwrap_or_default();
    assert!(error.contains("a redirect to a refused address"), "{}", pages[0]);
    // A page that stays outside is read all the same, by the worker.
    assert!(pages[1]["content"].as_str().unwrap().contains("**autonomous agents**"), "{}", pages[1]);
    assert_eq!(firecrawl.asked(), Vec::<String>::new(), "the self-hosted service was handed a URL");
}
