//! Slack apps end to end over the Events API against a local Web API emulator: signatures and
//! the replay window, URL verification, retried events taken once, DMs and threads as
//! conversations, mrkdwn, Block Kit approval buttons, and a long answer in one message.

use serde_json::{Value, json};

use hermes_store::Channel;
use hermes_testkit::ScriptedReply;
use hermes_testkit::slack::{Posted, SlackEmulator};

use crate::harness::{TestEnv, is_preview, poll_until};
use crate::telegram::{Binding, Pod, bind_channel, chat_stack, chat_stack_with};

pub(crate) const TOKEN: &str = "xoxb-test-token";
pub(crate) const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";

pub(crate) async fn bind(env: &TestEnv, slack: &SlackEmulator) -> Channel {
    let credentials = json!({ "token": TOKEN, "signing_secret": SECRET });
    bind_channel(env, slack_binding("webhook", slack, credentials)).await
}

/// Bot UBOT of workspace T0TEST on `slack`, open to direct messages, with U1 its admin.
pub(crate) fn slack_binding<'a>(mode: &'a str, slack: &SlackEmulator, credentials: Value) -> Binding<'a> {
    Binding {
        platform: "slack",
        mode,
        api_base: slack.base_url(),
        credentials,
        identity: "T0TEST:UBOT",
        username: Some("UBOT"),
        dm_policy: "open",
        allow: &[],
        admins: &["U1"],
    }
}

/// A Slack app on the emulator, bound over the Events API to a new tenant's agent.
pub(crate) async fn events_app(env: &TestEnv) -> (SlackEmulator, Channel) {
    let slack = SlackEmulator::start(TOKEN, "UBOT").await.unwrap();
    let channel = bind(env, &slack).await;
    (slack, channel)
}

/// Where Slack posts its `kind` of request (`events`, `interactive`) for `channel` to `pod`.
pub(crate) fn slack_url(pod: &Pod, channel: &Channel, kind: &str) -> String {
    format!("{}/slack/{}/{kind}", pod.url, channel.id)
}

/// Posts `body` as Slack would, signed at `ts` (now when `None`).
pub(crate) async fn signed(env: &TestEnv, url: &str, body: &str, form: bool, ts: Option<i64>) -> (u16, Value) {
    let ts = ts.unwrap_or_else(|| chrono::Utc::now().timestamp()).to_string();
    let sig = hermes_chat::slack::signature(SECRET, &ts, body.as_bytes());
    let kind = if form { "application/x-www-form-urlencoded" } else { "application/json" };
    let resp = env
        .http
        .post(url)
        .header("X-Slack-Request-Timestamp", ts)
        .header("X-Slack-Signature", sig)
        .header("content-type", kind)
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap_or(Value::Null))
}

pub(crate) fn event(id: &str, event: Value) -> String {
    json!({ "type": "event_callback", "team_id": "T0TEST", "event_id": id, "event": event }).to_string()
}

/// Event `id`: `user` mentions the bot in channel C1 at `ts`, outside any thread, saying `text`.
fn app_mention(id: &str, user: &str, ts: &str, text: &str) -> String {
    event(id, json!({"type": "app_mention", "user": user, "channel": "C1", "ts": ts, "text": text}))
}

pub(crate) async fn posted(slack: &SlackEmulator, n: usize) -> Vec<Posted> {
    // A preview of the tools at work is not one of them: wait until the answer replaced it.
    let done = |p: &Vec<Posted>| p.len() >= n && !p.iter().any(|p| is_preview(&p.text));
    let posted = poll_until(async || Some(slack.posted()).filter(done)).await;
    posted.unwrap_or_else(|| {
        panic!("the bot posted {:?}, expected {n}", slack.posted().iter().map(|p| &p.text).collect::<Vec<_>>())
    })
}

#[tokio::test]
async fn slack_events_are_verified_taken_once_and_answered_in_their_dm_or_thread() {
    let (env, slack, channel, pod) = chat_stack(events_app).await;
    let url = slack_url(&pod, &channel, "events");

    let challenge = json!({"type": "url_verification", "challenge": "3eZbrw1aBm2rZgRN", "token": "x"}).to_string();
    let (status, body) = signed(&env, &url, &challenge, false, None).await;
    assert_eq!((status, body["challenge"].as_str()), (200, Some("3eZbrw1aBm2rZgRN")));

    // Forged, or replayed after five minutes: refused, nothing stored.
    let dm = event(
        "Ev1",
        json!({"type": "message", "channel_type": "im", "user": "U1", "channel": "D1",
        "ts": "1700000001.000100", "text": "hi"}),
    );
    let forged = env
        .http
        .post(&url)
        .header("X-Slack-Request-Timestamp", chrono::Utc::now().timestamp().to_string())
        .header("X-Slack-Signature", "v0=00")
        .body(dm.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 401);
    let (status, _) = signed(&env, &url, &dm, false, Some(chrono::Utc::now().timestamp() - 400)).await;
    assert_eq!(status, 401);
    assert_eq!(env.count("SELECT count(*) FROM inbound").await, 0);

    // A DM, delivered twice (Slack retries): one turn, one answer, in mrkdwn.
    env.llm.push(ScriptedReply::text("**Hello** there"));
    assert_eq!(signed(&env, &url, &dm, false, None).await.0, 200);
    assert_eq!(signed(&env, &url, &dm, false, None).await.0, 200);
    let got = posted(&slack, 1).await;
    assert_eq!((got[0].channel.as_str(), got[0].text.as_str()), ("D1", "*Hello* there"));
    assert_eq!(got[0].thread_ts, None);

    // Mentions in a channel: each top-level mention is a thread and a conversation.
    env.llm.push(ScriptedReply::text("Thread one."));
    let mention = app_mention("Ev2", "U1", "1700000002.000100", "<@UBOT> first");
    signed(&env, &url, &mention, false, None).await;
    let got = posted(&slack, 2).await;
    assert_eq!((got[1].channel.as_str(), got[1].thread_ts.as_deref()), ("C1", Some("1700000002.000100")));
    env.llm.push(ScriptedReply::text("Still thread one."));
    let reply = event(
        "Ev3",
        json!({"type": "app_mention", "user": "U2", "channel": "C1",
        "ts": "1700000003.000100", "thread_ts": "1700000002.000100", "text": "<@UBOT> and more"}),
    );
    signed(&env, &url, &reply, false, None).await;
    posted(&slack, 3).await;
    let seen = env.llm.requests().last().unwrap().messages();
    assert!(seen.iter().any(|m| m["content"] == "first"), "the thread's history: {seen:?}");
    // A long answer fits in one Slack message.
    env.llm.push(ScriptedReply::text("word ".repeat(2_000).trim_end()));
    let other = app_mention("Ev4", "U1", "1700000004.000100", "<@UBOT> second topic");
    signed(&env, &url, &other, false, None).await;
    let got = posted(&slack, 4).await;
    assert_eq!(got[3].text.len(), 9_999);
    assert_eq!(
        env.count("SELECT count(*) FROM sessions WHERE source = 'slack'").await,
        3,
        "DM, thread one, thread two"
    );
    assert_eq!(env.count("SELECT count(*) FROM turns").await, 4);
    pod.stop_with(env).await;
}

#[tokio::test]
async fn a_slack_approval_is_answered_with_a_block_kit_button() {
    let (env, slack, channel, pod) = chat_stack(events_app).await;
    let events = slack_url(&pod, &channel, "events");
    let interactive = slack_url(&pod, &channel, "interactive");

    env.llm.push(ScriptedReply::terminal("mkdir -p b && rm -rf b && echo ok"));
    env.llm.push(ScriptedReply::text("Removed."));
    let dm = event(
        "Ev9",
        json!({"type": "message", "channel_type": "im", "user": "U1", "channel": "D1",
        "ts": "1700000009.000100", "text": "clean up"}),
    );
    signed(&env, &events, &dm, false, None).await;
    let got = posted(&slack, 1).await;
    let blocks = got[0].blocks.clone().expect("buttons under the question");
    let value =
        blocks[1]["elements"].as_array().unwrap().iter().find(|b| b["text"]["text"] == "Allow once").unwrap()["value"]
            .as_str()
            .unwrap()
            .to_owned();
    let payload = json!({"type": "block_actions", "trigger_id": "t1", "user": {"id": "U1", "username": "ann"},
        "channel": {"id": "D1"}, "message": {"ts": got[0].ts},
        "actions": [{"action_id": value, "value": value, "action_ts": "1700000010.1"}]});
    let form: String = form_body(&payload.to_string());
    let (status, _) = signed(&env, &interactive, &form, true, None).await;
    assert_eq!(status, 200);
    let got = posted(&slack, 2).await;
    assert_eq!(got[1].text, "Removed.");
    assert!(got[0].text.starts_with("✅ Allowed once."), "the question shows its answer: {}", got[0].text);
    pod.stop_with(env).await;
}

/// `payload=<json>` as a form body.
fn form_body(json: &str) -> String {
    let encoded: String = json
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    format!("payload={encoded}")
}

#[tokio::test]
async fn a_streaming_slack_channel_shows_a_preview_in_the_thread_that_the_answer_replaces() {
    let streaming = hermes_store::ChannelAccess { streaming: Some(true), ..Default::default() };
    let (env, slack, channel, pod) = chat_stack_with(events_app, Some(streaming)).await;
    let url = slack_url(&pod, &channel, "events");
    env.llm.push(ScriptedReply::terminal("sleep 2 && echo built"));
    env.llm.push(ScriptedReply::text("Built."));
    let mention = app_mention("Ev20", "U1", "1700000020.000100", "<@UBOT> build");
    signed(&env, &url, &mention, false, None).await;
    let preview = poll_until(async || slack.all_posted().into_iter().next()).await;
    let preview = preview.expect("a preview while the tool runs");
    assert!(preview.text.contains("⏳ terminal: sleep 2"), "{}", preview.text);
    assert_eq!(preview.thread_ts.as_deref(), Some("1700000020.000100"), "in the thread");
    poll_until(async || {
        let visible = slack.posted();
        (visible.len() == 1 && visible[0].text == "Built.").then_some(())
    })
    .await;
    let visible: Vec<String> = slack.posted().iter().map(|p| p.text.clone()).collect();
    assert_eq!(visible, ["Built."]);
    assert!(slack.all_posted()[0].deleted);
    pod.stop_with(env).await;
}

#[tokio::test]
async fn a_file_shared_with_the_bot_reaches_the_agent() {
    let (env, slack, channel, pod) = chat_stack(events_app).await;
    let url = slack_url(&pod, &channel, "events");
    let file = slack.add_file("F1", b"line one\nline two");
    env.llm.push(ScriptedReply::text("Two lines."));
    let dm = event(
        "Ev30",
        json!({"type": "message", "subtype": "file_share", "channel_type": "im", "user": "U1",
        "channel": "D1", "ts": "1700000030.000100", "text": "read this",
        "files": [{"id": "F1", "name": "notes.txt", "mimetype": "text/plain", "size": 17, "url_private_download": file}]}),
    );
    assert_eq!(signed(&env, &url, &dm, false, None).await.0, 200);
    assert_eq!(posted(&slack, 1).await[0].text, "Two lines.");
    let content = env.llm.requests()[0].messages().last().unwrap()["content"].clone();
    assert_eq!(content[0]["text"], "read this");
    assert!(content[1]["text"].as_str().unwrap().contains("File notes.txt:\n```\nline one\nline two"), "{content}");
    pod.stop_with(env).await;
}
