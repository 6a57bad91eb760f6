//! The Runs API: a run starts at once (202), is polled and followed as SSE from any API pod,
//! waits for a dangerous command's approval, resumes when answered, and stops on request.

use std::time::Duration;

use serde_json::{Value, json};

use hermes_testkit::ScriptedReply;

use crate::harness::{TestEnv, poll_until, sse_events};

async fn start_run(env: &TestEnv, base: &str, key: &str, body: Value) -> (u16, Value) {
    let resp = env.http.post(format!("{base}/v1/runs")).bearer_auth(key).json(&body).send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

async fn run_state(env: &TestEnv, base: &str, key: &str, run: &str) -> (u16, Value) {
    let resp = env.http.get(format!("{base}/v1/runs/{run}")).bearer_auth(key).send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

/// Reads a run's event stream to its end in the background.
/// Opens the run's event stream (the API is listening once this returns) and reads it to
/// the end in the background.
async fn follow(env: &TestEnv, base: &str, key: &str, run: &str) -> tokio::task::JoinHandle<(Vec<Value>, String)> {
    let resp = env.http.get(format!("{base}/v1/runs/{run}/events")).bearer_auth(key).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    tokio::spawn(async move {
        let text = resp.text().await.unwrap();
        let events = sse_events(&text)
            .into_iter()
            .map(|(name, data)| {
                assert!(name.is_none(), "run events are data-only lines");
                serde_json::from_str(&data).unwrap()
            })
            .collect();
        (events, text)
    })
}

/// The event names in order, consecutive repeats collapsed.
fn names(events: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in events {
        let name = e["event"].as_str().unwrap().to_owned();
        if out.last() != Some(&name) {
            out.push(name);
        }
    }
    out
}

async fn wait_for_status(env: &TestEnv, key: &str, run: &str, want: &str) -> Value {
    let reached =
        poll_until(async || Some(run_state(env, &env.api_url, key, run).await.1).filter(|s| s["status"] == want));
    reached.await.unwrap_or_else(|| panic!("run {run} never reached {want}"))
}

#[tokio::test]
async fn a_run_starts_at_once_and_another_api_pod_streams_its_events_and_status() {
    let env = TestEnv::start().await;
    let other_pod = crate::idempotency::second_api(&env).await;
    let (_, _, key) = env.tenant("acme", "helper").await;
    env.llm.push(ScriptedReply::terminal("echo ships on Fridays").after(Duration::from_millis(800)));
    env.llm.push(ScriptedReply::text("Noted: you ship on Fridays."));

    let (status, started) = start_run(&env, &env.api_url, &key, json!({"input": "We ship on Fridays."})).await;
    assert_eq!(status, 202, "{started}");
    assert_eq!(started["status"], "started");
    let run = started["run_id"].as_str().unwrap().to_owned();
    assert!(run.starts_with("run_") && run.len() == 36, "{run}");
    // The events are followed on the other pod, not the one the run started on.
    let (events, text) = follow(&env, &other_pod, &key, &run).await.await.unwrap();
    assert_eq!(names(&events), ["tool.started", "tool.completed", "message.delta", "run.completed"], "{events:?}");
    assert!(events.iter().all(|e| e["run_id"] == run.as_str() && e["timestamp"].is_f64()));
    assert_eq!(events[0]["tool"], "terminal");
    let tool_result: String = sqlx::query_scalar("SELECT content #>> '{}' FROM messages WHERE role = 'tool'")
        .fetch_one(&env.db)
        .await
        .unwrap();
    assert_eq!(events[1]["error"], false, "{tool_result}");
    assert!(tool_result.contains("ships on Fridays"), "{tool_result}");
    let deltas: String = events.iter().filter_map(|e| e["delta"].as_str()).collect();
    assert_eq!(deltas, "Noted: you ship on Fridays.");
    let done = events.last().unwrap();
    assert_eq!(done["output"], "Noted: you ship on Fridays.");
    assert!(done["usage"]["total_tokens"].as_u64().unwrap() > 0);
    assert!(text.trim_end().ends_with(": stream closed"), "{text}");

    let (status, state) = run_state(&env, &other_pod, &key, &run).await;
    assert_eq!(status, 200);
    assert_eq!(state["object"], "hermes.run");
    assert_eq!(state["status"], "completed");
    assert_eq!(state["output"], "Noted: you ship on Fridays.");
    assert_eq!(state["session_id"], started["session_id"]);

    // A stream opened after the run ended still tells how it ended.
    let (late, _) = follow(&env, &env.api_url, &key, &run).await.await.unwrap();
    assert_eq!(names(&late), ["run.completed"]);

    // Another run continues the same session by id.
    env.llm.push(ScriptedReply::text("Fridays."));
    let (status, second) =
        start_run(&env, &other_pod, &key, json!({"input": "When do we ship?", "session_id": started["session_id"]}))
            .await;
    assert_eq!(status, 202, "{second}");
    let (events, _) = follow(&env, &env.api_url, &key, second["run_id"].as_str().unwrap()).await.await.unwrap();
    assert_eq!(names(&events).last().unwrap(), "run.completed");
    let seen = env.llm.requests().last().unwrap().messages();
    assert!(seen.iter().any(|m| m["content"] == "We ship on Fridays."), "history from the session");
    env.stop().await;
}

#[tokio::test]
async fn a_run_waits_for_approval_resumes_when_approved_and_stops_on_request() {
    let (env, [key, stranger]) = TestEnv::with_two_tenants(["acme", "globex"], "ops").await;
    // The first call takes a moment, so the stream below is open before the run asks.
    env.llm.push(
        ScriptedReply::terminal("mkdir -p build && rm -rf build && echo cleaned")
            .after(std::time::Duration::from_millis(500)),
    );
    env.llm.push(ScriptedReply::text("Build directory removed."));
    let (_, started) = start_run(&env, &env.api_url, &key, json!({"input": "clean the build"})).await;
    let run = started["run_id"].as_str().unwrap().to_owned();
    let stream = follow(&env, &env.api_url, &key, &run).await;

    let waiting = wait_for_status(&env, &key, &run, "waiting_for_approval").await;
    assert_eq!(waiting["pending"]["kind"], "approval");
    assert_eq!(waiting["last_event"], "approval.request");
    // Nobody else can see, answer or stop it.
    let base = &env.api_url;
    assert_eq!(run_state(&env, base, &stranger, &run).await.0, 404);
    for path in ["approval", "stop"] {
        let resp = env
            .http
            .post(format!("{base}/v1/runs/{run}/{path}"))
            .bearer_auth(&stranger)
            .json(&json!({"choice": "once"}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 404, "{path}");
    }
    let events = env.http.get(format!("{base}/v1/runs/{run}/events")).bearer_auth(&stranger).send().await.unwrap();
    assert_eq!(events.status(), 404);

    let approve = |choice: &str| {
        env.http
            .post(format!("{base}/v1/runs/{run}/approval"))
            .bearer_auth(&key)
            .json(&json!({"choice": choice}))
            .send()
    };
    let bad = approve("maybe").await.unwrap();
    assert_eq!(bad.status(), 400);
    assert_eq!(bad.json::<Value>().await.unwrap()["error"]["code"], "invalid_approval_choice");
    let ok = approve("approve").await.unwrap();
    assert_eq!(ok.status(), 200);
    let ok: Value = ok.json().await.unwrap();
    assert_eq!((ok["object"].as_str(), ok["choice"].as_str()), (Some("hermes.run.approval_response"), Some("once")));

    let (events, _) = stream.await.unwrap();
    assert_eq!(
        names(&events),
        [
            "tool.started",
            "approval.request",
            "approval.responded",
            "tool.started",
            "tool.completed",
            "message.delta",
            "run.completed"
        ],
        "the call starts, asks, and runs again once approved: {events:?}"
    );
    assert_eq!(events[1]["choices"], json!(["once", "session", "always", "deny"]));
    assert!(events[1]["command"].as_str().unwrap().contains("rm -rf build"));
    assert_eq!(events[2]["choice"], "once");
    assert_eq!(approve("once").await.unwrap().status(), 409, "nothing is pending any more");

    // Stopping a slow run cancels it within the wait; a stopped run cannot be stopped again.
    env.llm.push(ScriptedReply::text("too late").after(Duration::from_secs(20)));
    let (_, slow) = start_run(&env, base, &key, json!({"input": "take your time"})).await;
    let slow = slow["run_id"].as_str().unwrap().to_owned();
    let stream = follow(&env, base, &key, &slow).await;
    wait_for_status(&env, &key, &slow, "running").await;
    let stop = |run: String| env.http.post(format!("{base}/v1/runs/{run}/stop")).bearer_auth(&key).send();
    let stopped: Value = stop(slow.clone()).await.unwrap().json().await.unwrap();
    assert_eq!(stopped["status"], "cancelled", "{stopped}");
    let (events, _) = stream.await.unwrap();
    assert_eq!(names(&events).last().unwrap(), "run.cancelled");
    assert_eq!(run_state(&env, base, &key, &slow).await.1["status"], "cancelled");
    assert_eq!(stop(slow).await.unwrap().status(), 409);
    env.stop().await;
}
