//! Bots reached through a socket we keep, end to end against local emulators: a Slack app in
//! Socket Mode (envelopes acknowledged once stored, redelivered ones taken once, the slash
//! command, Slack's reconnect request, and another pod taking the app over when the pod
//! holding it is killed) and a WeCom AI bot on its long connection (subscription, Chinese
//! answered under the message's `req_id`, a long answer in 4,000-character parts, groups,
//! encrypted media, reconnecting after the socket drops, and a refused secret).

use std::time::Duration;

use base64::Engine;

use serde_json::json;

use hermes_store::Channel;
use hermes_testkit::ScriptedReply;
use hermes_testkit::slack::SlackEmulator;
use hermes_testkit::slack_socket::SocketHub;
use hermes_testkit::wecom_bot::{BotReply, WecomBotEmulator};

use crate::harness::{TestEnv, kill, poll_until, wait_until};
use crate::telegram::{Binding, Pod, bind_channel, chat_stack};

/// A Slack app in Socket Mode (bot token `xoxb-sock`, app token `xapp-sock`), bound to a new
/// tenant's agent: its Web API and its socket hub.
pub(crate) async fn slack_app(env: &TestEnv) -> (SlackEmulator, std::sync::Arc<SocketHub>) {
    let slack = SlackEmulator::start("xoxb-sock", "UBOT").await.unwrap();
    let hub = slack.socket_mode("xapp-sock");
    let credentials = json!({ "token": "xoxb-sock", "app_token": "xapp-sock" });
    bind_channel(env, crate::slack::slack_binding("socket", &slack, credentials)).await;
    (slack, hub)
}

fn dm_event(id: &str, ts: &str, text: &str) -> serde_json::Value {
    json!({ "type": "event_callback", "team_id": "T0TEST", "event_id": id,
            "event": { "type": "message", "channel_type": "im", "user": "U1", "channel": "D1", "ts": ts, "text": text } })
}

#[tokio::test]
async fn a_slack_app_in_socket_mode_answers_once_and_another_pod_takes_it_over_when_its_pod_is_killed() {
    let env = TestEnv::start().await;
    let (slack, hub) = slack_app(&env).await;
    // Pod A is a real gateway process, so it can die without a goodbye.
    let pod_a = env.spawn_hermesd_with(&["gateway"], "gateway-a", &crate::telegram::process_settings(&env));
    wait_until("pod A's socket", async || (hub.connections().1 == 1).then_some(())).await;

    // A message: answered once; the envelope is acknowledged. The same event again (Slack's
    // retry in a new envelope) is acknowledged and not answered twice.
    env.llm.push(ScriptedReply::text("Hello over the socket."));
    let first = hub.push("events_api", dm_event("Ev1", "1700000001.000100", "hi"));
    wait_until("the answer", async || (slack.posted().len() == 1).then_some(())).await;
    assert_eq!(slack.posted()[0].text, "Hello over the socket.");
    wait_until("the ack", async || hub.ack(&first)).await;
    let again = hub.push("events_api", dm_event("Ev1", "1700000001.000100", "hi"));
    wait_until("the second ack", async || hub.ack(&again)).await;

    // The slash command is acknowledged with Slack's immediate answer and then runs.
    let form = json!({ "command": "/hermes", "text": "whoami", "user_id": "U1", "user_name": "ann",
                       "channel_id": "D1", "channel_name": "directmessage", "trigger_id": "t1" });
    let command = hub.push("slash_commands", form);
    let ack = wait_until("the command's ack", async || hub.ack(&command)).await;
    assert_eq!(ack["payload"]["text"], "On it…");
    wait_until("the command's answer", async || (slack.posted().len() == 2).then_some(())).await;
    assert!(slack.posted()[1].text.contains("U1"), "{:?}", slack.posted()[1].text);

    // Slack asks for a fresh connection: the app reconnects at once.
    hub.disconnect("refresh_requested");
    wait_until("a fresh socket", async || (hub.connections().0 >= 2 && hub.connections().1 == 1).then_some(())).await;

    // A dies holding the app. What Slack sends meanwhile is not lost: B takes the app over once
    // the lease lapses and gets it.
    let pod_b = Pod::start(&env).await;
    kill(pod_a);
    env.llm.push(ScriptedReply::text("Still here."));
    let during = hub.push("events_api", dm_event("Ev2", "1700000002.000100", "are you there?"));
    wait_until("pod B's answer", async || (slack.posted().len() == 3).then_some(())).await;
    assert_eq!(slack.posted()[2].text, "Still here.");
    wait_until("B's ack", async || hub.ack(&during)).await;
    // No second answer may come for a while: the sleep is the behaviour under test.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(slack.posted().len(), 3, "each message answered exactly once");
    assert_eq!(env.count("SELECT count(*) FROM turns").await, 2);
    pod_b.stop.cancel();
    env.stop().await;
}

/// A WeCom AI bot `bot_id` on `bot`, bound to a new tenant's agent with `secret`.
pub(crate) async fn bind_ai_bot(env: &TestEnv, bot: &WecomBotEmulator, bot_id: &str, secret: &str) -> Channel {
    let identity = format!("aibot:{bot_id}");
    let binding = Binding {
        platform: "wecom",
        mode: "websocket",
        api_base: bot.url(),
        credentials: json!({ "bot_id": bot_id, "secret": secret }),
        identity: &identity,
        username: Some(bot_id),
        dm_policy: "open",
        allow: &[],
        admins: &["zhangsan"],
    };
    bind_channel(env, binding).await
}

/// AI bot aib-1 (its secret is s3cret) on the emulator, bound with `secret`, and a gateway pod.
async fn ai_bot_stack(secret: &str) -> (TestEnv, WecomBotEmulator, Channel, Pod) {
    chat_stack(async |env| {
        let bot = WecomBotEmulator::start("aib-1", "s3cret").await.unwrap();
        let channel = bind_ai_bot(env, &bot, "aib-1", secret).await;
        (bot, channel)
    })
    .await
}

async fn replies(bot: &WecomBotEmulator, n: usize) -> Vec<BotReply> {
    wait_until(&format!("{n} replies"), async || {
        let r = bot.replies();
        (r.len() >= n).then_some(r)
    })
    .await
}

#[tokio::test]
async fn a_wecom_ai_bot_answers_chinese_under_the_messages_req_id_and_reconnects_when_the_socket_drops() {
    let (env, bot, _, pod) = ai_bot_stack("s3cret").await;
    wait_until("the subscription", async || (bot.subscriptions() == (1, true)).then_some(())).await;

    // Chinese in and out, the answer under the message's own req_id.
    env.llm.push(ScriptedReply::text("你好！我是你的助手。"));
    bot.user_says("zhangsan", None, "你好，介绍一下你自己").unwrap();
    let got = replies(&bot, 1).await;
    assert_eq!((got[0].cmd.as_str(), got[0].content().as_str()), ("aibot_respond_msg", "你好！我是你的助手。"));
    assert_eq!(got[0].req_id, "req1");
    assert_eq!(got[0].body["stream"]["finish"], true);
    assert_eq!(env.llm.requests()[0].messages().last().unwrap()["content"], "你好，介绍一下你自己");

    // 10,000 characters: the first part answers the message, the rest are pushed to the chat.
    env.llm.push(ScriptedReply::text("长".repeat(10_000)));
    bot.user_says("zhangsan", None, "写长一点").unwrap();
    let got = replies(&bot, 4).await;
    let parts = &got[1..];
    assert_eq!(parts.len(), 3);
    assert_eq!(parts[0].cmd, "aibot_respond_msg");
    assert!(parts[1..].iter().all(|p| p.cmd == "aibot_send_msg" && p.body["chatid"] == "zhangsan"));
    assert!(parts.iter().all(|p| p.content().chars().count() <= 4_000));
    assert_eq!(parts.iter().map(|p| p.content().matches('长').count()).sum::<usize>(), 10_000);
    assert!(parts[2].content().ends_with("(3/3)"));

    // A group: the mention is dropped; the conversation is the group's.
    env.llm.push(ScriptedReply::text("收到。"));
    bot.user_says("lisi", Some("grp-9"), "@小助手 今天的安排").unwrap();
    let got = replies(&bot, 5).await;
    assert_eq!(got[4].content(), "收到。");
    assert_eq!(env.llm.requests()[2].messages().last().unwrap()["content"], "今天的安排");
    assert_eq!(env.count("SELECT count(*) FROM session_routes WHERE route_key LIKE '%:group:grp-9'").await, 1);

    // An encrypted image reaches the agent decrypted.
    let key = "kWxPEV2UEDyxWpmPdKC3F4dgPDmOvfKX1HGnEUDS1aQ";
    let png = hermes_testkit::images::png(16, 16).unwrap();
    let url = bot.add_media("img1", hermes_chat::wecom_bot::encrypt_media(key, &png).unwrap());
    env.llm.push(ScriptedReply::text("一张图片。"));
    bot.deliver("zhangsan", false, json!({ "msgtype": "image", "image": { "url": url, "aeskey": key } })).unwrap();
    replies(&bot, 6).await;
    let content = env.llm.requests()[3].messages().last().unwrap()["content"].clone();
    let data_url = content[0]["image_url"]["url"].as_str().unwrap().to_owned();
    let sent = base64::engine::general_purpose::STANDARD.encode(&png);
    assert_eq!(data_url, format!("data:image/png;base64,{sent}"), "decrypted, and small enough to go as it came");

    // The socket drops: the bot subscribes again (after 2 s) and keeps answering.
    bot.kick();
    wait_until("a new subscription", async || (bot.subscriptions() == (2, true)).then_some(())).await;
    env.llm.push(ScriptedReply::text("我回来了。"));
    bot.user_says("zhangsan", None, "还在吗").unwrap();
    assert_eq!(replies(&bot, 7).await[6].content(), "我回来了。");
    pod.stop_with(env).await;
}

#[tokio::test]
async fn a_wecom_ai_bot_whose_heartbeats_go_unanswered_reconnects() {
    // The test pod pings every second.
    let (env, bot, _, pod) = ai_bot_stack("s3cret").await;
    wait_until("the subscription", async || (bot.subscriptions() == (1, true)).then_some(())).await;
    wait_until("a heartbeat", async || (bot.pings() >= 1).then_some(())).await;
    assert_eq!(bot.subscriptions().0, 1, "answered heartbeats keep the socket");
    // The socket dies silently: two pings go unanswered, then the bot subscribes again.
    bot.mute_pings(true);
    let before = bot.pings();
    wait_until("a new subscription", async || (bot.subscriptions().0 >= 2).then_some(())).await;
    assert!(bot.pings() >= before + 2, "two unanswered pings first");
    bot.mute_pings(false);
    env.llm.push(ScriptedReply::text("又连上了。"));
    wait_until("a live socket", async || bot.user_says("zhangsan", None, "在吗").map(|_| ())).await;
    assert_eq!(replies(&bot, 1).await[0].content(), "又连上了。");
    pod.stop_with(env).await;
}

#[tokio::test]
async fn a_wecom_ai_bot_with_a_wrong_secret_is_marked_and_not_retried() {
    let (env, bot, channel, pod) = ai_bot_stack("wrong").await;
    let marked = poll_until(async || {
        Some(env.store.system().gateway_channel(channel.id).await.unwrap())
            .filter(|c| c.status == hermes_core::ChannelStatus::Blocked)
    });
    let c = marked.await.unwrap_or_else(|| panic!("the channel was not marked"));
    assert!(c.status_reason.as_deref().unwrap_or_default().contains("853000"), "{:?}", c.status_reason);
    assert_eq!(bot.subscriptions().0, 0);
    pod.stop_with(env).await;
}
