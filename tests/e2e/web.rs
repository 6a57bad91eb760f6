//! The `web` toolset end to end: a morning-brief cron job searches the web (a scripted
//! SearXNG), reads the top result with the built-in extractor from a real page on the test
//! site, and delivers its brief to a Telegram chat; a team's daily search quota, counted in
//! Redis, stops the next search with a clear tool error; and `execute_code` scripts call the
//! same tools.

use std::sync::Arc;

use serde_json::{Value, json};

use hermes_testkit::ScriptedReply;
use hermes_testkit::web::WebWorld;
use hermes_toolbox::{ExecuteCode, builtin_registry};
use hermes_tools::{Tool, ToolCtx};
use hermes_web::{DailyAllowance, TenantWebKeys, Web, WebExtract, WebSearch, WebTurn};

use crate::harness::{Roles, TestEnv};
use crate::openapi::call;
use crate::sandbox::{Fixture, LocalFixture};
use crate::telegram::{Pod, open_bot, sent};

/// The `tool` messages the model was shown in its request `n`.
fn tool_results(env: &TestEnv, n: usize) -> Vec<String> {
    env.llm.requests()[n].texts_of("tool")
}

#[tokio::test]
async fn a_cron_job_searches_the_web_reads_the_top_result_and_sends_a_brief_to_telegram() {
    let world = WebWorld::start().await.unwrap();
    let (searxng, site) = (world.service("searxng"), world.host());
    let env = TestEnv::start_with(Roles::default(), move |c| {
        c.web.searxng_url = Some(searxng);
        c.web.allow_private_hosts = vec![site];
    })
    .await;
    let (tg, _) = open_bot(&env).await;
    sqlx::query("UPDATE agents SET toolsets = ARRAY['web', 'messaging']").execute(&env.db).await.unwrap();
    let tenant = env.store.tenancy().tenant_by_name("acme").await.unwrap().id;
    let key = env.store.tenancy().create_api_key(tenant, None, "k", None).await.unwrap().1;
    let pod = Pod::start(&env).await;

    let job = json!({"name": "AI brief", "prompt": "Search the news on AI agents, read the top result and send a three-item brief.",
                     "schedule": "0 8 * * *", "deliver": "telegram:42"});
    assert_eq!(call(&env, &key, "post", "/v1/cron/jobs", Some(job)).await.0, 201);
    env.llm.push(ScriptedReply::tool_call("web_search", json!({"query": "AI agents news", "limit": 3})));
    env.llm.push(ScriptedReply::tool_call("web_extract", json!({"urls": [world.page("agents-news")]})));
    env.llm.push(ScriptedReply::text(
        "1. Agents search on a schedule.\n2. They write skills.\n3. They report every morning.",
    ));
    assert_eq!(call(&env, &key, "post", "/v1/cron/jobs/ai brief/run", None).await.0, 202);

    let got = sent(&tg, 1).await;
    assert_eq!(
        got[0].text,
        "⏰ Cron job “AI brief”\n\n1. Agents search on a schedule.\n2. They write skills.\n3. They report every morning."
    );
    let requests = env.llm.requests();
    let offered: Vec<&str> =
        requests[0].body["tools"].as_array().unwrap().iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    assert!(offered.contains(&"web_search") && offered.contains(&"web_extract"), "{offered:?}");
    assert!(!offered.contains(&"send_message"), "a cron run does not message elsewhere");
    let search: Value = serde_json::from_str(&tool_results(&env, 1)[0]).unwrap();
    assert_eq!(search["success"], true);
    assert_eq!(search["data"]["web"][0]["url"], world.page("agents-news"), "SearXNG's best-scored hit first");
    assert_eq!(search["data"]["web"].as_array().unwrap().len(), 3);
    let page: Value = serde_json::from_str(&tool_results(&env, 2)[1]).unwrap();
    let content = page["results"][0]["content"].as_str().unwrap();
    assert!(content.contains("**autonomous agents**") && !content.contains("Cookie preferences"), "{content}");
    let searxng = world.calls().into_iter().find(|c| c.service == "searxng").unwrap();
    assert_eq!(searxng.query["q"], "AI agents news");

    // The team's quota: two searches a day, one of them used. The third search is refused, and the model is told why.
    env.store
        .tenancy()
        .set_web_quotas(tenant, hermes_store::WebQuotas { searches_per_day: Some(2), extracts_per_day: None })
        .await
        .unwrap();
    env.llm.push(ScriptedReply::tool_call("web_search", json!({"query": "more news"})));
    env.llm.push(ScriptedReply::tool_call("web_search", json!({"query": "even more news"})));
    env.llm.push(ScriptedReply::text("Only one search today."));
    assert_eq!(call(&env, &key, "post", "/v1/cron/jobs/ai brief/run", None).await.0, 202);
    sent(&tg, 2).await;
    let results = tool_results(&env, 5);
    assert!(results[0].contains("\"success\": true"), "the day's one search: {}", results[0]);
    assert!(results[1].starts_with("Error: today's search allowance (2) is spent for this team"), "{}", results[1]);
    assert_eq!(world.calls().iter().filter(|c| c.service == "searxng").count(), 2, "the refused one called nothing");
    pod.stop_with(env).await;
}

fn ctx() -> ToolCtx {
    ToolCtx::for_tests("call_web")
}

#[tokio::test]
async fn scripts_call_the_web_tools_and_long_pages_are_paged_with_read_file_in_the_sandbox() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let world = WebWorld::start().await.unwrap();
    let f = LocalFixture::new().await;
    let sandboxes = f.shared();
    let mut registry = builtin_registry(sandboxes.clone(), 30, None);
    let config = hermes_config::WebConfig {
        searxng_url: Some(world.service("searxng")),
        allow_private_hosts: vec![world.host()],
        ..Default::default()
    };
    let web = Arc::new(Web::new(&config, &[]).unwrap());
    let spill = Arc::new(hermes_toolbox::SandboxSpill::new(sandboxes.clone()));
    let turn = Arc::new(WebTurn {
        web,
        keys: TenantWebKeys::default(),
        allowance: Arc::new(DailyAllowance::default()),
        spill: Some(spill),
        condenser: None,
    });
    registry.register(Arc::new(WebSearch(turn.clone())));
    registry.register(Arc::new(WebExtract(turn)));
    let ctx = ctx();

    // execute_code's stubs reach the real tools.
    let code = ExecuteCode::new(sandboxes.clone(), &registry, None);
    let script = r#"
from hermes_tools import web_search, web_extract
hits = web_search("agents", limit=2)["data"]["web"]
page = web_extract([hits[0]["url"]])["results"][0]
print(len(hits), hits[0]["title"])
print("autonomous agents" in page["content"])
"#;
    let out: Value = serde_json::from_str(&code.call(&ctx, json!({ "code": script })).await.unwrap()).unwrap();
    assert_eq!(out["status"], "success", "{out}");
    assert_eq!(out["output"], "2 Agents go to work\nTrue\n");

    // A long page is cut, and the full text waits in the sandbox for read_file.
    let extract = registry.dispatch(&ctx, &call_of("web_extract", json!({"urls": [world.page("long")]}))).await;
    let page: Value = serde_json::from_str(&extract.text).unwrap();
    let content = page["results"][0]["content"].as_str().unwrap();
    let path = "/tmp/hermes-results/call_web-page1.md";
    assert!(content.contains(&format!("read_file(path=\"{path}\", offset=")), "{content}");
    let offset: u64 = content.split("offset=").nth(1).unwrap().split(',').next().unwrap().parse().unwrap();
    let read =
        registry.dispatch(&ctx, &call_of("read_file", json!({"path": path, "offset": offset, "limit": 5}))).await;
    assert!(read.ok, "{}", read.text);
    assert!(read.text.contains("Paragraph"), "the omitted middle is readable: {}", read.text);
}

fn call_of(name: &str, args: Value) -> hermes_core::ToolCall {
    serde_json::from_value(
        json!({"id": "call_web", "type": "function", "function": {"name": name, "arguments": args.to_string()}}),
    )
    .unwrap()
}
