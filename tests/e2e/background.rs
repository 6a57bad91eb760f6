//! Work that outlives a turn (issue 41): `delegate_task(background=true)` answers at once and
//! its children run as turns of their own; the last one's end queues one report on the
//! parent's conversation, answered in its chat; `/agents` lists them, `/stop` cancels them; a
//! worker killed mid-child leaves exactly one report. `/background TEXT` asks in a separate
//! conversation whose answer comes to the chat. A child's tools are told in a chat that shows
//! tool progress. A background process can wake the agent, and one on a terminal (`pty`) is
//! answered by later turns on any worker.
//!
//! Every model answer after the first is the scripted model's default (`$ cmd` runs `cmd` on
//! the terminal, a tool result is quoted back, anything else is echoed), so children and the
//! parent may ask in any order.

use serde_json::json;

use hermes_testkit::ScriptedReply;
use hermes_testkit::telegram::{SentMessage, TelegramEmulator, visible_html};

use crate::harness::{Roles, TestEnv, kill, poll_until};
use crate::telegram::{Pod, TOKEN, open_bot, sent};

/// A quiet bot (whole answers, no tool progress) of an agent with the terminal and delegation.
async fn delegating_bot(env: &TestEnv) -> (TelegramEmulator, Pod) {
    let (tg, channel) = open_bot(env).await;
    sqlx::query("UPDATE channels SET streaming = false, tool_progress = false").execute(&env.db).await.unwrap();
    env.set_toolsets(channel.agent_id, &["terminal", "delegation", "memory"]).await;
    (tg, Pod::start(env).await)
}

/// What the chat shows of each message the bot sent.
fn texts(tg: &TelegramEmulator) -> Vec<String> {
    let shown = |m: SentMessage| match m.parse_mode.as_deref() {
        Some("HTML") => visible_html(&m.text).unwrap_or(m.text),
        _ => m.text,
    };
    tg.sent(TOKEN).into_iter().map(shown).collect()
}

/// Waits until the chat got a message containing `part`.
async fn message_with(tg: &TelegramEmulator, part: &str) -> String {
    let found = poll_until(async || texts(tg).into_iter().find(|t| t.contains(part))).await;
    found.unwrap_or_else(|| panic!("no message with {part:?} in {:?}", texts(tg)))
}

fn delegate(tasks: &[&str]) -> ScriptedReply {
    let tasks: Vec<_> = tasks.iter().map(|goal| json!({"goal": goal})).collect();
    ScriptedReply::tool_call("delegate_task", json!({"tasks": tasks, "background": true}))
}

#[tokio::test]
async fn background_children_report_in_the_chat_while_the_conversation_goes_on() {
    let env = TestEnv::start().await;
    let (tg, pod) = delegating_bot(&env).await;
    env.llm.push(delegate(&["$ sleep 4; echo found-42-files", "$ echo disk-ok"]));
    tg.user_says(TOKEN, 42, "audit the build box");
    sent(&tg, 1).await;
    let handle = texts(&tg).remove(0);
    assert!(handle.contains(r#""status":"started""#) && handle.contains(r#""tasks":2"#), "answered at once: {handle}");

    // The conversation goes on meanwhile.
    tg.user_says(TOKEN, 42, "/agents");
    let listed = message_with(&tg, "background task(s) at work").await;
    assert!(listed.contains("1/2 $ sleep 4; echo found-42-files"), "{listed}");
    let notice = message_with(&tg, "✓ Background task 2/2 done: $ echo disk-ok").await;
    let report = message_with(&tg, "[Background tasks finished").await;
    assert!(report.starts_with("echo: [Background tasks finished: the results of the delegate_task call"), "{report}");
    // Each task, in order, with its child's summary quoted: what its command printed.
    let (first, second) = report.split_once("Task 2: $ echo disk-ok").expect("task 2");
    let (_, first) = first.split_once("Task 1: $ sleep 4; echo found-42-files").expect("task 1");
    assert!(first.contains("The command printed:") && first.contains("found-42-files"), "{report}");
    assert!(second.contains("The command printed:") && second.contains("disk-ok"), "{report}");
    // Nothing more may come: the wait is the behaviour under test.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    // The notice and `/agents`' answer race; each comes once.
    let mut got = texts(&tg);
    got.sort();
    let mut want = [handle, listed, notice, report];
    want.sort();
    assert_eq!(got, want, "one report, one progress notice");

    // The report is a turn of the same conversation.
    let sessions = env.count("SELECT count(*) FROM sessions WHERE lineage IS NULL").await;
    assert_eq!(sessions, 1);
    let children: Vec<(String, String)> = sqlx::query_as(
        "SELECT s.source, p.source FROM sessions s JOIN sessions p ON p.id = s.parent_session_id
         WHERE s.lineage = 'subagent'",
    )
    .fetch_all(&env.db)
    .await
    .unwrap();
    let pair = ("subagent".to_owned(), "telegram".to_owned());
    assert_eq!(children, [pair.clone(), pair]);
    let reported = env.count("SELECT count(*) FROM delegations WHERE state = 'reported'").await;
    assert_eq!(reported, 1);
    // Children ask with the child's prompt and tools, and are metered as sub-agent work.
    let child_requests: Vec<_> = env
        .llm
        .requests()
        .into_iter()
        .filter(|r| r.messages()[0]["content"].as_str().unwrap_or("").contains("delegated by another agent"))
        .collect();
    assert_eq!(child_requests.len(), 4, "two steps each");
    for request in &child_requests {
        let tools: Vec<&str> =
            request.body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
        assert_eq!(tools, ["process", "terminal"], "a leaf: no delegation, no memory");
    }
    let purposes: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT purpose FROM model_calls m JOIN sessions s ON s.id = m.session_id
                             WHERE s.lineage = 'subagent'",
    )
    .fetch_all(&env.db)
    .await
    .unwrap();
    assert_eq!(purposes, ["subagent"]);
    pod.stop_with(env).await;
}

/// Children in the foreground show their tools in the parent's progress message, numbered by
/// task, as upstream's gateway shows them.
#[tokio::test]
async fn foreground_childrens_tools_show_in_the_parents_progress_message() {
    let env = TestEnv::start().await;
    let (tg, pod) = delegating_bot(&env).await;
    sqlx::query("UPDATE channels SET tool_progress = true").execute(&env.db).await.unwrap();
    let tasks = json!({"tasks": [{"goal": "$ sleep 3; echo a-done"}, {"goal": "$ sleep 3; echo b-done"}]});
    env.llm.push(ScriptedReply::tool_call("delegate_task", tasks));
    tg.user_says(TOKEN, 42, "check both services");
    let both = |t: &str| t.contains("🔀 [1] terminal: sleep 3; echo a-done") && t.contains("🔀 [2] terminal: sleep 3");
    let shown = poll_until(async || tg.all_sent(TOKEN).into_iter().find(|m| both(&m.text))).await;
    let shown = shown.unwrap_or_else(|| panic!("no progress with the children's tools: {:?}", tg.all_sent(TOKEN)));
    assert!(shown.text.starts_with("⏳ delegate_task"), "the parent's call, then its children's: {}", shown.text);
    message_with(&tg, "Results of 2 delegated task(s)").await;
    poll_until(async || {
        tg.all_sent(TOKEN).iter().find(|m| m.message_id == shown.message_id).filter(|m| m.deleted).map(|_| ())
    })
    .await
    .expect("the progress message goes when the answer comes");
    pod.stop_with(env).await;
}

/// A child's tools are told in a chat that shows tool progress, a line for every five calls,
/// before the report (upstream's gateway relays a child's tools the same way).
#[tokio::test]
async fn a_background_childs_tools_are_told_in_a_chat_that_shows_tool_progress() {
    let env = TestEnv::start().await;
    let (tg, pod) = delegating_bot(&env).await;
    sqlx::query("UPDATE channels SET tool_progress = true").execute(&env.db).await.unwrap();
    env.llm.push(delegate(&["$ sleep 5; echo warmed-up"]));
    tg.user_says(TOKEN, 42, "index the repo");
    message_with(&tg, r#""status":"started""#).await;
    // The child's next step (after its first command) calls the terminal five times at once.
    let echo = |n: u32| ("terminal".to_owned(), json!({"command": format!("echo part-{n}")}));
    env.llm.push(ScriptedReply::ToolCalls { calls: (1..=5).map(echo).collect(), latency_ms: 0 });
    let line = "🔀 Background task: terminal, terminal, terminal, terminal, terminal";
    message_with(&tg, "[Background tasks finished").await;
    let got = texts(&tg);
    let told = got.iter().position(|t| t == line);
    let reported = got.iter().position(|t| t.contains("[Background tasks finished"));
    assert!(told.is_some() && told < reported, "the progress line, then the report: {got:?}");
    assert_eq!(got.iter().filter(|t| *t == line).count(), 1, "told once: {got:?}");
    pod.stop_with(env).await;
}

#[tokio::test]
async fn stop_cancels_background_children_and_no_report_follows() {
    let env = TestEnv::start().await;
    let (tg, pod) = delegating_bot(&env).await;
    env.llm.push(delegate(&["$ sleep 60; echo never"]));
    tg.user_says(TOKEN, 42, "watch the logs");
    sent(&tg, 1).await;
    let running = "SELECT count(*) FROM turns t JOIN sessions s ON s.id = t.session_id
                   WHERE s.lineage = 'subagent' AND t.status = 'running'";
    env.wait_for_count(running, 1).await;

    tg.user_says(TOKEN, 42, "/stop");
    assert_eq!(sent(&tg, 2).await[1].text, "Stopped, with 1 background task(s).");
    let cancelled = "SELECT count(*) FROM turns t JOIN sessions s ON s.id = t.session_id
                     WHERE s.lineage = 'subagent' AND t.status = 'cancelled'";
    env.wait_for_count(cancelled, 1).await;
    tg.user_says(TOKEN, 42, "/agents");
    assert_eq!(sent(&tg, 3).await[2].text, "No background tasks are running here.");
    // No report may come: the wait is the behaviour under test.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    assert_eq!(texts(&tg).len(), 3, "{:?}", texts(&tg));
    assert_eq!(env.count("SELECT count(*) FROM delegations WHERE state = 'cancelled'").await, 1);
    pod.stop_with(env).await;
}

#[tokio::test]
async fn a_worker_killed_mid_child_leaves_one_report() {
    let env = TestEnv::start_roles(Roles::NO_WORKER).await;
    let (tg, pod) = delegating_bot(&env).await;
    let worker_a = env.spawn_hermesd(&["worker"], "worker-a");
    env.llm.push(delegate(&["$ sleep 5; echo survived"]));
    tg.user_says(TOKEN, 42, "run the long check");
    sent(&tg, 1).await;
    // The child's command has started: its call is stored.
    let started = "SELECT count(*) FROM messages m JOIN sessions s ON s.id = m.session_id
                   WHERE s.lineage = 'subagent' AND m.tool_calls IS NOT NULL";
    env.wait_for_count(started, 1).await;
    kill(worker_a);
    let worker_b = env.spawn_hermesd(&["worker"], "worker-b");

    let report = message_with(&tg, "[Background tasks finished").await;
    assert!(report.contains("Task 1: $ sleep 5; echo survived"), "{report}");
    // Nothing may be sent twice: the wait is the behaviour under test.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    assert_eq!(texts(&tg).len(), 2, "one answer, one report: {:?}", texts(&tg));
    let attempts: i32 = sqlx::query_scalar(
        "SELECT t.attempts FROM turns t JOIN sessions s ON s.id = t.session_id WHERE s.lineage = 'subagent'",
    )
    .fetch_one(&env.db)
    .await
    .unwrap();
    assert_eq!(attempts, 2, "the next worker took the child over");
    assert_eq!(env.count("SELECT count(*) FROM delegations WHERE state = 'reported'").await, 1);
    kill(worker_b);
    pod.stop_with(env).await;
}

#[tokio::test]
async fn a_background_request_is_answered_in_the_chat_from_a_conversation_of_its_own() {
    let env = TestEnv::start().await;
    let (tg, pod) = delegating_bot(&env).await;
    env.llm.push(ScriptedReply::text("Hello."));
    tg.user_says(TOKEN, 42, "hi");
    sent(&tg, 1).await;
    tg.user_says(TOKEN, 42, "/bg what is the weather");
    let answer = message_with(&tg, "echo: what is the weather").await;
    let ack = message_with(&tg, "Working on it in the background").await;
    assert_eq!(texts(&tg).len(), 3, "{:?}", texts(&tg));
    assert!(!ack.is_empty() && !answer.is_empty());
    // Its own conversation: the chat's current one did not see it.
    let request = env.llm.requests().into_iter().find(|r| r.last_text() == "what is the weather").unwrap();
    assert!(!request.messages().iter().any(|m| m["content"] == "hi"), "a fresh conversation");
    assert_eq!(env.count("SELECT count(*) FROM sessions WHERE source = 'telegram'").await, 2);
    tg.user_says(TOKEN, 42, "/background");
    assert!(sent(&tg, 4).await[3].text.starts_with("Write /background and a request"));
    // A command cannot ride in a background request past the channel's gating.
    tg.user_says(TOKEN, 42, "/btw /compress");
    assert_eq!(sent(&tg, 5).await[4].text, "/background takes a request in words; send a command on its own.");
    pod.stop_with(env).await;
}

#[tokio::test]
async fn a_watched_process_wakes_the_agent_when_it_prints_a_pattern_and_when_it_ends() {
    let env = TestEnv::start().await;
    let (tg, pod) = delegating_bot(&env).await;
    let command = "sleep 1; echo 'server READY on :3000'; sleep 5; echo build-done";
    let args = json!({"command": command, "background": true, "notify_on_complete": true, "watch_patterns": ["READY"]});
    env.llm.push(ScriptedReply::tool_call("terminal", args));
    tg.user_says(TOKEN, 42, "start the dev server");
    let started = message_with(&tg, "Started in the background").await;
    assert!(started.contains("You will get a message when its output shows “READY”, and when it ends."), "{started}");
    // Each notice is a turn of the conversation (the scripted model echoes it to the chat).
    let ready = message_with(&tg, "printed “READY”").await;
    assert!(ready.contains("server READY on :3000"), "{ready}");
    let ended = message_with(&tg, "finished: exit code 0").await;
    assert!(ended.contains("build-done"), "{ended}");
    // Nothing more may come: the wait is the behaviour under test.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    assert_eq!(texts(&tg).len(), 3, "{:?}", texts(&tg));
    let sessions = env.count("SELECT count(DISTINCT session_id) FROM turns").await;
    assert_eq!(sessions, 1, "the notices are turns of the same conversation");
    pod.stop_with(env).await;
}

#[tokio::test]
async fn a_worker_killed_while_a_process_is_watched_leaves_one_notice() {
    let env = TestEnv::start_roles(Roles::NO_WORKER).await;
    let (tg, pod) = delegating_bot(&env).await;
    let worker_a = env.spawn_hermesd(&["worker"], "worker-a");
    let args = json!({"command": "sleep 6; echo migrated", "background": true, "notify_on_complete": true});
    env.llm.push(ScriptedReply::tool_call("terminal", args));
    tg.user_says(TOKEN, 42, "run the migration");
    message_with(&tg, "Started in the background").await;
    env.wait_for_count("SELECT count(*) FROM process_watches", 1).await;
    kill(worker_a);
    let worker_b = env.spawn_hermesd(&["worker"], "worker-b");
    let ended = message_with(&tg, "finished: exit code 0").await;
    assert!(ended.contains("migrated"), "{ended}");
    // Nothing may be sent twice: the wait is the behaviour under test.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    assert_eq!(texts(&tg).len(), 2, "one answer, one notice: {:?}", texts(&tg));
    assert_eq!(env.count("SELECT count(*) FROM process_watches WHERE state = 'done'").await, 1);
    kill(worker_b);
    pod.stop_with(env).await;
}

/// `pty`: a program that asks only on a terminal is answered by a later turn, after the worker
/// that started it was killed (the program lives in the sandbox, not in a worker).
#[tokio::test]
async fn a_program_on_a_terminal_is_answered_by_a_later_turn_after_a_worker_kill() {
    let env = TestEnv::start_roles(Roles::NO_WORKER).await;
    let (tg, pod) = delegating_bot(&env).await;
    let worker_a = env.spawn_hermesd(&["worker"], "worker-a");
    let asker = "if [ -t 0 ]; then printf 'Project name? '; read n; echo \"created $n\"; else echo no-terminal; fi";
    env.llm.push(ScriptedReply::tool_call("terminal", json!({"command": asker, "background": true, "pty": true})));
    tg.user_says(TOKEN, 42, "scaffold a project");
    let started = message_with(&tg, "Started in the background as ").await;
    assert!(started.contains("It runs on a terminal"), "{started}");
    let id = started.split("Started in the background as ").nth(1).and_then(|s| s.split('.').next()).unwrap();
    kill(worker_a);
    let worker_b = env.spawn_hermesd(&["worker"], "worker-b");
    env.llm.push(ScriptedReply::tool_call("process", json!({"action": "submit", "session_id": id, "data": "demo"})));
    env.llm.push(ScriptedReply::tool_call("process", json!({"action": "wait", "session_id": id, "timeout": 20})));
    tg.user_says(TOKEN, 42, "call it demo");
    let waited = message_with(&tg, "created demo").await;
    assert!(waited.contains("[exited with code 0 on a terminal]"), "{waited}");
    assert!(waited.contains("Project name? demo\ncreated demo"), "typed, echoed, answered: {waited}");
    kill(worker_b);
    pod.stop_with(env).await;
}
