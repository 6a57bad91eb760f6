//! Standing goals (`/goal`) from a chat: the agent keeps working, one continuation turn after
//! another, until the judge says the goal is done (an unreadable judge answer counts as "not
//! yet"); a goal stops at its turn budget; `/goal status|pause|resume|clear` answer at once;
//! `/subgoal` criteria reach both the judge and the next turn.

use serde_json::{Value, json};

use hermes_testkit::ScriptedReply;
use hermes_testkit::telegram::TelegramEmulator;

use crate::harness::{Roles, TestEnv};
use crate::openapi::call;
use crate::telegram::{Pod, TOKEN, exchange, open_bot, sent};

/// A Telegram bot of the agent that sends each answer whole (no previews), and a gateway pod.
async fn bot(env: &TestEnv) -> (TelegramEmulator, Pod) {
    let (tg, _) = open_bot(env).await;
    sqlx::query("UPDATE channels SET streaming = false, tool_progress = false").execute(&env.db).await.unwrap();
    (tg, Pod::start(env).await)
}

fn texts(tg: &TelegramEmulator) -> Vec<String> {
    tg.sent(TOKEN).into_iter().map(|m| m.text).collect()
}

#[tokio::test]
async fn a_goal_keeps_the_agent_going_until_the_judge_says_it_is_done() {
    let env = TestEnv::start().await;
    let (tg, pod) = bot(&env).await;
    for reply in [
        ScriptedReply::text("Step 1 done."),
        ScriptedReply::text(r#"{"done": false, "reason": "Two steps are left."}"#),
        ScriptedReply::text("Step 2 done."),
        ScriptedReply::text("I think it is going well"),
        ScriptedReply::text("All done: the release is shipped."),
        ScriptedReply::text("```json\n{\"done\": true, \"reason\": \"It says the release is shipped.\"}\n```"),
    ] {
        env.llm.push(reply);
    }
    tg.user_says(TOKEN, 42, "/goal ship the release");
    sent(&tg, 7).await;
    assert_eq!(
        texts(&tg),
        [
            "⊙ Goal set (20-turn budget): ship the release",
            "Step 1 done.",
            "↻ Continuing toward goal (1/20): Two steps are left.",
            "Step 2 done.",
            "↻ Continuing toward goal (2/20): the judge's answer could not be read",
            "All done: the release is shipped.",
            "✓ Goal achieved: It says the release is shipped.",
        ]
    );
    let requests = env.llm.requests();
    assert_eq!(requests.len(), 6, "three turns, three judgements, nothing more");
    let first = requests[0].messages();
    assert_eq!(first.last().unwrap()["content"], "ship the release", "the goal is the first turn's message");
    let judge = requests[1].messages();
    assert!(judge[0]["content"].as_str().unwrap().contains("strict judge"));
    let asked = judge[1]["content"].as_str().unwrap();
    assert!(asked.starts_with("Goal:\nship the release") && asked.contains("Step 1 done."), "{asked}");
    let next = requests[2].messages();
    let continuation = next.last().unwrap()["content"].as_str().unwrap();
    assert!(continuation.starts_with("[Continuing toward your standing goal]\nGoal: ship the release"));
    assert!(next.iter().any(|m| m["content"] == "Step 1 done."), "the same conversation goes on");
    tg.user_says(TOKEN, 42, "/goal status");
    assert_eq!(
        sent(&tg, 8).await[7].text,
        "⊙ Goal (done, 3/20 turns used): ship the release\nLast check: It says the release is shipped."
    );
    pod.stop_with(env).await;
}

#[tokio::test]
async fn a_goal_pauses_at_its_budget_and_resumes_and_clears_from_the_chat() {
    let env = TestEnv::start_with(Roles::default(), |c| c.worker.goal_max_turns = 2).await;
    let (tg, pod) = bot(&env).await;
    let not_yet = || ScriptedReply::text(json!({"done": false, "reason": "More sheep."}).to_string());
    for reply in [ScriptedReply::text("1 sheep"), not_yet(), ScriptedReply::text("2 sheep"), not_yet()] {
        env.llm.push(reply);
    }
    tg.user_says(TOKEN, 42, "/goal count sheep");
    let got = sent(&tg, 5).await;
    assert_eq!(got[4].text, "⏸ Goal paused — 2/2 turns used. Use /goal resume to keep going, or /goal clear to stop.");
    // No turn may start for a while: the sleep is the behaviour under test.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(env.llm.requests().len(), 4, "no turn after the budget");

    env.llm.push(ScriptedReply::text("3 sheep"));
    exchange(&env, &tg, (42, "/goal resume"), json!({"done": true, "reason": "Enough sheep."}).to_string(), 8).await;
    let all = texts(&tg);
    assert_eq!(all[5], "▶ Goal resumed (0/2 turns used): count sheep");
    assert_eq!(&all[6..], ["3 sheep", "✓ Goal achieved: Enough sheep."]);
    tg.user_says(TOKEN, 42, "/goal clear");
    assert_eq!(sent(&tg, 9).await[8].text, "Goal cleared.");
    tg.user_says(TOKEN, 42, "/goal");
    assert!(sent(&tg, 10).await[9].text.starts_with("No goal set."));
    pod.stop_with(env).await;
}

#[tokio::test]
async fn subgoals_are_criteria_the_judge_and_the_next_turn_both_see() {
    let env = TestEnv::start().await;
    let (tg, pod) = bot(&env).await;
    tg.user_says(TOKEN, 42, "/subgoal with tests");
    assert_eq!(sent(&tg, 1).await[0].text, "Set a goal first: /goal and what you want done.");
    // The first turn is held until the criteria are in, so its judgement sees them.
    env.llm.push(ScriptedReply::text("Parser written.").after(std::time::Duration::from_millis(1_500)));
    env.llm.push(ScriptedReply::text(json!({"done": false, "reason": "No tests yet."}).to_string()));
    env.llm.push(ScriptedReply::text("Parser and tests written."));
    exchange(
        &env,
        &tg,
        (42, "/goal write the parser"),
        json!({"done": true, "reason": "Both are there."}).to_string(),
        2,
    )
    .await;
    tg.user_says(TOKEN, 42, "/subgoal with unit tests");
    tg.user_says(TOKEN, 42, "/subgoal in one file");
    tg.user_says(TOKEN, 42, "/subgoal remove 2");
    sent(&tg, 5).await;
    assert_eq!(texts(&tg)[4], "⊙ Goal: write the parser\nAlso required:\n  1. with unit tests");
    sent(&tg, 9).await;
    let requests = env.llm.requests();
    let judged = requests[1].messages()[1]["content"].as_str().unwrap().to_owned();
    assert!(judged.contains("every one of these is also met") && judged.contains("1. with unit tests"), "{judged}");
    assert!(!judged.contains("in one file"), "a removed criterion is gone: {judged}");
    let next = requests[2].messages().last().unwrap()["content"].as_str().unwrap().to_owned();
    assert!(next.contains("Also required (added along the way):\n1. with unit tests"), "{next}");
    assert_eq!(texts(&tg)[8], "✓ Goal achieved: Both are there.");
    pod.stop_with(env).await;
}

/// The session's goal through the API, once `pred` holds of it.
async fn goal_when(env: &TestEnv, key: &str, session: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let path = format!("/api/sessions/{session}/goal");
    crate::harness::wait_until("the goal to change", async || {
        let (status, goal) = call(env, key, "get", &path, None).await;
        (status == 200 && pred(&goal)).then_some(goal)
    })
    .await
}

#[tokio::test]
async fn a_goal_set_through_the_api_runs_until_done_and_is_paused_resumed_and_dropped_there() {
    let env = TestEnv::start().await;
    let (acme, ops, key) = env.tenant("acme", "ops").await;
    let (_, _, stranger) = env.tenant("beta", "ops").await;
    let (status, session) = call(&env, &key, "post", "/api/sessions", Some(json!({"title": "release"}))).await;
    assert_eq!(status, 201, "{session}");
    let id = session["id"].as_str().unwrap().to_owned();
    let path = format!("/api/sessions/{id}/goal");
    for reply in [
        ScriptedReply::text("Step 1 done."),
        ScriptedReply::text(r#"{"done": false, "reason": "One step left."}"#),
        ScriptedReply::text("All done: the release is shipped."),
        ScriptedReply::text(r#"{"done": true, "reason": "It is shipped."}"#),
    ] {
        env.llm.push(reply);
    }
    let body = json!({"goal": "ship the release", "max_turns": 5, "subgoals": ["the tests pass"]});
    let (status, started) = call(&env, &key, "put", &path, Some(body)).await;
    assert_eq!(status, 202, "{started}");
    assert_eq!((started["state"].as_str(), started["max_turns"].as_i64()), (Some("active"), Some(5)));
    assert!(started["run_id"].as_str().unwrap().starts_with("run_"), "{started}");
    let done = goal_when(&env, &key, &id, |g| g["state"] == "done").await;
    assert_eq!((done["turns_used"].as_i64(), done["last_reason"].as_str()), (Some(2), Some("It is shipped.")));
    let requests = env.llm.requests();
    let first = requests[0].last_text();
    assert!(first.starts_with("[Continuing toward your standing goal]\nGoal: ship the release"), "{first}");
    assert!(first.contains("1. the tests pass"), "{first}");
    let judged = requests[1].messages()[1]["content"].as_str().unwrap().to_owned();
    assert!(judged.contains("1. the tests pass") && judged.contains("Step 1 done."), "{judged}");
    assert!(requests[2].last_text().starts_with("[Continuing toward your standing goal]"));
    // Its steps ran under the key that set it: its usage is the key's.
    let unkeyed = env.count("SELECT count(*) FROM turns WHERE api_key_id IS NULL").await;
    assert_eq!(unkeyed, 0, "every step under the caller's key");
    let (_, messages) = call(&env, &key, "get", &format!("/api/sessions/{id}/messages"), None).await;
    assert!(messages.to_string().contains("All done: the release is shipped."), "the answers are the session's");

    // A chat's goal is set in the chat: no other session takes one from here.
    let made =
        env.store.conversations().create_session(acme, ops.id, hermes_core::SessionSource::Telegram, "tg:42", None);
    let chat = made.await.unwrap();
    let (status, err) =
        call(&env, &key, "put", &format!("/api/sessions/{chat}/goal"), Some(json!({"goal": "x"}))).await;
    assert_eq!(status, 400, "{err}");
    // Another team sees no such session; nonsense is refused with the field named.
    assert_eq!(call(&env, &stranger, "get", &path, None).await.0, 404);
    assert_eq!(call(&env, &stranger, "put", &path, Some(json!({"goal": "mine now"}))).await.0, 404);
    for (body, param) in [
        (json!({"goal": " "}), "goal"),
        (json!({"goal": "x", "max_turns": 500}), "max_turns"),
        (json!({"goal": "x", "deadline": "friday"}), ""),
    ] {
        let (status, err) = call(&env, &key, "put", &path, Some(body.clone())).await;
        assert_eq!(status, 400, "{body}: {err}");
        assert_eq!(err["error"]["param"].as_str().unwrap_or(""), param, "{err}");
    }
    let (status, err) = call(&env, &key, "patch", &path, Some(json!({"state": "done"}))).await;
    assert_eq!((status, err["error"]["param"].as_str()), (400, Some("state")), "{err}");

    // Paused, then resumed with a fresh budget: the idle session takes the next step at once.
    let (status, paused) = call(&env, &key, "patch", &path, Some(json!({"state": "paused"}))).await;
    assert_eq!((status, paused["state"].as_str(), paused["run_id"].as_str()), (200, Some("paused"), None));
    env.llm.push(ScriptedReply::text("Checked again: still shipped."));
    env.llm.push(ScriptedReply::text(r#"{"done": true, "reason": "Still shipped."}"#));
    let (status, resumed) = call(&env, &key, "patch", &path, Some(json!({"state": "active"}))).await;
    assert_eq!((status, resumed["turns_used"].as_i64()), (200, Some(0)), "{resumed}");
    assert!(resumed["run_id"].is_string(), "{resumed}");
    let again = goal_when(&env, &key, &id, |g| g["last_reason"] == "Still shipped.").await;
    assert_eq!(again["state"], "done");

    let (status, dropped) = call(&env, &key, "delete", &path, None).await;
    assert_eq!((status, dropped["deleted"].as_bool()), (200, Some(true)), "{dropped}");
    assert_eq!(call(&env, &key, "get", &path, None).await.0, 404);
    assert_eq!(call(&env, &key, "delete", &path, None).await.0, 404);
    env.stop().await;
}
