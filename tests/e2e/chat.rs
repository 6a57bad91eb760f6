//! A plain turn through API -> queue -> worker -> scripted model -> Postgres -> API.

use serde_json::{Value, json};

use hermes_testkit::ScriptedReply;

use crate::harness::{Team, TestEnv, answer_text, ask, kill, sse_events};

/// Acme's "helper" agent, scripted to answer `reply`, and its successful answer to the chat request `body`.
async fn chatted(reply: ScriptedReply, body: Value) -> (Team, reqwest::Response) {
    let team = Team::acme("helper").await;
    team.env.llm.push(reply);
    let resp = team.env.chat(&team.key, body).await;
    assert_eq!(resp.status(), 200);
    (team, resp)
}

#[tokio::test]
async fn non_streaming_turn_answers_like_openai_and_stores_the_transcript() {
    let body = json!({"model": "helper", "messages": [
        {"role": "system", "content": "Answer in English."},
        {"role": "user", "content": "hi"}
    ]});
    let (Team { env, key, .. }, resp) = chatted(ScriptedReply::text("Hello from Hermes"), body).await;
    let session = resp.headers()["x-hermes-session-id"].to_str().unwrap().to_owned();
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "helper");
    assert_eq!(answer_text(&body), "Hello from Hermes");
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    assert!(body["usage"]["total_tokens"].as_u64().unwrap() > 0);
    assert!(body["id"].as_str().unwrap().starts_with("chatcmpl-"));

    // The model saw the agent's stable prompt, then the request's system text, then the user.
    let sent = env.llm.requests()[0].messages();
    assert_eq!(sent[0]["role"], "system");
    assert!(sent[0]["content"].as_str().unwrap().contains("Hermes"));
    assert_eq!(sent[1]["content"], "Answer in English.");
    assert_eq!(sent[2]["content"], "hi");

    // Postgres holds the user message and the answer, in order; the turn is completed.
    let roles =
        sqlx::query_scalar::<_, String>("SELECT role FROM messages ORDER BY seq").fetch_all(&env.db).await.unwrap();
    assert_eq!(roles, ["user", "assistant"]);
    assert_eq!(env.count("SELECT count(*) FROM turns WHERE status = 'completed'").await, 1);

    // X-Hermes-Session-Id continues the session: history comes from the server.
    env.llm.push(ScriptedReply::text("Second answer"));
    let resp = env.chat_with(&key, ask("helper", "again"), Some(&session)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-hermes-session-id"], session.as_str());
    let body: Value = resp.json().await.unwrap();
    assert_eq!(answer_text(&body), "Second answer");
    let sent = env.llm.requests()[1].messages();
    let texts: Vec<&str> = sent.iter().filter_map(|m| m["content"].as_str()).collect();
    assert_eq!(
        &texts[1..],
        ["hi", "Hello from Hermes", "again"],
        "history then the new input; old instructions not kept"
    );
    // Every byte of a plain turn is paid on every call: stay within 70 % of upstream's
    // 58,473 characters (system prompt plus tool schemas).
    let size = env.llm.requests()[0].body.to_string().len();
    assert!(size < 40_931, "a plain turn's request is {size} characters");
    // The stored prompt is reused byte for byte.
    assert_eq!(env.llm.requests()[0].messages()[0], sent[0]);
    env.stop().await;
}

#[tokio::test]
async fn streaming_turn_sends_chunks_then_finish_usage_and_done() {
    let reply = ScriptedReply::text("one two three").with_reasoning("thinking quietly");
    let body = json!({"model": "helper", "stream": true, "stream_options": {"include_usage": true},
                      "messages": [{"role": "user", "content": "count"}]});
    let (Team { env, .. }, resp) = chatted(reply, body).await;
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    assert!(resp.headers().contains_key("x-hermes-session-id"));
    let text = resp.text().await.unwrap();
    let events = sse_events(&text);
    let (last_name, last) = events.last().unwrap();
    assert!(last_name.is_none());
    assert_eq!(last, "[DONE]");
    let chunks: Vec<Value> = events
        .iter()
        .filter(|(n, d)| n.is_none() && d != "[DONE]")
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect();
    assert!(chunks.iter().all(|c| c["object"] == "chat.completion.chunk"));
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let content: String = chunks.iter().filter_map(|c| c["choices"].get(0)?["delta"]["content"].as_str()).collect();
    assert_eq!(content, "one two three", "reasoning never mixes into the answer");
    // Reasoning streams apart, as `reasoning_content`, before the answer's text.
    let delta =
        |c: &Value, field: &str| c["choices"].get(0).and_then(|ch| ch["delta"][field].as_str()).map(str::to_owned);
    let thought: String = chunks.iter().filter_map(|c| delta(c, "reasoning_content")).collect();
    assert_eq!(thought, "thinking quietly");
    let first_thought = chunks.iter().position(|c| delta(c, "reasoning_content").is_some()).unwrap();
    let first_word = chunks.iter().position(|c| delta(c, "content").is_some_and(|t| !t.is_empty())).unwrap();
    assert!(first_thought < first_word, "reasoning comes first");
    assert!(chunks.len() >= 5, "the answer arrives in several chunks, not one: {}", chunks.len());
    let finish = chunks.iter().find(|c| c["choices"][0]["finish_reason"].is_string()).unwrap();
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");
    let usage = chunks.last().unwrap();
    assert_eq!(usage["choices"].as_array().unwrap().len(), 0);
    assert!(usage["usage"]["total_tokens"].as_u64().unwrap() > 0);
    // Reasoning is kept apart in the stored assistant message.
    let reasoning: Option<String> =
        sqlx::query_scalar("SELECT reasoning FROM messages WHERE role = 'assistant'").fetch_one(&env.db).await.unwrap();
    assert_eq!(reasoning.as_deref(), Some("thinking quietly"));
    env.stop().await;
}

#[tokio::test]
async fn a_whole_answer_carries_its_reasoning_apart_and_counts_its_reasoning_tokens() {
    let reply = ScriptedReply::text("42").with_reasoning("six times seven");
    let body = json!({"model": "helper", "messages": [{"role": "user", "content": "what is 6 x 7?"}]});
    let (Team { env, .. }, resp) = chatted(reply, body).await;
    let body: Value = resp.json().await.unwrap();
    let message = &body["choices"][0]["message"];
    assert_eq!(
        (message["content"].as_str(), message["reasoning_content"].as_str()),
        (Some("42"), Some("six times seven"))
    );
    assert!(body["usage"]["completion_tokens_details"]["reasoning_tokens"].is_u64(), "{body}");
    env.stop().await;
}

#[tokio::test]
async fn a_seeded_history_with_a_dangling_tool_call_is_repaired_before_the_model_sees_it() {
    let body = json!({"model": "helper", "messages": [
        {"role": "user", "content": "earlier question"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c9", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}]},
        {"role": "user", "content": "and now?"}
    ]});
    let (Team { env, .. }, _answer) = chatted(ScriptedReply::text("all good"), body).await;
    let sent = env.llm.requests()[0].messages();
    let roles: Vec<&str> = sent.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "user"]);
    assert_eq!(sent[3]["tool_call_id"], "c9");
    // The stored history is what the client sent (3 seeded/input messages plus the answer).
    assert_eq!(env.count("SELECT count(*) FROM messages").await, 4);
    env.stop().await;
}

#[tokio::test]
async fn two_workers_send_a_byte_identical_prefix_for_consecutive_turns() {
    let env = TestEnv::start_with(crate::harness::Roles { worker: false, scheduler: true }, |_| {}).await;
    let (_, _, key) = env.tenant("acme", "helper").await;
    env.llm.push(ScriptedReply::text("first answer"));
    env.llm.push(ScriptedReply::text("second answer"));
    let worker_a = env.spawn_hermesd(&["worker"], "worker-a");
    let resp = env
        .chat(&key, json!({"model": "helper", "messages": [{"role": "system", "content": "per-request note"}, {"role": "user", "content": "one"}]}))
        .await;
    assert_eq!(resp.status(), 200);
    let session = resp.headers()["x-hermes-session-id"].to_str().unwrap().to_owned();
    kill(worker_a);

    let worker_b = env.spawn_hermesd(&["worker"], "worker-b");
    let resp = env.chat_with(&key, ask("helper", "two"), Some(&session)).await;
    assert_eq!(resp.status(), 200);
    let first = env.llm.requests()[0].body.clone();
    let second = env.llm.requests()[1].body.clone();
    let (a, b) = (first["messages"].as_array().unwrap(), second["messages"].as_array().unwrap());
    // Same stable prompt, byte for byte; the first turn's per-request system note is not kept.
    assert_eq!(a[0].to_string(), b[0].to_string());
    assert_eq!(a[1]["content"], "per-request note");
    assert_eq!(b[1]["content"], "one");
    // Everything before the new input is the first request's conversation plus its answer.
    assert_eq!(b[2]["content"], "first answer");
    assert_eq!(first["tools"].to_string(), second["tools"].to_string(), "tool schemas are stable too");
    kill(worker_b);
    env.stop().await;
}

#[tokio::test]
async fn a_conversation_that_outgrows_the_window_continues_in_a_compacted_child_session() {
    let env = TestEnv::start().await;
    // Floored at 64K: compaction at 32K tokens.
    let small = hermes_store::NewAgent { context_window: Some(1), ..env.new_agent("small", "tiny-model") };
    let (_, _, key) = env.tenant_with("acme", small).await;
    let mut messages: Vec<Value> = (0..15)
        .flat_map(|i| {
            [
                json!({"role": "user", "content": format!("question {i}: {}", "q".repeat(5_000))}),
                json!({"role": "assistant", "content": format!("answer {i}: {}", "a".repeat(5_000))}),
            ]
        })
        .collect();
    messages.push(json!({"role": "user", "content": "so, what now?"}));
    env.llm.push(ScriptedReply::text("## Goal\nAnswer many questions"));
    env.llm.push(ScriptedReply::text("compacted and answered"));
    let resp = env.chat(&key, json!({"model": "small", "messages": messages})).await;
    assert_eq!(resp.status(), 200);
    let child = resp.headers()["x-hermes-session-id"].to_str().unwrap().to_owned();
    let body: Value = resp.json().await.unwrap();
    assert_eq!(answer_text(&body), "compacted and answered");

    // The summary request came first; the turn's request carried the summary, not the history.
    let summary_req = env.llm.requests()[0].messages();
    assert!(summary_req[0]["content"].as_str().unwrap().contains("## Goal"));
    let turn_req = env.llm.requests()[1].messages();
    assert!(turn_req.iter().any(|m| m["content"].as_str().is_some_and(|c| c.contains("Answer many questions"))));
    assert!(turn_req.len() < 31, "{}", turn_req.len());

    // Lineage: the child continues the parent, holds the running turn and the answer.
    let (parent, lineage): (Option<String>, Option<String>) =
        sqlx::query_as("SELECT parent_session_id::text, lineage FROM sessions WHERE id::text = $1")
            .bind(&child)
            .fetch_one(&env.db)
            .await
            .unwrap();
    assert_eq!(lineage.as_deref(), Some("compaction"));
    let parent = parent.expect("a parent");
    assert_ne!(parent, child);
    let turn_session: String =
        sqlx::query_scalar("SELECT session_id::text FROM turns").fetch_one(&env.db).await.unwrap();
    assert_eq!(turn_session, child);
    let last: String = sqlx::query_scalar(
        "SELECT content #>> '{}' FROM messages WHERE session_id::text = $1 ORDER BY seq DESC LIMIT 1",
    )
    .bind(&child)
    .fetch_one(&env.db)
    .await
    .unwrap();
    assert_eq!(last, "compacted and answered");

    // The client continues with the child session.
    env.llm.push(ScriptedReply::text("still here"));
    let resp = env.chat_with(&key, ask("small", "next"), Some(&child)).await;
    assert_eq!(resp.status(), 200);
    env.stop().await;
}
