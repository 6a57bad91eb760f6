//! Telegram chat features against the Bot API emulator: questions answered with buttons or
//! commands, pairing, HTML formatting with its fallback, chat commands, streaming previews,
//! files, split pastes, group conversations, reasoning shown where a channel opts in, and
//! session titles written by a model.

use std::time::Duration;

use serde_json::json;

use hermes_testkit::ScriptedReply;
use hermes_testkit::telegram::{SentMessage, TelegramEmulator};

use crate::harness::{PATIENCE, Roles, TestEnv, poll_until, wait_until};
use crate::telegram::{
    Pod, TOKEN, audited_from_chat, bind, chat_stack_with, exchange, open_bot, open_bot_with_tools, open_chat, sent,
};

/// [`open_chat`] once user 42 said `first` and the bot answered `answer`.
async fn chatting(first: &str, answer: &str) -> (TestEnv, TelegramEmulator, Pod) {
    let (env, tg, _, pod) = open_chat().await;
    exchange(&env, &tg, (42, first), answer, 1).await;
    (env, tg, pod)
}

/// Asks the bot to "build it" (a two-second command, then `answer`): the first message it sends
/// while the command runs (`what` names it when none comes).
async fn first_while_building(env: &TestEnv, tg: &TelegramEmulator, answer: &str, what: &str) -> SentMessage {
    env.llm.push_all([ScriptedReply::terminal("sleep 2 && echo built"), ScriptedReply::text(answer)]);
    tg.user_says(TOKEN, 42, "build it");
    poll_until(async || tg.all_sent(TOKEN).into_iter().next()).await.expect(what)
}

/// The callback data of the button labelled `label` under `message`.
fn button(message: &SentMessage, label: &str) -> String {
    let rows = message.reply_markup.as_ref().and_then(|m| m["inline_keyboard"].as_array()).cloned().unwrap_or_default();
    rows.iter()
        .flat_map(|r| r.as_array().cloned().unwrap_or_default())
        .find(|b| b["text"] == label)
        .and_then(|b| b["callback_data"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no button {label:?} under {:?}", message.text))
}

#[tokio::test]
async fn approvals_and_questions_are_asked_in_the_chat_and_answered_with_buttons_or_commands() {
    let env = TestEnv::start().await;
    let (tg, pod) = open_bot_with_tools(&env, &["terminal", "clarify"]).await;

    // A dangerous command: the question comes with buttons; a press resumes the turn.
    env.llm.push(ScriptedReply::terminal("mkdir -p build && rm -rf build && echo gone"));
    let asked = exchange(&env, &tg, (42, "clean the build"), "Build directory removed.", 1).await;
    assert!(asked[0].text.contains("rm -rf build"), "{}", asked[0].text);
    let data = button(&asked[0], "Allow once");
    tg.press_button(TOKEN, 42, 42, asked[0].message_id, &data);
    let got = sent(&tg, 2).await;
    assert_eq!(got[1].text, "Build directory removed.");
    let question = &tg.sent(TOKEN)[0];
    assert!(question.text.starts_with("✅ Allowed once."), "the question shows its answer: {}", question.text);
    assert!(tg.calls(TOKEN).iter().any(|(m, _)| m == "answerCallbackQuery"));
    // Pressing again changes nothing.
    tg.press_button(TOKEN, 42, 42, asked[0].message_id, &data);
    // Nothing may come for a while: the sleep is the behaviour under test.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(tg.sent(TOKEN).len(), 2);

    // Another approval, answered with /deny.
    env.llm.push(ScriptedReply::terminal("rm -rf /workspace/cache"));
    exchange(&env, &tg, (42, "clear the cache"), "Understood, I left it.", 3).await;
    tg.user_says(TOKEN, 42, "/deny");
    let got = sent(&tg, 5).await;
    let texts: Vec<&str> = got[3..].iter().map(|m| m.text.as_str()).collect();
    assert!(texts.contains(&"🚫 Denied."), "{texts:?}");
    assert!(texts.contains(&"Understood, I left it."), "{texts:?}");

    // A clarifying question is answered by the next plain message.
    env.llm.push(ScriptedReply::tool_call("clarify", json!({"question": "Which environment?"})));
    let got = exchange(&env, &tg, (42, "deploy it"), "Deploying to staging.", 6).await;
    assert!(got[5].text.contains("Which environment?"), "{}", got[5].text);
    tg.user_says(TOKEN, 42, "staging");
    let got = sent(&tg, 8).await;
    assert!(
        got[6..].iter().any(|m| m.text == "Deploying to staging."),
        "{:?}",
        got.iter().map(|m| &m.text).collect::<Vec<_>>()
    );
    let last_tool = env.llm.requests().last().unwrap().messages();
    let answer = last_tool.iter().rev().find(|m| m["role"] == "tool").unwrap();
    assert!(answer["content"].as_str().unwrap().contains("staging"), "{answer}");
    assert_eq!(env.count("SELECT count(*) FROM turns").await, 3, "answers resume turns, they start none");
    pod.stop_with(env).await;
}

#[tokio::test]
async fn a_stranger_pairs_with_a_code_an_admin_approves_in_chat() {
    let env = TestEnv::start().await;
    let tg = TelegramEmulator::start().await.unwrap();
    let channel = bind(&env, &tg, "poll", "pairing", &[]).await;
    let admins = hermes_store::ChannelAccess { admins: Some(vec!["1".into()]), ..Default::default() };
    env.change_access(&channel, &admins).await;
    let pod = Pod::start(&env).await;

    tg.user_says(TOKEN, 42, "hello?");
    let got = sent(&tg, 1).await;
    let code =
        got[0].text.lines().find(|l| l.len() == 8 && l.chars().all(|c| c.is_ascii_alphanumeric())).unwrap().to_owned();
    // Asking again within ten minutes gives the same code.
    tg.user_says(TOKEN, 42, "hello??");
    let got = sent(&tg, 2).await;
    assert!(got[1].text.contains(&code));
    assert_eq!(env.count("SELECT count(*) FROM turns").await, 0, "nothing reaches the agent");

    // Only an admin approves; a wrong code is refused.
    tg.user_says(TOKEN, 7, &format!("/pair approve {code}"));
    tg.user_says(TOKEN, 1, "/pair approve ZZZZZZZZ");
    tg.user_says(TOKEN, 1, &format!("/pair approve {}", code.to_lowercase()));
    let got = sent(&tg, 6).await;
    let texts: Vec<&str> = got.iter().map(|m| m.text.as_str()).collect();
    assert!(texts.iter().any(|t| t.starts_with("Hi! I don't know you yet")), "user 7 is a stranger too: {texts:?}");
    assert!(texts.contains(&"No such code is waiting (it may have expired)."), "{texts:?}");
    assert!(texts.contains(&"Approved: user 42 can talk to me now."), "{texts:?}");
    assert!(got.iter().any(|m| m.chat_id == "42" && m.text.starts_with("You're in!")), "{texts:?}");
    let (actor, approved) = audited_from_chat(&env, "pairing.approved").await;
    assert_eq!(
        (actor.as_str(), &approved["user_id"]),
        ("telegram:1", &serde_json::json!("42")),
        "the chat admin's approval is audited"
    );

    let got = exchange(&env, &tg, (42, "hi, I'm in"), "Nice to meet you.", 7).await;
    assert_eq!(got[6].text, "Nice to meet you.");
    pod.stop_with(env).await;
}

#[tokio::test]
async fn answers_are_formatted_and_fall_back_to_plain_text_when_telegram_refuses_the_markup() {
    let (env, tg, _, pod) = open_chat().await;
    let got = exchange(&env, &tg, (42, "list it"), "**Done**: ran `ls <dir>` for you.", 1).await;
    assert_eq!(got[0].text, "<b>Done</b>: ran <code>ls &lt;dir&gt;</code> for you.");
    assert_eq!(got[0].parse_mode.as_deref(), Some("HTML"));

    tg.fail_next(TOKEN, "sendMessage", 1, 400, "Bad Request: can't parse entities: Unsupported start tag", None);
    let got = exchange(&env, &tg, (42, "again"), "**Again**", 2).await;
    assert_eq!((got[1].text.as_str(), got[1].parse_mode.as_deref()), ("**Again**", None), "plain text, once");
    pod.stop_with(env).await;
}

#[tokio::test]
async fn chat_commands_rename_report_retry_and_stop_the_conversation() {
    let (env, tg, pod) = chatting("hello", "Hi!").await;

    tg.user_says(TOKEN, 42, "/title Project X");
    assert_eq!(sent(&tg, 2).await[1].text, "Renamed to “Project X”.");
    tg.user_says(TOKEN, 42, "/status");
    let status = sent(&tg, 3).await[2].text.clone();
    assert!(status.contains("Project X") && status.contains("2 messages") && status.ends_with("Idle."), "{status}");

    let got = exchange(&env, &tg, (42, "/retry"), "Hi again!", 5).await;
    assert!(got[3..].iter().any(|m| m.text == "Asking again…") && got[3..].iter().any(|m| m.text == "Hi again!"));
    let asked = env.llm.requests().last().unwrap().messages();
    assert_eq!(asked.last().unwrap()["content"], "hello", "the last message, asked again");

    env.llm.push(ScriptedReply::text("A very late answer.").after(Duration::from_secs(5)));
    tg.user_says(TOKEN, 42, "a long task");
    // Stopped while its model call is out.
    env.llm.wait_for_requests(3, PATIENCE).await;
    tg.user_says(TOKEN, 42, "/stop");
    assert_eq!(sent(&tg, 6).await[5].text, "Stopped.");
    tg.user_says(TOKEN, 42, "/usage");
    let usage = sent(&tg, 7).await[6].text.clone();
    assert!(usage.starts_with("Today this assistant made 2 model calls"), "answered calls count: {usage}");
    // Nothing may come for a while: the sleep is the behaviour under test.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(tg.sent(TOKEN).len(), 7, "the stopped task sends nothing");
    pod.stop_with(env).await;
}

#[tokio::test]
async fn a_streaming_channel_shows_a_live_preview_that_the_answer_replaces() {
    let streaming = hermes_store::ChannelAccess { streaming: Some(true), ..Default::default() };
    let (env, tg, _, pod) = chat_stack_with(open_bot, Some(streaming)).await;
    // While the tool runs, a preview shows what the agent is doing.
    let preview = first_while_building(&env, &tg, "The build is done.", "a preview while the tool runs").await;
    assert!(preview.text.contains("⏳ terminal: sleep 2"), "{}", preview.text);
    // Then the answer replaces it: the chat ends with the answer alone.
    let got = sent(&tg, 1).await;
    poll_until(async || only_text(&tg, "The build is done.")).await;
    let visible: Vec<String> = tg.sent(TOKEN).iter().map(|m| m.text.clone()).collect();
    assert_eq!(visible, ["The build is done."], "first seen: {:?}", got.iter().map(|m| &m.text).collect::<Vec<_>>());
    assert!(tg.all_sent(TOKEN)[0].deleted, "the preview was removed");
    pod.stop_with(env).await;
}

#[tokio::test]
async fn tools_at_work_show_in_one_message_without_streaming_unless_turned_off() {
    let (env, tg, channel, pod) = open_chat().await;
    let progress = first_while_building(&env, &tg, "Built.", "the tool at work is shown").await;
    assert!(progress.text.starts_with("⏳ terminal: sleep 2"), "{}", progress.text);
    assert!(!progress.text.contains('▉'), "no answer text without streaming: {}", progress.text);
    sent(&tg, 1).await;
    poll_until(async || only_text(&tg, "Built.")).await;
    assert_eq!(tg.sent(TOKEN).iter().map(|m| m.text.clone()).collect::<Vec<_>>(), ["Built."]);
    assert!(tg.all_sent(TOKEN)[0].deleted, "the progress message goes when the answer comes");

    // Turned off: only the answer.
    let off = hermes_store::ChannelAccess { tool_progress: Some(false), ..Default::default() };
    env.change_access(&channel, &off).await;
    env.llm.push(ScriptedReply::terminal("sleep 2 && echo again"));
    exchange(&env, &tg, (42, "once more"), "Again.", 2).await;
    assert_eq!(tg.all_sent(TOKEN).len(), 3, "no second progress message: {:?}", tg.all_sent(TOKEN));
    pod.stop_with(env).await;
}

#[tokio::test]
async fn photos_and_text_files_reach_the_agent_and_other_files_are_kept_in_the_inbox() {
    let (env, tg, _, pod) = open_chat().await;
    env.llm.push(ScriptedReply::text("A cat."));
    let photo = hermes_testkit::images::jpeg(64, 48).unwrap();
    tg.user_sends_photo(TOKEN, 42, "photo-1", &photo, Some("what is this?"));
    assert_eq!(sent(&tg, 1).await[0].text, "A cat.");
    let parts = env.llm.requests()[0].messages().last().unwrap()["content"].clone();
    assert_eq!(parts[0], json!({"type": "text", "text": "what is this?"}));
    assert!(parts[1]["image_url"]["url"].as_str().unwrap().starts_with("data:image/jpeg;base64,/9j/"), "{parts}");

    env.llm.push(ScriptedReply::text("Two lines."));
    tg.user_sends_document(TOKEN, 42, "doc-1", "notes.txt", "text/plain", "first line\nsecond line".as_bytes());
    sent(&tg, 2).await;
    let content = env.llm.requests()[1].messages().last().unwrap()["content"].clone();
    assert!(
        content[0]["text"].as_str().unwrap().contains("File notes.txt:\n```\nfirst line\nsecond line"),
        "{content}"
    );

    // Any other file is kept in the workspace's inbox (tests/e2e/inbox.rs); the agent is told where.
    env.llm.push(ScriptedReply::text("Kept."));
    tg.user_sends_document(TOKEN, 42, "doc-2", "movie.mp4", "video/mp4", b"\x00\x01");
    sent(&tg, 3).await;
    let content = env.llm.requests()[2].messages().last().unwrap()["content"].clone();
    assert!(
        content[0]["text"]
            .as_str()
            .unwrap()
            .contains("movie.mp4 (video/mp4, 2 B). It is saved at /workspace/inbox/movie.mp4."),
        "{content}"
    );
    pod.stop_with(env).await;
}

#[tokio::test]
async fn a_paste_the_chat_app_split_in_parts_is_answered_as_one_message() {
    let env = TestEnv::start().await;
    let (tg, _) = open_bot(&env).await;
    env.llm.push(ScriptedReply::text("Got all of it."));
    // Both parts arrive within the batching moment, before the turn may start.
    tg.user_says(TOKEN, 42, "part one of a long paste");
    tg.user_says(TOKEN, 42, "part two of it");
    let pod = Pod::start(&env).await;
    assert_eq!(sent(&tg, 1).await[0].text, "Got all of it.");
    // No second answer may come for a while: the sleep is the behaviour under test.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(tg.sent(TOKEN).len(), 1);
    assert_eq!(env.count("SELECT count(*) FROM turns").await, 1);
    let seen = env.llm.requests()[0].messages();
    assert_eq!(seen.last().unwrap()["content"], "part one of a long paste\npart two of it");
    pod.stop_with(env).await;
}

#[tokio::test]
async fn a_group_is_one_conversation_or_one_per_person_as_the_channel_says() {
    let (env, tg, channel, pod) = open_chat().await;
    for n in 0..2 {
        env.llm.push(ScriptedReply::text(format!("shared {n}")));
        tg.group_says(TOKEN, -500, 40 + n, "@HermesTestBot hi", None);
        sent(&tg, usize::try_from(n + 1).unwrap()).await;
    }
    assert_eq!(env.count("SELECT count(*) FROM sessions").await, 1, "one conversation for the group");
    let per_user =
        hermes_store::ChannelAccess { group_sessions: Some(hermes_core::GroupSessions::User), ..Default::default() };
    env.change_access(&channel, &per_user).await;
    for n in 0..2 {
        env.llm.push(ScriptedReply::text(format!("own {n}")));
        tg.group_says(TOKEN, -500, 40 + n, "@HermesTestBot again", None);
        sent(&tg, usize::try_from(n + 3).unwrap()).await;
    }
    assert_eq!(env.count("SELECT count(*) FROM sessions").await, 3, "then one per person");
    pod.stop_with(env).await;
}

#[tokio::test]
async fn an_earlier_conversation_is_listed_and_resumed() {
    let (env, tg, pod) = chatting("the code word is heron", "Noted: the code word is heron.").await;
    tg.user_says(TOKEN, 42, "/new");
    sent(&tg, 2).await;
    exchange(&env, &tg, (42, "something else"), "Hello again.", 3).await;

    tg.user_says(TOKEN, 42, "/sessions");
    let list = sent(&tg, 4).await[3].text.clone();
    assert!(list.contains("1. something else") && list.contains("← current"), "{list}");
    assert!(list.contains("2. the code word is heron"), "{list}");
    tg.user_says(TOKEN, 42, "/resume 2");
    assert_eq!(sent(&tg, 5).await[4].text, "Back to “the code word is heron”.");
    exchange(&env, &tg, (42, "what was the code word?"), "Heron.", 6).await;
    let seen = env.llm.requests().last().unwrap().messages();
    assert!(seen.iter().any(|m| m["content"] == "the code word is heron"), "the resumed history: {seen:?}");
    assert!(!seen.iter().any(|m| m["content"] == "something else"));
    pod.stop_with(env).await;
}

/// `Some` once the chat shows `text` alone (what replaced a preview).
fn only_text(tg: &TelegramEmulator, text: &str) -> Option<()> {
    let visible = tg.sent(TOKEN);
    (visible.len() == 1 && visible[0].text == text).then_some(())
}

#[tokio::test]
async fn reasoning_is_shown_above_the_answer_only_where_the_channel_opts_in() {
    let (env, tg, channel, pod) = open_chat().await;
    env.llm.push(ScriptedReply::text("It is 42.").with_reasoning("Six times seven."));
    tg.user_says(TOKEN, 42, "what is 6 x 7?");
    assert_eq!(sent(&tg, 1).await[0].text, "It is 42.", "scratch work stays out of the chat by default");

    let shown = hermes_store::ChannelAccess { show_reasoning: Some(true), ..Default::default() };
    env.change_access(&channel, &shown).await;
    env.llm.push(ScriptedReply::text("It is 56.").with_reasoning("Seven times eight."));
    tg.user_says(TOKEN, 42, "and 7 x 8?");
    let got = sent(&tg, 2).await[1].text.clone();
    assert!(got.starts_with("💭 <b>Reasoning:</b>\n<pre>Seven times eight.</pre>"), "{got}");
    assert!(got.ends_with("It is 56."), "{got}");
    pod.stop_with(env).await;
}

/// The session's title and who wrote it, once a model did (`None` until then).
async fn model_title(env: &TestEnv) -> Option<(String, String)> {
    sqlx::query_as("SELECT title, title_source FROM sessions WHERE title_source = 'model'")
        .fetch_optional(&env.db)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_model_titles_a_chat_session_after_its_first_exchange_in_the_background() {
    let env = TestEnv::start_with(Roles::default(), |c| c.llm.session_titles = true).await;
    let (tg, _channel) = open_bot(&env).await;
    let pod = Pod::start(&env).await;
    env.llm.push(ScriptedReply::text("Lisbon in May is lovely; book early."));
    env.llm.push(ScriptedReply::text("Title: \"Planning a May trip to Lisbon\"\nI hope that helps."));
    tg.user_says(TOKEN, 42, "help me plan a trip to lisbon in may");
    assert_eq!(sent(&tg, 1).await[0].text, "Lisbon in May is lovely; book early.", "the answer comes first");
    let (title, _) = wait_until("the model's title", async || model_title(&env).await).await;
    assert_eq!(title, "Planning a May trip to Lisbon", "one clean line");

    let requests = env.llm.requests();
    assert_eq!(requests.len(), 2, "the answer and the title");
    let asked = &requests[1];
    assert!(asked.messages()[0]["content"].as_str().unwrap().contains("short, descriptive title"));
    let exchange = asked.last_text();
    assert!(
        exchange.starts_with("User: help me plan a trip to lisbon in may\n\nAssistant: Lisbon in May"),
        "{exchange}"
    );
    assert!(asked.body["tools"].as_array().is_none_or(Vec::is_empty), "the title model gets no tools");
    let purposes: Vec<String> =
        sqlx::query_scalar("SELECT purpose FROM model_calls ORDER BY purpose").fetch_all(&env.db).await.unwrap();
    assert_eq!(purposes, ["auxiliary", "main"], "the title's call is metered as side work");

    // Later exchanges keep the title: no further title call.
    env.llm.push(ScriptedReply::text("June is hotter."));
    tg.user_says(TOKEN, 42, "and in june?");
    assert_eq!(sent(&tg, 2).await[1].text, "June is hotter.");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(env.llm.requests().len(), 3, "only the second answer");
    assert_eq!(model_title(&env).await.unwrap().0, "Planning a May trip to Lisbon");
    pod.stop_with(env).await;
}
