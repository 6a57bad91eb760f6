//! Provider keys and fallbacks end to end: pools shared by workers through a real Redis, a
//! fallback chain that keeps the turn going, and keys that never reach a foreign host.

use std::time::Duration;

use serde_json::Value;

use hermes_cache::Cache;
use hermes_store::{ModelRef, NewAgent};
use hermes_testkit::{ScriptedLlm, ScriptedReply};

use crate::harness::{TestEnv, answer_text, ask};

#[tokio::test]
async fn key_pools_share_strategy_and_cooldowns_across_workers() {
    let env = TestEnv::start_with(crate::harness::Roles { worker: false, scheduler: false }, |_| {}).await;
    let (tenant, _, _) = env.tenant("acme", "a").await;
    let worker_1 = Cache::connect(&env.config.redis.url, &env.config.redis.key_prefix).await.unwrap().key_pools();
    let worker_2 = Cache::connect(&env.config.redis.url, &env.config.redis.key_prefix).await.unwrap().key_pools();
    let keys: Vec<String> = ["k1", "k2", "k3"].iter().map(|s| (*s).to_owned()).collect();

    // fill_first: the first usable key, on every worker; a cooled key is skipped by both.
    assert_eq!(worker_1.select(tenant, "openai", "fill_first", &keys).await.unwrap().as_deref(), Some("k1"));
    worker_1.report(tenant, "openai", "k1", Some(Duration::from_millis(400))).await.unwrap();
    assert_eq!(worker_2.select(tenant, "openai", "fill_first", &keys).await.unwrap().as_deref(), Some("k2"));
    // The 400 ms cooldown must run out: the sleep is the behaviour under test.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        worker_2.select(tenant, "openai", "fill_first", &keys).await.unwrap().as_deref(),
        Some("k1"),
        "cooldown over"
    );

    // round_robin: one position for the whole cluster.
    let mut seen = Vec::new();
    for i in 0..6 {
        let w = if i % 2 == 0 { &worker_1 } else { &worker_2 };
        seen.push(w.select(tenant, "openrouter", "round_robin", &keys).await.unwrap().unwrap());
    }
    assert_eq!(seen, ["k1", "k2", "k3", "k1", "k2", "k3"]);

    // least_used balances; a dead key is never chosen again.
    worker_1.report(tenant, "groq", "k3", None).await.unwrap();
    let mut counts = std::collections::HashMap::new();
    for i in 0..10 {
        let w = if i % 2 == 0 { &worker_1 } else { &worker_2 };
        *counts.entry(w.select(tenant, "groq", "least_used", &keys).await.unwrap().unwrap()).or_insert(0) += 1;
    }
    assert_eq!(counts.get("k1"), Some(&5));
    assert_eq!(counts.get("k2"), Some(&5));
    assert_eq!(counts.get("k3"), None);

    // random stays within the usable keys; a pool with none usable answers None.
    for _ in 0..10 {
        let k = worker_2.select(tenant, "groq", "random", &keys).await.unwrap().unwrap();
        assert_ne!(k, "k3");
    }
    worker_1.report(tenant, "groq", "k1", None).await.unwrap();
    worker_1.report(tenant, "groq", "k2", Some(Duration::from_secs(60))).await.unwrap();
    assert_eq!(worker_2.select(tenant, "groq", "fill_first", &keys).await.unwrap(), None);
    env.stop().await;
}

#[tokio::test]
async fn a_failing_primary_falls_back_to_the_next_model_with_a_pooled_key() {
    let env = TestEnv::start_with(crate::harness::Roles::default(), |c| c.llm.max_retries = 1).await;
    let backup = ScriptedLlm::start().await.unwrap();
    let fallback = ModelRef { base_url: backup.base_url(), model: "backup-model".into(), api_mode: None };
    let resilient = NewAgent { fallbacks: vec![fallback], ..env.new_agent("resilient", "primary-model") };
    let (tenant, _, key) = env.tenant_with("acme", resilient).await;
    // Both scripted servers are on 127.0.0.1: the pool of that host gets a key.
    env.pool_key(tenant, "custom:127.0.0.1", "shared", "pool-secret", "127.0.0.1").await;
    env.llm.push(ScriptedReply::error(503));
    env.llm.push(ScriptedReply::error(503));
    backup.push(ScriptedReply::text("the backup answered"));

    let body = env.answered(&key, "resilient", "hi").await;
    assert_eq!(answer_text(&body), "the backup answered");
    assert_eq!(env.llm.requests().len(), 2, "one try and one retry on the primary");
    let sent = &backup.requests()[0];
    assert_eq!(sent.body["model"], "backup-model");
    assert_eq!(sent.authorization.as_deref(), Some("Bearer pool-secret"));
    // Usage is recorded per answered call, under the model and key that served it.
    let calls: Vec<(String, String, Option<String>, i64, i64)> =
        sqlx::query_as("SELECT purpose, model, key_id, prompt_tokens, completion_tokens FROM model_calls ORDER BY id")
            .fetch_all(&env.db)
            .await
            .unwrap();
    assert_eq!(calls.len(), 1, "the failed calls were not answered: {calls:?}");
    let (purpose, model, key_id, prompt, completion) = &calls[0];
    assert_eq!((purpose.as_str(), model.as_str()), ("main", "backup-model"));
    assert!(key_id.is_some());
    assert_eq!(*prompt as u64, body["usage"]["prompt_tokens"].as_u64().unwrap());
    assert_eq!(*completion as u64, body["usage"]["completion_tokens"].as_u64().unwrap());
    env.stop().await;
}

/// Agent `name` on `model` with its own provider key, bound to `host`.
fn keyed(env: &TestEnv, name: &str, model: &str, key: &str, host: &str) -> NewAgent {
    NewAgent { provider_key: Some(key.into()), provider_key_hosts: vec![host.into()], ..env.new_agent(name, model) }
}

#[tokio::test]
async fn an_agent_key_is_never_sent_to_a_host_it_was_not_bound_to() {
    let env = TestEnv::start().await;
    // An OpenAI key, but the base URL points elsewhere (a typo, or an attacker's host).
    let misconfigured = keyed(&env, "misconfigured", "gpt-4o-mini", "sk-real-openai-key", "api.openai.com");
    let (_, _, key) = env.tenant_with("acme", misconfigured).await;
    let resp = env.chat(&key, ask("misconfigured", "hi")).await;
    assert_eq!(resp.status(), 502);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["hermes"]["error_code"], "provider_key_not_allowed", "{body}");
    assert!(env.llm.requests().is_empty(), "the foreign host received nothing, so never the key");
    env.stop().await;
}

#[tokio::test]
async fn an_anthropic_agent_speaks_the_native_api_with_cache_breakpoints_and_tools() {
    let env = TestEnv::start().await;
    let claude = NewAgent {
        toolsets: vec!["terminal".into()],
        api_mode: Some(hermes_core::ApiMode::AnthropicMessages),
        ..keyed(&env, "claude", "claude-sonnet-4-5", "sk-ant-test", "127.0.0.1")
    };
    let (_, _, key) = env.tenant_with("acme", claude).await;
    env.llm.push(ScriptedReply::terminal("echo from-claude"));
    env.llm.push(ScriptedReply::text("Claude ran it.").with_reasoning("thinking about it"));
    let body = env.answered(&key, "claude", "run it").await;
    assert_eq!(answer_text(&body), "Claude ran it.");

    let first = &env.llm.requests()[0];
    assert_eq!(first.api_key.as_deref(), Some("sk-ant-test"), "x-api-key, not a bearer token");
    assert_eq!(first.body["model"], "claude-sonnet-4-5");
    assert!(first.body["system"][0]["cache_control"].is_object(), "the stable prompt is a cache breakpoint");
    let names: Vec<&str> =
        first.body["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["process", "terminal"], "tools in Anthropic's form");
    // The tool result goes back as a user tool_result block for the tool_use id.
    let second = &env.llm.requests()[1].body;
    let msgs = second["messages"].as_array().unwrap();
    let tool_use = &msgs[1]["content"][0];
    assert_eq!(tool_use["type"], "tool_use");
    let result = &msgs[2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], tool_use["id"]);
    assert!(result["content"].as_str().unwrap().contains("from-claude"));
    let stored: Option<String> =
        sqlx::query_scalar("SELECT reasoning FROM messages WHERE role = 'assistant' AND tool_calls IS NULL")
            .fetch_one(&env.db)
            .await
            .unwrap();
    assert_eq!(stored.as_deref(), Some("thinking about it"));
    env.stop().await;
}

#[tokio::test]
async fn a_thinking_claude_agent_sends_its_signed_thinking_back_between_tool_calls() {
    let env = TestEnv::start().await;
    let claude = NewAgent {
        toolsets: vec!["terminal".into()],
        api_mode: Some(hermes_core::ApiMode::AnthropicMessages),
        ..keyed(&env, "thinker", "claude-sonnet-4-5", "sk-ant-test", "127.0.0.1")
    };
    let (_, _, key) = env.tenant_with("acme", claude).await;
    sqlx::query("UPDATE agents SET model_settings = '{\"reasoning_effort\": \"high\"}' WHERE name = 'thinker'")
        .execute(&env.db)
        .await
        .unwrap();
    // The fake refuses, as Anthropic does, a tool loop whose thinking is missing or altered.
    env.llm.push_all([
        ScriptedReply::terminal("echo one"),
        ScriptedReply::terminal("echo two"),
        ScriptedReply::text("Both ran."),
    ]);
    let body = env.answered(&key, "thinker", "run both").await;
    assert_eq!(answer_text(&body), "Both ran.", "{body}");

    let requests = env.llm.requests();
    assert_eq!(requests.len(), 3);
    for r in &requests {
        assert_eq!(r.body["thinking"], serde_json::json!({"type": "enabled", "budget_tokens": 16000}));
        assert_eq!(r.body["max_tokens"], 20096, "room for the answer beside the budget");
    }
    // Each later call carries every earlier answer's thinking first, exactly as it came.
    let assistants = |r: &hermes_testkit::RecordedRequest| -> Vec<Value> {
        r.messages().into_iter().filter(|m| m["role"] == "assistant").collect()
    };
    let third = assistants(&requests[2]);
    assert_eq!(third.len(), 2);
    let mut signatures = Vec::new();
    for m in &third {
        let first = &m["content"][0];
        assert_eq!(first["type"], "thinking", "{m}");
        assert!(first.get("cache_control").is_none(), "no breakpoint on thinking");
        signatures.push(first["signature"].as_str().unwrap().to_owned());
    }
    assert_ne!(signatures[0], signatures[1]);
    assert_eq!(assistants(&requests[1])[0]["content"][0], third[0]["content"][0], "replayed byte for byte");
    // Kept with the transcript, never in what clients read.
    let kept: Vec<Value> = sqlx::query_scalar(
        "SELECT reasoning_replay FROM messages WHERE role = 'assistant' AND reasoning_replay IS NOT NULL ORDER BY seq",
    )
    .fetch_all(&env.db)
    .await
    .unwrap();
    assert_eq!(kept.len(), 3, "both tool steps and the answer");
    assert_eq!(kept[0]["items"][0]["signature"], signatures[0].as_str());
    assert_eq!(kept[0]["model"], "claude-sonnet-4-5");
    assert!(!body.to_string().contains(&signatures[0]), "no signature reaches the client");
    env.stop().await;
}

#[tokio::test]
async fn a_responses_reasoning_agent_carries_its_encrypted_reasoning_between_tool_calls() {
    let env = TestEnv::start().await;
    let o3 = NewAgent {
        toolsets: vec!["terminal".into()],
        api_mode: Some(hermes_core::ApiMode::Responses),
        ..keyed(&env, "reasoner", "o3", "sk-test", "127.0.0.1")
    };
    let (_, _, key) = env.tenant_with("acme", o3).await;
    // The fake refuses, as OpenAI does, reasoning sent back that it did not issue.
    env.llm.push_all([
        ScriptedReply::terminal("echo one"),
        ScriptedReply::terminal("echo two"),
        ScriptedReply::text("Both ran."),
    ]);
    let body = env.answered(&key, "reasoner", "run both").await;
    assert_eq!(answer_text(&body), "Both ran.", "{body}");

    let requests = env.llm.requests();
    assert_eq!(requests.len(), 3);
    for r in &requests {
        assert_eq!(r.body["store"], false, "nothing is kept at the provider");
        assert_eq!(r.body["include"], serde_json::json!(["reasoning.encrypted_content"]), "o3 reasons unasked");
    }
    let kinds = |r: &hermes_testkit::RecordedRequest| -> Vec<String> {
        let items = r.body["input"].as_array().unwrap();
        items.iter().map(|i| i["type"].as_str().unwrap_or("message").to_owned()).collect()
    };
    let sealed = |r: &hermes_testkit::RecordedRequest| -> Vec<String> {
        let items = r.body["input"].as_array().unwrap();
        items.iter().filter_map(|i| i["encrypted_content"].as_str().map(str::to_owned)).collect()
    };
    let second = kinds(&requests[1]);
    let at = second.iter().position(|k| k == "reasoning").expect("the first step's reasoning is sent back");
    assert_eq!(second[at + 1], "function_call", "before the call it led to: {second:?}");
    let (once, twice) = (sealed(&requests[1]), sealed(&requests[2]));
    assert_eq!(once.len(), 1);
    assert_eq!(twice.len(), 2);
    assert_eq!(twice[0], once[0], "replayed exactly");
    let reasoning: Vec<i64> =
        sqlx::query_scalar("SELECT reasoning_tokens FROM model_calls ORDER BY id").fetch_all(&env.db).await.unwrap();
    assert_eq!(reasoning, [4, 4, 4], "each call's reasoning tokens are metered");
    assert!(!body.to_string().contains(&once[0]), "no encrypted reasoning reaches the client");
    env.stop().await;
}

#[tokio::test]
async fn api_callers_set_sampling_and_reasoning_per_request_within_the_agents_limits() {
    let env = TestEnv::start().await;
    let (_, _, key) = env.tenant("acme", "helper").await;
    sqlx::query(
        "UPDATE agents SET model_settings = '{\"temperature\": 0.7}',
                client_limits = '{\"max_output_tokens\": 1000, \"max_reasoning_effort\": \"medium\"}'",
    )
    .execute(&env.db)
    .await
    .unwrap();
    let asked = serde_json::json!({"model": "helper", "messages": [{"role": "user", "content": "hi"}],
        "top_p": 0.5, "max_completion_tokens": 800, "reasoning_effort": "low"});
    let resp = env.chat(&key, asked).await;
    assert_eq!(resp.status(), 200);
    let sent = &env.llm.requests()[0].body;
    assert_eq!(
        (
            sent["temperature"].clone(),
            sent["top_p"].clone(),
            sent["max_tokens"].clone(),
            sent["reasoning_effort"].clone()
        ),
        (serde_json::json!(0.7), serde_json::json!(0.5), serde_json::json!(800), serde_json::json!("low")),
        "the agent's temperature, the request's others"
    );
    // The next request asks nothing: the agent's settings alone.
    let resp = env.chat(&key, ask("helper", "again")).await;
    assert_eq!(resp.status(), 200);
    let sent = &env.llm.requests()[1].body;
    assert!(sent.get("top_p").is_none() && sent.get("reasoning_effort").is_none(), "{sent}");
    // Beyond the agent's limits, or out of range: refused before anything runs.
    for (extra, param) in [
        (serde_json::json!({"max_tokens": 5000}), "max_tokens"),
        (serde_json::json!({"reasoning_effort": "high"}), "reasoning_effort"),
        (serde_json::json!({"service_tier": "priority"}), "service_tier"),
        (serde_json::json!({"temperature": "warm"}), "temperature"),
    ] {
        let mut body = ask("helper", "too much");
        body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let resp = env.chat(&key, body).await;
        assert_eq!(resp.status(), 400);
        let error: Value = resp.json().await.unwrap();
        assert_eq!(error["error"]["param"], param, "{error}");
    }
    assert_eq!(env.llm.requests().len(), 2);
    // The Responses API takes `reasoning.effort` and `max_output_tokens`.
    let resp = env
        .http
        .post(format!("{}/v1/responses", env.api_url))
        .bearer_auth(&key)
        .json(&serde_json::json!({"model": "helper", "input": "hi", "reasoning": {"effort": "medium"}, "max_output_tokens": 300}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let sent = &env.llm.requests()[2].body;
    assert_eq!((sent["reasoning_effort"].as_str(), sent["max_tokens"].as_u64()), (Some("medium"), Some(300)));
    env.stop().await;
}
