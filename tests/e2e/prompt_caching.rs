//! Claude through a caching gateway (OpenRouter, or a host in `llm.prompt_cache_gateways`):
//! the scripted gateway keeps Anthropic's prompt cache, so a conversation whose prefix changed
//! a byte between calls, or between the workers that made them, would read nothing back.

use hermes_store::{ModelPrice, NewAgent};
use serde_json::Value;

use crate::harness::{Roles, TestEnv, ask, kill};

/// Claude Sonnet's list prices per million tokens: input, cache read, cache write, output.
const PRICES: (f64, f64, f64, f64) = (3.0, 0.30, 3.75, 15.0);

#[tokio::test]
async fn a_twenty_turn_claude_conversation_is_read_from_the_gateways_cache_across_workers() {
    let gateways = [("HERMES__LLM__PROMPT_CACHE_GATEWAYS", r#"["127.0.0.1"]"#.to_owned())];
    let env = TestEnv::start_with(Roles { worker: false, scheduler: true }, |_| {}).await;
    // A team's SOUL of a few pages: Anthropic caches prefixes of 1,024 tokens and more.
    let soul = (1..=40).map(|i| format!("Rule {i}: answer the team's question {i} plainly, cite the runbook.\n"));
    let claude = NewAgent {
        toolsets: vec!["terminal".into(), "memory".into()],
        soul: Some(soul.collect()),
        ..env.new_agent("claude", "anthropic/claude-sonnet-4.5")
    };
    let (tenant, _, key) = env.tenant_with("acme", claude).await;
    let (input, read, write, output) = PRICES;
    let price = ModelPrice {
        model: "anthropic/claude-sonnet-4.5".into(),
        input,
        output,
        cached_input: Some(read),
        cache_write: Some(write),
        ..Default::default()
    };
    env.store.tenancy().set_model_price(&price).await.unwrap();

    // Ten turns on one worker, ten on another process that never saw the first.
    let mut session: Option<String> = None;
    for half in ["worker-a", "worker-b"] {
        let worker = env.spawn_hermesd_with(&["worker"], half, &gateways);
        for i in 0..10 {
            let text = format!("Question {i} from {half}: tell me something about the number {i}.");
            let resp = env.chat_with(&key, ask("claude", text), session.as_deref()).await;
            assert_eq!(resp.status(), 200);
            session.get_or_insert_with(|| resp.headers()["x-hermes-session-id"].to_str().unwrap().to_owned());
        }
        kill(worker);
    }

    let rows: Vec<(i64, i64, i64, i64, f64)> = sqlx::query_as(
        "SELECT prompt_tokens, cached_tokens, cache_write_tokens, completion_tokens, cost_usd::float8
         FROM model_calls WHERE tenant_id = $1 AND purpose = 'main' ORDER BY id",
    )
    .bind(tenant.as_uuid())
    .fetch_all(&env.db)
    .await
    .unwrap();
    assert_eq!(rows.len(), 20);
    for (i, (prompt, cached, _, _, _)) in rows.iter().enumerate().skip(1) {
        // Each call reads at least everything the call before it sent, worker change included.
        let before = rows[i - 1].0;
        assert!(*cached >= before * 9 / 10, "call {i} read {cached} of {prompt} (the previous sent {before})");
    }
    let sum = |f: fn(&(i64, i64, i64, i64, f64)) -> i64| rows.iter().map(f).sum::<i64>() as f64;
    let (prompt, cached, written, completion) = (sum(|r| r.0), sum(|r| r.1), sum(|r| r.2), sum(|r| r.3));
    let without = (prompt * input + completion * output) / 1e6;
    let with = ((prompt - cached - written) * input + cached * read + written * write + completion * output) / 1e6;
    let recorded: f64 = rows.iter().map(|r| r.4).sum();
    assert!((recorded - with).abs() < 1e-6, "usage prices the reads and writes: {recorded} != {with}");
    println!(
        "20 turns: prompt {prompt} tokens, read from cache {cached}, written {written}, output {completion}; \
         ${without:.4} without caching, ${with:.4} with ({:.0} % less)",
        100.0 * (1.0 - with / without)
    );
    assert!(with < without * 0.5, "caching should more than halve the bill: {with} vs {without}");
    let usage: Value =
        env.http.get(format!("{}/v1/usage", env.api_url)).bearer_auth(&key).send().await.unwrap().json().await.unwrap();
    assert_eq!(usage["total"]["cached_tokens"].as_f64(), Some(cached), "{usage}");
    assert_eq!(usage["total"]["cache_write_tokens"].as_f64(), Some(written));
    env.stop().await;
}
