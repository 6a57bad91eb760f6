//! A gateway pod killed between sending a reply and recording it: the platform has the part,
//! the outbox does not know. The next pod asks the platform before sending again, so the chat
//! shows each part exactly once: Telegram (the part found by its text among the next message
//! ids) and Slack (found by the metadata it was posted with).

use std::time::Duration;

use serde_json::json;

use hermes_testkit::ScriptedReply;

use crate::harness::{TestEnv, kill, wait_until};
use crate::telegram::{Pod, TOKEN, open_bot, process_settings, sent};

#[tokio::test]
async fn a_telegram_part_sent_by_a_pod_that_died_before_recording_it_is_not_sent_again() {
    let env = TestEnv::start().await;
    let (tg, _) = open_bot(&env).await;
    let pod_a = env.spawn_hermesd_with(&["gateway"], "gateway-a", &process_settings(&env));
    // A two-part answer; Telegram carries out the first send but the answer never comes back.
    let long = format!("{}\n{}", "first half ".repeat(300), "second half ".repeat(300));
    env.llm.push(ScriptedReply::text(long));
    tg.hold_next(TOKEN, "sendMessage");
    tg.user_says(TOKEN, 42, "tell me everything");
    wait_until("the first part at Telegram", async || (tg.sent(TOKEN).len() == 1).then_some(())).await;
    // Pod A dies with the part sent and unrecorded.
    kill(pod_a);
    let doubt = env.count("SELECT count(*) FROM outbox WHERE doubt_part = 0 AND sent_parts = 0").await;
    assert_eq!(doubt, 1, "the outbox knows the first part was on its way");

    // Pod B claims the reply once A's claim lapses, finds the part at Telegram, sends the rest.
    let pod_b = Pod::start(&env).await;
    let got = sent(&tg, 2).await;
    // No part may be sent again for a while: the sleep is the behaviour under test.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let texts: Vec<String> = tg.sent(TOKEN).iter().map(|m| m.text.clone()).collect();
    assert_eq!(texts.len(), 2, "each part exactly once: {texts:?}");
    assert!(got[0].text.contains("first half") && got[0].text.ends_with("(1/2)"), "{}", got[0].text);
    assert!(got[1].text.contains("second half") && got[1].text.ends_with("(2/2)"), "{}", got[1].text);
    let probes = tg.calls(TOKEN).iter().filter(|(m, _)| m == "editMessageText").count();
    assert!(probes >= 1, "the part was looked for before anything was sent again");
    // The last part is recorded just after Telegram took it.
    env.wait_for_count("SELECT count(*) FROM outbox WHERE status = 'sent' AND sent_parts = 2", 1).await;
    assert_eq!(env.count("SELECT count(*) FROM outbox WHERE status = 'sent' AND sent_parts = 2").await, 1);
    pod_b.stop.cancel();
    env.stop().await;
}

#[tokio::test]
async fn a_slack_reply_posted_by_a_pod_that_died_before_recording_it_is_not_posted_again() {
    let env = TestEnv::start().await;
    let (slack, hub) = crate::sockets::slack_app(&env).await;
    let pod_a = env.spawn_hermesd_with(&["gateway"], "gateway-a", &process_settings(&env));
    wait_until("pod A's socket", async || (hub.connections().1 == 1).then_some(())).await;
    env.llm.push(ScriptedReply::text("Posted once."));
    slack.hold_next("chat.postMessage");
    let dm = json!({ "type": "event_callback", "team_id": "T0TEST", "event_id": "EvC1",
        "event": { "type": "message", "channel_type": "im", "user": "U1", "channel": "D1",
                   "ts": "1700000070.000100", "text": "hello" } });
    hub.push("events_api", dm);
    wait_until("the reply at Slack", async || (slack.posted().len() == 1).then_some(())).await;
    kill(pod_a);

    let pod_b = Pod::start(&env).await;
    env.wait_for_count("SELECT count(*) FROM outbox WHERE status = 'sent'", 1).await;
    assert_eq!(env.count("SELECT count(*) FROM outbox WHERE status = 'sent'").await, 1, "the reply is settled");
    let texts: Vec<String> = slack.posted().iter().map(|p| p.text.clone()).collect();
    assert_eq!(texts, ["Posted once."], "posted exactly once");
    pod_b.stop.cancel();
    env.stop().await;
}
