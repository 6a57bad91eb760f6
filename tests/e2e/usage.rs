//! Usage in tokens and dollars: calls are priced from the operator's table when they are
//! recorded, attributed to agent and API key, and reported per day, agent or key; calls of a
//! model without a price are counted as unpriced, and a later price change leaves them be.

use serde_json::{Value, json};

use hermes_testkit::ScriptedReply;

use crate::harness::{Team, TestEnv, ask};

/// The team's usage report for `query`, as `key` reads it.
async fn usage(env: &TestEnv, key: &str, query: &str) -> (u16, Value) {
    crate::openapi::call(env, key, "get", &format!("/v1/usage?{query}"), None).await
}

#[tokio::test]
async fn calls_are_priced_when_recorded_and_reported_per_day_agent_and_key() {
    let Team { env, tenant, key, .. } = Team::acme("ops").await;
    let (_, second_key) = env.store.tenancy().create_api_key(tenant, None, "ci", None).await.unwrap();
    // The scripted model is "scripted-model": priced by prefix.
    env.price_tokens("scripted*", 2.0, 8.0).await;
    for k in [&key, &key, &second_key] {
        env.llm.push(ScriptedReply::text("an answer of a few tokens"));
        let resp = env.chat(k, ask("ops", "hello there")).await;
        assert_eq!(resp.status(), 200);
    }
    let (prompt, completion): (i64, i64) =
        sqlx::query_as("SELECT sum(prompt_tokens)::int8, sum(completion_tokens)::int8 FROM model_calls")
            .fetch_one(&env.db)
            .await
            .unwrap();
    let expected = (prompt as f64 * 2.0 + completion as f64 * 8.0) / 1e6;

    let (status, by_day) = usage(&env, &key, "").await;
    assert_eq!(status, 200, "{by_day}");
    assert_eq!(by_day["data"].as_array().unwrap().len(), 1, "one day");
    assert_eq!(by_day["total"]["calls"], 3);
    let cost = by_day["total"]["cost_usd"].as_f64().unwrap();
    assert!((cost - expected).abs() < 1e-9, "{cost} vs {expected}");
    assert_eq!(by_day["total"]["unpriced_calls"], 0);

    let (_, by_key) = usage(&env, &key, "group_by=key").await;
    let calls: Vec<i64> = by_key["data"].as_array().unwrap().iter().map(|l| l["calls"].as_i64().unwrap()).collect();
    let mut sorted = calls.clone();
    sorted.sort();
    assert_eq!(sorted, [1, 2], "two keys: {by_key}");
    let (_, by_agent) = usage(&env, &key, "group_by=agent").await;
    assert_eq!(by_agent["data"][0]["group"], "ops");
    assert!(by_agent["data"][0]["avg_latency_ms"].as_f64().is_some(), "calls carry their duration: {by_agent}");

    // A price change applies to later calls only; a model without a price is unpriced, not free.
    env.price_tokens("scripted-model", 100.0, 100.0).await;
    let (_, again) = usage(&env, &key, "").await;
    assert!((again["total"]["cost_usd"].as_f64().unwrap() - expected).abs() < 1e-9, "history is not rewritten");
    sqlx::query("DELETE FROM model_prices").execute(&env.db).await.unwrap();
    env.llm.push(ScriptedReply::text("unpriced"));
    env.chat(&key, ask("ops", "one more")).await;
    let (_, last) = usage(&env, &key, "").await;
    assert_eq!((last["total"]["calls"].as_i64(), last["total"]["unpriced_calls"].as_i64()), (Some(4), Some(1)));

    // Bad parameters are clear errors; another tenant sees nothing of this.
    assert_eq!(usage(&env, &key, "group_by=week").await.0, 400);
    assert_eq!(usage(&env, &key, "start=2026-13-01").await.0, 400);
    let (_, _, stranger) = env.tenant("globex", "ops").await;
    let (_, theirs) = usage(&env, &stranger, "").await;
    assert_eq!(theirs["total"]["calls"], 0);
    env.stop().await;
}

#[tokio::test]
async fn a_reached_hard_cap_stops_turns_before_any_model_call_with_402() {
    let Team { env, tenant, agent, key } = Team::acme("ops").await;
    env.agent(tenant, "billing").await;
    env.price_tokens("scripted-model", 1_000.0, 1_000.0).await;
    // The agent may spend a cent a day; the first turn passes it.
    env.cap_spending(tenant, Some(agent.id), hermes_core::BudgetPeriod::Day, (Some(0.01), None)).await;
    env.llm.push(ScriptedReply::text("an answer that costs more than a cent"));
    let ask = |model: &str| ask(model, "hello");
    assert_eq!(env.chat(&key, ask("ops")).await.status(), 200);
    let spent = env.store.tenancy().budget_states(tenant, agent.id, chrono::Utc::now()).await.unwrap();
    assert!(spent[0].hard_reached(), "{spent:?}");

    let resp = env.chat(&key, ask("ops")).await;
    assert_eq!(resp.status(), 402);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "insufficient_quota");
    assert_eq!(body["error"]["type"], "insufficient_quota");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("This agent's daily spending cap ($0.01) is reached"),
        "{body}"
    );
    assert_eq!(env.llm.requests().len(), 1, "no model call was made for the refused turn");

    // The cap is the agent's: another agent of the team goes on, until the team's own cap.
    env.llm.push(ScriptedReply::text("fine"));
    assert_eq!(env.chat(&key, ask("billing")).await.status(), 200);
    env.cap_spending(tenant, None, hermes_core::BudgetPeriod::Month, (Some(0.0), None)).await;
    let resp = env.chat(&key, ask("billing")).await;
    assert_eq!(resp.status(), 402);
    let body: Value = resp.json().await.unwrap();
    assert!(body["error"]["message"].as_str().unwrap().starts_with("Your team's monthly spending cap"), "{body}");
    assert_eq!(env.llm.requests().len(), 2);
    env.stop().await;
}

#[tokio::test]
async fn a_reached_soft_cap_warns_once_the_turn_goes_on_and_its_tool_and_sandbox_time_are_metered() {
    let Team { env, tenant, key, .. } = Team::acme("ops").await;
    // A soft cap of zero is reached from the start; there is no hard cap.
    env.cap_spending(tenant, None, hermes_core::BudgetPeriod::Month, (None, Some(0.0))).await;
    env.llm.push(ScriptedReply::terminal("echo checked"));
    env.llm.push(ScriptedReply::text("All checked."));
    let resp = env
        .chat(&key, json!({"model": "ops", "stream": true, "messages": [{"role": "user", "content": "check"}]}))
        .await;
    assert_eq!(resp.status(), 200);
    let events = crate::harness::sse_events(&resp.text().await.unwrap());
    let notices = crate::harness::sse_data(&events, "hermes.notice");
    assert_eq!(notices.len(), 1, "one warning for a turn of two model calls: {events:?}");
    assert_eq!(notices[0]["code"], "soft_cap_reached");
    assert!(notices[0]["message"].as_str().unwrap().starts_with("Your team's monthly spending warning level"));
    assert_eq!(notices[0]["object"], "chat.completion.chunk", "SDKs can parse it as a chunk");
    assert_eq!(env.llm.requests().len(), 2, "a soft cap stops nothing");
    let content: String = events
        .iter()
        .filter(|(name, data)| name.is_none() && data != "[DONE]")
        .filter_map(|(_, d)| serde_json::from_str::<Value>(d).ok())
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(content, "All checked.");

    // The turn's tool time is metered too; the terminal ran in the sandbox.
    let (status, report) = usage(&env, &key, "").await;
    assert_eq!(status, 200);
    let total = &report["total"];
    assert_eq!(total["turns"], 1, "{report}");
    let tool_ms = total["tool_ms"].as_i64().unwrap();
    assert!(tool_ms > 0, "{report}");
    assert_eq!(total["sandbox_ms"].as_i64(), Some(tool_ms), "all of it in the sandbox: {report}");
    env.stop().await;
}

#[tokio::test]
async fn fifty_concurrent_turns_never_spend_beyond_the_calls_in_flight_when_the_cap_was_reached() {
    let env = TestEnv::start_with(crate::harness::Roles::default(), |c| {
        crate::harness::no_api_limits(c);
        // Fewer connections than turns: a worker whose every slot is busy must not deadlock
        // its pool (a heartbeat once waited for a connection while its own turn held one).
        c.database.max_connections = 4;
    })
    .await;
    let (tenant, _, key) = env.tenant("acme", "ops").await;
    // A thousand dollars a million tokens: a call costs about a dollar (its prompt).
    env.price_tokens("scripted-model", 1_000.0, 1_000.0).await;
    let cap = 10.0;
    env.cap_spending(tenant, None, hermes_core::BudgetPeriod::Day, (Some(cap), None)).await;
    // Every call takes a while, so all fifty turns ask at once.
    for _ in 0..50 {
        env.llm.push(ScriptedReply::text("ok").after(std::time::Duration::from_millis(400)));
    }
    let turns: Vec<_> = (0..50).map(|n| env.spawn_chat(&key, ask("ops", format!("task {n}")))).collect();
    let mut statuses = Vec::new();
    for turn in turns {
        statuses.push(turn.await.unwrap().status().as_u16());
    }
    let answered = statuses.iter().filter(|s| **s == 200).count();
    let refused = statuses.iter().filter(|s| **s == 402).count();
    assert_eq!(answered + refused, 50, "every turn is answered or refused for the cap: {statuses:?}");
    assert!(answered >= 1 && refused >= 1, "some fit under the cap, the rest are refused: {statuses:?}");
    assert_eq!(env.llm.requests().len(), answered, "a refused turn made no model call");

    // What was spent passes the cap by at most the last admitted call (its estimate: its
    // prompt and the 1,024 tokens an answer is assumed to take).
    let (spent, biggest_prompt): (f64, i64) =
        sqlx::query_as("SELECT COALESCE(sum(cost_usd), 0)::float8, COALESCE(max(prompt_tokens), 0) FROM model_calls")
            .fetch_one(&env.db)
            .await
            .unwrap();
    let one_call = (biggest_prompt as f64 * 2.0 + 1024.0) * 1_000.0 / 1e6;
    assert!(spent <= cap + one_call, "spent ${spent:.2} against a ${cap:.2} cap (one call at most ${one_call:.2})");
    let unsettled: i64 =
        sqlx::query_scalar("SELECT count(*) FROM spend_reservations").fetch_one(&env.db).await.unwrap();
    assert_eq!(unsettled, 0, "every reservation was settled by its call's usage");
    env.stop().await;
}
