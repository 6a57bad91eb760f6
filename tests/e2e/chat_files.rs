//! Files from the agent to the chat: an answer's `MEDIA:<path>` lines name workspace files,
//! which the worker reads when the turn ends and the gateway sends after the text (Telegram:
//! a photo and a document; Slack: shared in the thread). A file that cannot be read becomes a
//! note, and a link stays in the text.

use std::time::Duration;

use serde_json::json;

use hermes_testkit::ScriptedReply;
use hermes_testkit::slack::SlackEmulator;
use hermes_testkit::telegram::TelegramEmulator;

use crate::harness::TestEnv;
use crate::telegram::{Binding, Pod, TOKEN, bind, bind_channel, sent};

const MAKE_FILES: &str = "printf 'PNGDATA' > /workspace/chart.png && printf 'a,b\\n1,2\\n' > /workspace/data.csv";
const ANSWER: &str = "Here is the chart.\nMEDIA:/workspace/chart.png\nMEDIA:/workspace/data.csv\n\
                      MEDIA:/workspace/missing.png\nMEDIA:https://example.com/x.png";

#[tokio::test]
async fn files_the_agent_names_reach_a_telegram_chat_after_the_text() {
    let env = TestEnv::start().await;
    let tg = TelegramEmulator::start().await.unwrap();
    bind(&env, &tg, "poll", "open", &[]).await;
    let pod = Pod::start(&env).await;
    env.llm.push(ScriptedReply::tool_call("terminal", json!({ "command": MAKE_FILES })));
    env.llm.push(ScriptedReply::text(ANSWER));
    tg.user_says(TOKEN, 42, "chart the data");
    let got = sent(&tg, 2).await;
    assert_eq!(got[0].text, "Here is the chart.\nhttps://example.com/x.png");
    assert!(got[1].text.starts_with("(I could not attach missing.png: "), "{}", got[1].text);
    let uploads = tg.uploads(TOKEN);
    let summary: Vec<(&str, &str, &[u8])> =
        uploads.iter().map(|u| (u.method.as_str(), u.name.as_str(), u.data.as_slice())).collect();
    assert_eq!(
        summary,
        [("sendPhoto", "chart.png", &b"PNGDATA"[..]), ("sendDocument", "data.csv", &b"a,b\n1,2\n"[..])]
    );
    assert_eq!(uploads[0].chat_id, "42");
    // Each part once, even after a look some time later.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!((tg.sent(TOKEN).len(), tg.uploads(TOKEN).len()), (2, 2));
    pod.stop.cancel();
    env.stop().await;
}

#[tokio::test]
async fn files_the_agent_names_are_shared_in_the_slack_thread() {
    let env = TestEnv::start().await;
    let slack = SlackEmulator::start("xoxb-files", "UBOT").await.unwrap();
    let hub = slack.socket_mode("xapp-files");
    let binding = Binding {
        platform: "slack",
        mode: "socket",
        api_base: slack.base_url(),
        credentials: json!({ "token": "xoxb-files", "app_token": "xapp-files" }),
        identity: "T0TEST:UBOT",
        username: Some("UBOT"),
        dm_policy: "open",
        allow: &[],
    };
    bind_channel(&env, binding).await;
    let pod = Pod::start(&env).await;
    env.llm.push(ScriptedReply::tool_call("terminal", json!({ "command": MAKE_FILES })));
    env.llm.push(ScriptedReply::text(ANSWER));
    let mention = json!({ "type": "event_callback", "team_id": "T0TEST", "event_id": "EvF1",
        "event": { "type": "app_mention", "user": "U1", "channel": "C1", "ts": "1700000050.000100",
                   "text": "<@UBOT> chart the data" } });
    hub.push("events_api", mention);
    for _ in 0..300 {
        if slack.shared_files().len() == 2 && slack.posted().len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let files = slack.shared_files();
    let titles: Vec<&str> = files.iter().map(|f| f.title.as_str()).collect();
    assert_eq!(titles, ["chart.png", "data.csv"]);
    assert_eq!(files[1].data, b"a,b\n1,2\n");
    assert!(files.iter().all(|f| f.channel == "C1" && f.thread_ts.as_deref() == Some("1700000050.000100")));
    let posted: Vec<String> = slack.posted().iter().map(|p| p.text.clone()).collect();
    assert!(posted[0].starts_with("Here is the chart."), "{posted:?}");
    assert!(posted[1].starts_with("(I could not attach missing.png"), "{posted:?}");
    pod.stop.cancel();
    env.stop().await;
}
