//! Busy mode `steer` and the chat commands about history and the agent, against the Telegram
//! emulator: a message sent while the agent works reaches the running turn before its next
//! model call (and is not answered twice), one that comes too late runs on its own, `/steer`
//! and `/queue` choose the mode per message, `/undo` takes an exchange back, `/model` shows and
//! switches the model, and admin-only commands are refused to others.

use std::time::Duration;

use serde_json::json;

use hermes_store::ChannelAccess;
use hermes_testkit::ScriptedReply;
use hermes_testkit::telegram::TelegramEmulator;

use crate::harness::{PATIENCE, TestEnv};
use crate::telegram::{TOKEN, audited_from_chat, chat_stack_with, exchange, open_bot, open_chat, sent};

/// User 42 says `first`, then `second` while the model call for `first` is out.
async fn says_during_the_call_for(env: &TestEnv, tg: &TelegramEmulator, first: &str, second: &str) {
    let calls = env.llm.requests().len();
    tg.user_says(TOKEN, 42, first);
    assert!(env.llm.wait_for_requests(calls + 1, PATIENCE).await, "the model call for {first:?}");
    tg.user_says(TOKEN, 42, second);
}

#[tokio::test]
async fn a_message_sent_while_the_agent_works_steers_the_running_turn() {
    let steer = ChannelAccess { busy_mode: Some(hermes_core::BusyMode::Steer), ..Default::default() };
    let (env, tg, _, pod) = chat_stack_with(open_bot, Some(steer)).await;

    // The first model call is slow and asks for a tool; the person adds a word meanwhile.
    env.llm.push(ScriptedReply::tool_call("no_such_tool", json!({})).after(Duration::from_millis(1_500)));
    env.llm.push(ScriptedReply::text("Voilà, en français."));
    tg.user_says(TOKEN, 42, "summarise the plan");
    // The word comes while the first model call is out (it answers 1.5 s after it arrived).
    assert!(env.llm.wait_for_requests(1, PATIENCE).await, "the first model call");
    tg.user_says(TOKEN, 42, "in French please");
    let got = sent(&tg, 1).await;
    assert_eq!(got[0].text, "Voilà, en français.");
    let second = env.llm.requests()[1].messages();
    let notes: Vec<String> = second.iter().filter_map(|m| m["content"].as_str().map(str::to_owned)).collect();
    assert!(notes.iter().any(|t| t == "[While you were working, the user added: in French please]"), "{notes:?}");
    // Nothing more may come for a while: the sleep is the behaviour under test.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(tg.sent(TOKEN).len(), 1, "the steering message has no answer of its own");
    assert_eq!(env.llm.requests().len(), 2, "and starts no turn");
    let steered = env.count("SELECT count(*) FROM turns WHERE steer AND outcome->>'error_code' = 'steered'").await;
    assert_eq!(steered, 1);

    // Too late to steer (the turn has made its last call): it runs on its own afterwards.
    env.llm.push(ScriptedReply::text("First.").after(Duration::from_millis(1_000)));
    env.llm.push(ScriptedReply::text("Second."));
    // "two" comes while the turn's last model call is out (it answers 1 s after it arrived).
    says_during_the_call_for(&env, &tg, "one", "two").await;
    let texts: Vec<String> = sent(&tg, 3).await.iter().map(|m| m.text.clone()).collect();
    assert_eq!(texts[1..], ["First.", "Second."]);

    // Per message: /queue waits its turn even in steer mode; /steer alone explains itself.
    tg.user_says(TOKEN, 42, "/steer");
    let got = sent(&tg, 4).await;
    assert!(got[3].text.starts_with("Write /steer and a message"), "{}", got[3].text);
    env.llm.push(ScriptedReply::text("A.").after(Duration::from_millis(800)));
    env.llm.push(ScriptedReply::text("B."));
    // "/queue b" comes while the model call for "a" is out (it answers 0.8 s after it arrived).
    says_during_the_call_for(&env, &tg, "a", "/queue b").await;
    let texts: Vec<String> = sent(&tg, 6).await.iter().map(|m| m.text.clone()).collect();
    assert_eq!(texts[4..], ["A.", "B."]);
    assert_eq!(env.llm.requests().last().unwrap().messages().last().unwrap()["content"], "b");
    pod.stop_with(env).await;
}

#[tokio::test]
async fn undo_takes_an_exchange_back_and_model_is_for_admins() {
    let admins = ChannelAccess { admins: Some(vec!["1".into()]), ..Default::default() };
    let (env, tg, _, pod) = chat_stack_with(open_bot, Some(admins)).await;

    exchange(&env, &tg, (42, "capital of France?"), "Paris.", 1).await;
    exchange(&env, &tg, (42, "and Germany?"), "Berlin.", 2).await;
    tg.user_says(TOKEN, 42, "/undo");
    let got = sent(&tg, 3).await;
    assert!(got[2].text.starts_with("Took back your last message"), "{}", got[2].text);
    // The next turn sees only the first exchange.
    exchange(&env, &tg, (42, "and Italy?"), "Rome.", 4).await;
    let seen = env.llm.requests().last().unwrap().texts_of("user");
    assert_eq!(seen, ["capital of France?", "and Italy?"]);

    // /model: shown to everyone? No: it is an admin command by default; user 1 is the admin.
    tg.user_says(TOKEN, 42, "/model gpt-x");
    let got = sent(&tg, 5).await;
    assert_eq!(got[4].text, "Only this bot's admins can use /model.");
    tg.user_says(TOKEN, 1, "/model");
    let got = sent(&tg, 6).await;
    assert!(got[5].text.starts_with("I'm using "), "{}", got[5].text);
    tg.user_says(TOKEN, 1, "/model tiny-model");
    let got = sent(&tg, 7).await;
    assert!(got[6].text.ends_with("to tiny-model. The next message uses it."), "{}", got[6].text);
    let (actor, after) = audited_from_chat(&env, "agent.model_switched").await;
    assert_eq!(
        (actor.as_str(), &after["model"]),
        ("telegram:1", &serde_json::json!("tiny-model")),
        "audited as the chat admin"
    );
    exchange(&env, &tg, (1, "hello"), "Small but quick.", 8).await;
    assert_eq!(env.llm.requests().last().unwrap().body["model"], "tiny-model");
    // Everyone may list skills and ask for help.
    tg.user_says(TOKEN, 42, "/skills");
    let got = sent(&tg, 9).await;
    assert!(got[8].text.starts_with("I have"), "{}", got[8].text);
    pod.stop_with(env).await;
}

#[tokio::test]
async fn compress_summarises_a_long_conversation_now_and_it_goes_on_from_the_summary() {
    let (env, tg, _, pod) = open_chat().await;
    tg.user_says(TOKEN, 42, "/compress");
    assert_eq!(sent(&tg, 1).await[0].text, "Nothing to compress yet.");
    for i in 1..=16 {
        exchange(
            &env,
            &tg,
            (42, &format!("Remember fact number {i}: the {i}th server is in rack {i}.")),
            format!("Noted fact number {i}."),
            1 + i,
        )
        .await;
    }
    let calls = env.llm.requests().len();
    let got = exchange(&env, &tg, (42, "/compress"), "The user listed sixteen servers and their racks.", 18).await;
    assert!(got[17].text.starts_with("Compressed the conversation: 32 messages became"), "{}", got[17].text);
    assert_eq!(env.llm.requests().len(), calls + 1, "one summarising call, no answer from the model");

    assert_eq!(exchange(&env, &tg, (42, "where is the 16th server?"), "Rack 16.", 19).await[18].text, "Rack 16.");
    let seen = env.llm.requests().last().unwrap().messages();
    let text: Vec<String> = seen.iter().map(|m| m["content"].as_str().unwrap_or_default().to_owned()).collect();
    assert!(text.iter().any(|t| t.contains("The user listed sixteen servers")), "{text:?}");
    assert!(seen.len() < 32, "the next turn starts from the summary ({} messages)", seen.len());
    pod.stop_with(env).await;
}

#[tokio::test]
async fn reasoning_and_fast_set_what_this_conversation_asks_of_the_model_within_the_agents_limits() {
    let (env, tg, _, pod) = chat_stack_with(open_bot, None).await;
    tg.user_says(TOKEN, 42, "/reasoning high");
    let got = sent(&tg, 1).await;
    assert_eq!(got[0].text, "No conversation yet: just write to me.");
    exchange(&env, &tg, (42, "hello"), "Hi.", 2).await;
    assert!(env.llm.requests()[0].body.get("reasoning_effort").is_none(), "the model's default at first");

    sqlx::query("UPDATE agents SET client_limits = '{\"max_reasoning_effort\": \"medium\"}'")
        .execute(&env.db)
        .await
        .unwrap();
    tg.user_says(TOKEN, 42, "/reasoning high");
    assert_eq!(sent(&tg, 3).await[2].text, "This bot allows at most “medium” here.");
    tg.user_says(TOKEN, 42, "/reasoning loud");
    assert!(sent(&tg, 4).await[3].text.starts_with("I don't know the effort “loud”"));
    tg.user_says(TOKEN, 42, "/reasoning low");
    assert_eq!(sent(&tg, 5).await[4].text, "Reasoning effort for this conversation: low. The next message uses it.");
    tg.user_says(TOKEN, 42, "/fast");
    assert_eq!(sent(&tg, 6).await[5].text, "This bot's admins have not allowed priority processing (it costs more).");
    exchange(&env, &tg, (42, "think a little"), "Thought.", 7).await;
    let body = env.llm.requests().last().unwrap().body.clone();
    assert_eq!(body["reasoning_effort"], "low", "{body}");
    tg.user_says(TOKEN, 42, "/reasoning");
    assert!(sent(&tg, 8).await[7].text.starts_with("Reasoning effort here: low."));
    // A fresh conversation starts from the agent's settings again.
    tg.user_says(TOKEN, 42, "/new");
    sent(&tg, 9).await;
    exchange(&env, &tg, (42, "again"), "Again.", 10).await;
    assert!(env.llm.requests().last().unwrap().body.get("reasoning_effort").is_none());
    pod.stop_with(env).await;
}
