//! Files from the agent to the chat: an answer's `MEDIA:<path>` lines name workspace files,
//! which the worker reads when the turn ends and the gateway sends after the text (Telegram:
//! a photo and a document; Slack: shared in the thread). A file that cannot be read becomes a
//! note, and a link stays in the text.

use std::time::Duration;

use serde_json::json;

use hermes_testkit::ScriptedReply;

use crate::harness::{TestEnv, is_preview, poll_until, wait_until};
use crate::telegram::{Pod, TOKEN, exchange, open_chat};

const MAKE_FILES: &str = "printf 'PNGDATA' > /workspace/chart.png && printf 'a,b\\n1,2\\n' > /workspace/data.csv";
const ANSWER: &str = "Here is the chart.\nMEDIA:/workspace/chart.png\nMEDIA:/workspace/data.csv\n\
                      MEDIA:/workspace/missing.png\nMEDIA:https://example.com/x.png";

#[tokio::test]
async fn files_the_agent_names_reach_a_telegram_chat_after_the_text() {
    let (env, tg, _, pod) = open_chat().await;
    env.llm.push(ScriptedReply::tool_call("terminal", json!({ "command": MAKE_FILES })));
    let got = exchange(&env, &tg, (42, "chart the data"), ANSWER, 2).await;
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
    // Each part once, even after a look some time later: the sleep is the behaviour under test.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!((tg.sent(TOKEN).len(), tg.uploads(TOKEN).len()), (2, 2));
    pod.stop_with(env).await;
}

#[tokio::test]
async fn files_the_agent_names_are_shared_in_the_slack_thread() {
    let env = TestEnv::start().await;
    let (slack, hub) = crate::sockets::slack_app(&env).await;
    let pod = Pod::start(&env).await;
    env.llm.push(ScriptedReply::tool_call("terminal", json!({ "command": MAKE_FILES })));
    env.llm.push(ScriptedReply::text(ANSWER));
    let mention = json!({ "type": "event_callback", "team_id": "T0TEST", "event_id": "EvF1",
        "event": { "type": "app_mention", "user": "U1", "channel": "C1", "ts": "1700000050.000100",
                   "text": "<@UBOT> chart the data" } });
    hub.push("events_api", mention);
    let answered = || {
        let posted = slack.posted();
        posted.len() == 2 && !posted.iter().any(|p| is_preview(&p.text))
    };
    poll_until(async || (slack.shared_files().len() == 2 && answered()).then_some(())).await;
    let files = slack.shared_files();
    let titles: Vec<&str> = files.iter().map(|f| f.title.as_str()).collect();
    assert_eq!(titles, ["chart.png", "data.csv"]);
    assert_eq!(files[1].data, b"a,b\n1,2\n");
    assert!(files.iter().all(|f| f.channel == "C1" && f.thread_ts.as_deref() == Some("1700000050.000100")));
    let posted: Vec<String> = slack.posted().iter().map(|p| p.text.clone()).collect();
    assert!(posted[0].starts_with("Here is the chart."), "{posted:?}");
    assert!(posted[1].starts_with("(I could not attach missing.png"), "{posted:?}");
    pod.stop_with(env).await;
}

#[tokio::test]
async fn a_wecom_app_reads_pictures_people_send_and_sends_the_agents_files() {
    let env = TestEnv::start().await;
    let wecom = hermes_testkit::wecom::WecomEmulator::start(crate::wecom::CORP, crate::wecom::SECRET).await.unwrap();
    let channel = crate::wecom::bind(&env, &wecom).await;
    let pod = Pod::start(&env).await;
    let url = format!("{}/wecom/{}", pod.url, channel.id);

    // A picture in: fetched with its MediaId and shown to the agent.
    wecom.add_media("m-1", &hermes_testkit::images::jpeg(64, 48).unwrap());
    env.llm.push(ScriptedReply::text("一只猫。"));
    let (query, body) = crate::wecom::image_callback("zhangsan", "7001", "m-1");
    assert_eq!(env.http.post(format!("{url}{query}")).body(body).send().await.unwrap().status(), 200);
    let content = wait_until("the picture at the model", async || {
        env.llm.requests().first().map(|r| r.messages().last().unwrap()["content"].clone())
    })
    .await;
    assert!(content[0]["image_url"]["url"].as_str().unwrap().starts_with("data:image/jpeg;base64,"), "{content}");
    // The next message waits for this answer: sent while the turn still runs, it would
    // interrupt it (the channel's busy mode), and the answer would rightly never come.
    let first = wait_until("the answer at WeCom", async || wecom.sent().first().cloned()).await;
    assert_eq!(first.content, "一只猫。");

    // Files out: uploaded as media and sent after the text; an unreadable one is a note.
    env.llm.push(ScriptedReply::tool_call("terminal", json!({ "command": MAKE_FILES })));
    env.llm.push(ScriptedReply::text(ANSWER));
    let (query, body) = crate::wecom::callback("zhangsan", "7002", "画个图");
    env.http.post(format!("{url}{query}")).body(body).send().await.unwrap();
    let got = wait_until("five messages at WeCom", async || Some(wecom.sent()).filter(|s| s.len() >= 5)).await;
    let shown: Vec<&str> = got[1..].iter().map(|s| s.content.as_str()).collect();
    assert_eq!(shown[..3], ["Here is the chart.\nhttps://example.com/x.png", "[image]", "[file]"]);
    assert!(shown[3].starts_with("(I could not attach missing.png"), "{shown:?}");
    assert_eq!(got[2].media, Some(("chart.png".to_owned(), b"PNGDATA".to_vec())));
    assert_eq!(got[3].media.as_ref().map(|m| m.0.as_str()), Some("data.csv"));
    pod.stop_with(env).await;
}

#[tokio::test]
async fn a_wecom_ai_bot_answers_with_the_agents_images_attached() {
    let env = TestEnv::start().await;
    let bot = hermes_testkit::wecom_bot::WecomBotEmulator::start("aib-f", "s").await.unwrap();
    crate::sockets::bind_ai_bot(&env, &bot, "aib-f", "s").await;
    let pod = Pod::start(&env).await;
    wait_until("the bot's subscription", async || bot.subscriptions().1.then_some(())).await;
    env.llm.push(ScriptedReply::tool_call("terminal", json!({ "command": MAKE_FILES })));
    env.llm.push(ScriptedReply::text(ANSWER));
    bot.user_says("lisi", None, "画个图").unwrap();
    let replies = wait_until("the bot's answer", async || Some(bot.replies()).filter(|r| !r.is_empty())).await;
    let stream = &replies[0].body["stream"];
    assert_eq!(replies[0].cmd, "aibot_respond_msg");
    let images = stream["msg_item"].as_array().unwrap();
    assert_eq!(images.len(), 1, "the PNG rides on the answer (the emulator checked its MD5)");
    let content = stream["content"].as_str().unwrap();
    assert!(content.starts_with("Here is the chart.\nhttps://example.com/x.png"), "{content}");
    assert!(content.contains("(I made data.csv, but I cannot send it on WeCom.)"), "{content}");
    assert!(content.contains("(I could not attach missing.png"), "{content}");
    pod.stop_with(env).await;
}
