//! Turns that wait for the user: dangerous-command approval and `clarify`, parked in Postgres
//! (the worker is free meanwhile) and resumed by the answer, by whichever worker is there.

use std::time::Duration;

use serde_json::{Value, json};

use hermes_testkit::ScriptedReply;

use crate::harness::{Roles, Team, TestEnv, answer_text, ask, kill};

impl TestEnv {
    /// POSTs an answer to a waiting turn.
    pub async fn answer(&self, key: &str, interaction: &str, body: Value) -> reqwest::Response {
        self.http
            .post(format!("{}/v1/interactions/{interaction}", self.api_url))
            .bearer_auth(key)
            .json(&body)
            .send()
            .await
            .unwrap()
    }
}

/// The interaction a waiting response carries.
fn interaction(body: &Value) -> Value {
    body.pointer("/hermes/interaction").cloned().unwrap_or_else(|| panic!("no interaction in {body}"))
}

/// The last tool result the model was sent.
fn last_tool_result(env: &TestEnv) -> String {
    let request = env.llm.requests().last().unwrap().messages();
    request.iter().rev().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_dangerous_command_waits_for_approval_and_another_worker_resumes_it() {
    let Team { env, key, .. } = Team::start(Roles::NO_WORKER, "ops").await;
    env.llm.push(ScriptedReply::terminal(
        "mkdir -p build && rm -rf build && echo removed >> /workspace/runs && cat /workspace/runs",
    ));
    env.llm.push(ScriptedReply::text("Cleaned up."));

    let worker_a = env.spawn_hermesd(&["worker"], "worker-a");
    let resp = env.chat(&key, ask("ops", "clean the build")).await;
    assert_eq!(resp.status(), 200);
    let id = resp.headers()["x-hermes-interaction-id"].to_str().unwrap().to_owned();
    let body: Value = resp.json().await.unwrap();
    let asked = interaction(&body);
    assert_eq!(asked["id"], id.as_str());
    assert_eq!(asked["kind"], "approval");
    assert_eq!(asked["prompt"]["pattern_keys"], json!(["rm_recursive"]));
    assert_eq!(asked["prompt"]["choices"], json!(["once", "session", "always", "deny"]));
    assert!(answer_text(&body).starts_with("Approval needed to run `mkdir -p build && rm -rf build"), "{body}");
    // Parked in Postgres: no lease, no worker holds it, and nothing ran.
    let (status, owner): (String, Option<String>) =
        sqlx::query_as("SELECT status::text, lease_owner FROM turns").fetch_one(&env.db).await.unwrap();
    assert_eq!((status.as_str(), owner), ("waiting", None));
    assert_eq!(env.count("SELECT count(*) FROM messages WHERE role = 'tool'").await, 0);

    // The worker that asked goes away; another one resumes the turn after the answer.
    kill(worker_a);
    let worker_b = env.spawn_hermesd(&["worker"], "worker-b");
    let resp = env.answer(&key, &id, json!({"choice": "once"})).await;
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(answer_text(&body), "Cleaned up.");
    assert_eq!(last_tool_result(&env).trim(), "removed", "ran exactly once, after the approval");
    let roles =
        sqlx::query_scalar::<_, String>("SELECT role FROM messages ORDER BY seq").fetch_all(&env.db).await.unwrap();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);

    // An answered question cannot be answered again.
    assert_eq!(env.answer(&key, &id, json!({"choice": "deny"})).await.status(), 404);
    kill(worker_b);
    env.stop().await;
}

#[tokio::test]
async fn deny_blocks_the_command_and_always_remembers_the_pattern_for_the_agent() {
    let (env, [key, other_key]) = TestEnv::with_two_tenants(["acme", "globex"], "ops").await;
    let command = json!({"command": "git init -q . 2>/dev/null; git reset --hard 2>&1; touch /workspace/ran"});
    env.llm.push(ScriptedReply::tool_call("terminal", command.clone()));
    env.llm.push(ScriptedReply::text("Understood, I did not do it."));
    let resp = env.chat(&key, ask("ops", "reset")).await;
    let body: Value = resp.json().await.unwrap();
    let id = interaction(&body)["id"].as_str().unwrap().to_owned();

    // Another tenant cannot see or answer it.
    assert_eq!(env.answer(&other_key, &id, json!({"choice": "once"})).await.status(), 404);
    // A malformed answer is refused with the reason, and the question stays open.
    let bad = env.answer(&key, &id, json!({"choice": "perhaps"})).await;
    assert_eq!(bad.status(), 400);
    let err: Value = bad.json().await.unwrap();
    assert_eq!(err["error"]["param"], "choice");

    let resp = env.answer(&key, &id, json!({"choice": "deny"})).await;
    let body: Value = resp.json().await.unwrap();
    assert_eq!(answer_text(&body), "Understood, I did not do it.");
    let result = last_tool_result(&env);
    assert!(result.starts_with("Error: BLOCKED: the user denied it"), "{result}");

    // "always": this time and from now on, the pattern runs without asking.
    env.llm.push(ScriptedReply::tool_call("terminal", command.clone()));
    env.llm.push(ScriptedReply::text("Reset."));
    let resp = env.chat(&key, ask("ops", "reset, really")).await;
    let body: Value = resp.json().await.unwrap();
    let id = interaction(&body)["id"].as_str().unwrap().to_owned();
    let body: Value = env.answer(&key, &id, json!({"choice": "always"})).await.json().await.unwrap();
    assert_eq!(answer_text(&body), "Reset.");
    env.llm.push(ScriptedReply::tool_call("terminal", command));
    env.llm.push(ScriptedReply::text("Reset again, no questions."));
    let resp = env.chat(&key, ask("ops", "once more")).await;
    let body: Value = resp.json().await.unwrap();
    assert_eq!(answer_text(&body), "Reset again, no questions.", "{body}");
    assert_eq!(env.count("SELECT count(*) FROM approval_grants WHERE session_id IS NULL").await, 1);

    // A hard-blocked command never asks, whatever was allowed.
    env.llm.push(ScriptedReply::terminal("rm -rf /"));
    env.llm.push(ScriptedReply::text("I will not."));
    let resp = env.chat(&key, ask("ops", "wipe it")).await;
    let body: Value = resp.json().await.unwrap();
    assert_eq!(answer_text(&body), "I will not.");
    assert!(last_tool_result(&env).contains("BLOCKED: recursive delete of / or a system directory is never allowed"));
    env.stop().await;
}

#[tokio::test]
async fn an_unanswered_approval_expires_as_a_denial_and_the_turn_goes_on() {
    let env = TestEnv::start_with(Roles::default(), |c| c.worker.approval_timeout_seconds = 1).await;
    let (_, _, key) = env.tenant("acme", "ops").await;
    env.llm.push(ScriptedReply::terminal("chmod 777 /workspace"));
    env.llm.push(ScriptedReply::text("No answer, so I left the permissions alone."));
    let resp = env.chat(&key, ask("ops", "open it up")).await;
    let body: Value = resp.json().await.unwrap();
    assert_eq!(interaction(&body)["kind"], "approval");
    assert!(env.llm.wait_for_requests(2, Duration::from_secs(30)).await, "the turn resumed on its own");
    assert!(last_tool_result(&env).contains("silence is not consent"));
    env.wait_for_count("SELECT count(*) FROM turns WHERE status = 'completed'", 1).await;
    assert_eq!(env.count("SELECT count(*) FROM turns WHERE status = 'completed'").await, 1);
    assert_eq!(env.count("SELECT count(*) FROM interactions WHERE status = 'expired'").await, 1);
    env.stop().await;
}

#[tokio::test]
async fn clarify_asks_the_user_and_the_turn_resumes_with_the_answer() {
    let Team { env, agent, key, .. } = Team::acme("helper").await;
    env.set_toolsets(agent.id, &["terminal", "clarify"]).await;
    env.llm.push(ScriptedReply::tool_call("clarify", json!({"question": "Which colour?", "choices": ["red", "blue"]})));
    env.llm.push(ScriptedReply::text("Blue it is."));
    let resp = env
        .chat(&key, json!({"model": "helper", "stream": true, "messages": [{"role": "user", "content": "paint it"}]}))
        .await;
    let text = resp.text().await.unwrap();
    let chunks: Vec<Value> = crate::harness::sse_events(&text)
        .into_iter()
        .filter(|(name, data)| name.is_none() && data != "[DONE]")
        .map(|(_, data)| serde_json::from_str(&data).unwrap())
        .collect();
    let content: String = chunks.iter().filter_map(|c| c.pointer("/choices/0/delta/content")?.as_str()).collect();
    assert_eq!(content, "Which colour?\n1. red\n2. blue");
    let asked = chunks.iter().find_map(|c| c.pointer("/hermes/interaction")).expect("the interaction in the stream");
    assert_eq!(asked["kind"], "clarify");
    assert!(text.trim_end().ends_with("data: [DONE]"));

    let id = asked["id"].as_str().unwrap();
    let resp = env.answer(&key, id, json!({"answer": "blue"})).await;
    let body: Value = resp.json().await.unwrap();
    assert_eq!(answer_text(&body), "Blue it is.");
    assert_eq!(last_tool_result(&env), "The user answered: blue");
    env.stop().await;
}

#[tokio::test]
async fn smart_mode_asks_the_model_first_and_the_user_only_when_it_is_unsure() {
    let Team { env, tenant, agent, key } = Team::acme("ops").await;
    env.store.turns().set_approval_mode(tenant, agent.id, hermes_core::ApprovalMode::Smart).await.unwrap();
    // The review approves: the command runs without asking anyone.
    env.llm.push(ScriptedReply::terminal("mkdir -p build && rm -rf build && echo gone"));
    env.llm.push(ScriptedReply::text("APPROVE"));
    env.llm.push(ScriptedReply::text("Removed the build directory."));
    let body: Value = env.chat(&key, ask("ops", "clean")).await.json().await.unwrap();
    assert_eq!(answer_text(&body), "Removed the build directory.");
    let review = env.llm.requests()[1].messages();
    assert!(review[0]["content"].as_str().unwrap().contains("Answer with exactly one word"));
    assert!(review[1]["content"].as_str().unwrap().contains("rm -rf build"));
    assert_eq!(last_tool_result(&env).trim(), "gone");
    assert_eq!(env.count("SELECT count(*) FROM approval_grants WHERE session_id IS NOT NULL").await, 1);

    // The review is unsure: the user is asked.
    env.llm.push(ScriptedReply::terminal("git init -q; git push --force origin main"));
    env.llm.push(ScriptedReply::text("ESCALATE"));
    let body: Value = env.chat(&key, ask("ops", "push")).await.json().await.unwrap();
    assert_eq!(interaction(&body)["prompt"]["pattern_keys"], json!(["git_destructive"]));
    env.stop().await;
}
