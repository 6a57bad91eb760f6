//! Telegram bots end to end against a local Bot API emulator: long-poll with one pod per bot
//! and takeover when it dies, the webhook with its secret, access rules, gateway commands,
//! the same update twice, long answers split, flood control and a blocked bot.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use hermes_gateway::{Gateway, GatewayContext};
use hermes_store::{Channel, NewChannel, SecretBox};
use hermes_testkit::ScriptedReply;
use hermes_testkit::telegram::{SentMessage, TelegramEmulator, message_update};

use crate::harness::TestEnv;

const TOKEN: &str = "123456:test-token";

/// One gateway pod: its pollers, its outbox sender and its webhook listener.
pub(crate) struct Pod {
    pub gw: Arc<Gateway>,
    pub stop: CancellationToken,
    pub url: String,
}

impl Pod {
    pub(crate) async fn start(env: &TestEnv) -> Pod {
        let mut config = env.config.clone();
        config.gateway.poll_timeout_seconds = 1;
        config.gateway.lease_seconds = 3;
        config.gateway.rebalance_seconds = 1;
        config.gateway.outbox_poll_millis = 50;
        let ctx = GatewayContext {
            store: env.store.clone(),
            broker: hermes_queue::Broker::connect(&config.rabbitmq, "test-gateway").await.unwrap(),
            cache: hermes_cache::Cache::connect(&config.redis.url, &config.redis.key_prefix).await.unwrap(),
            secrets: SecretBox::from_config(config.secrets.master_key.as_deref()).unwrap(),
            readiness: hermes_http::Readiness::new(),
            config: Arc::new(config),
        };
        let mut gw = Gateway::new(&ctx).unwrap();
        gw.events = Some(ctx.broker.event_hub().await.unwrap());
        let gw = Arc::new(gw);
        let stop = CancellationToken::new();
        tokio::spawn(hermes_gateway::telegram::poller::run(gw.clone(), stop.clone()));
        tokio::spawn(hermes_gateway::outbox::run(gw.clone(), stop.clone()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = hermes_gateway::router(gw.clone());
        let token = stop.clone();
        tokio::spawn(async move {
            let _ = hermes_http::serve(listener, app, token).await;
        });
        Pod { gw, stop, url }
    }
}

/// A channel of a new tenant's agent: how each platform's tests bind their bot.
pub(crate) struct Binding<'a> {
    pub platform: &'a str,
    pub mode: &'a str,
    pub api_base: String,
    pub credentials: Value,
    pub identity: &'a str,
    pub username: Option<&'a str>,
    pub dm_policy: &'a str,
    pub allow: &'a [&'a str],
}

pub(crate) async fn bind_channel(env: &TestEnv, b: Binding<'_>) -> Channel {
    let (tenant, agent, _) = env.tenant("acme", "helper").await;
    let new = NewChannel {
        agent_id: agent.id,
        platform: b.platform.into(),
        mode: b.mode.into(),
        api_base: b.api_base,
        credentials: b.credentials,
        bot_identity: b.identity.into(),
        dm_policy: b.dm_policy.into(),
        group_policy: "mention".into(),
        allow_users: b.allow.iter().map(|s| (*s).to_owned()).collect(),
        allow_chats: vec![],
        admins: vec![],
    };
    let secrets = SecretBox::from_config(env.config.secrets.master_key.as_deref()).unwrap();
    let channel = env.store.create_channel(tenant, new, secrets.as_ref()).await.unwrap();
    if let Some(name) = b.username {
        env.store.set_bot_username(tenant, channel.id, name).await.unwrap();
    }
    env.store.channel(tenant, channel.id).await.unwrap()
}

async fn bind(env: &TestEnv, tg: &TelegramEmulator, mode: &str, dm_policy: &str, allow: &[&str]) -> Channel {
    tg.add_bot(TOKEN, "HermesTestBot");
    let binding = Binding {
        platform: "telegram",
        mode,
        api_base: tg.base_url(),
        credentials: json!({ "token": TOKEN }),
        identity: "123456",
        username: Some("HermesTestBot"),
        dm_policy,
        allow,
    };
    bind_channel(env, binding).await
}

/// Waits until the bot has sent `n` messages.
async fn sent(tg: &TelegramEmulator, n: usize) -> Vec<SentMessage> {
    for _ in 0..300 {
        let sent = tg.sent(TOKEN);
        if sent.len() >= n {
            return sent;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the bot sent {:?}, expected {n} messages", tg.sent(TOKEN).iter().map(|m| &m.text).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_polled_bot_answers_once_per_update_and_another_pod_takes_over_when_its_pod_dies() {
    let env = TestEnv::start().await;
    let tg = TelegramEmulator::start().await.unwrap();
    bind(&env, &tg, "poll", "open", &[]).await;
    // Pod A is a real gateway process, so it can die without a goodbye.
    let settings = [
        ("HERMES__SECRETS__MASTER_KEY", env.config.secrets.master_key.clone().unwrap()),
        ("HERMES__GATEWAY__BIND", "127.0.0.1:0".to_owned()),
        ("HERMES__GATEWAY__POLL_TIMEOUT_SECONDS", "1".to_owned()),
        ("HERMES__GATEWAY__LEASE_SECONDS", "3".to_owned()),
        ("HERMES__GATEWAY__REBALANCE_SECONDS", "1".to_owned()),
        ("HERMES__GATEWAY__OUTBOX_POLL_MILLIS", "50".to_owned()),
    ];
    let mut pod_a = env.spawn_hermesd_with(&["gateway"], "gateway-a", &settings);
    env.llm.push(ScriptedReply::text("Hello Ann!"));
    tg.user_says(TOKEN, 42, "hi there");
    let answers = sent(&tg, 1).await;
    assert_eq!(answers[0].text, "Hello Ann!");
    assert_eq!(answers[0].chat_id, "42");
    assert!(answers[0].reply_to.is_some(), "answers quote the message they answer");
    assert_eq!(env.count("SELECT count(*) FROM sessions WHERE source = 'telegram'").await, 1);

    // Pod B starts while A holds the bot: it does not poll it too.
    let pod_b = Pod::start(&env).await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(
        pod_b
            .gw
            .cache
            .leases()
            .try_acquire(&format!("telegram:{}", env_channel(&env).await), "probe", Duration::from_secs(1))
            .await
            .unwrap()
            .is_none(),
        "A still holds the bot"
    );

    env.llm.push(ScriptedReply::text("Once."));
    let first = tg.push_update(TOKEN, message_update(42, "private", 42, "once please", None));
    sent(&tg, 2).await;

    // A dies (SIGKILL, no lease given back) as if before its last position was recorded and
    // confirmed: Telegram hands B that update again. B takes the bot over when the lease
    // lapses, recognises the update, and answers only the new message.
    pod_a.kill().unwrap();
    pod_a.wait().unwrap();
    sqlx::query("UPDATE channels SET poll_offset = $1").bind(first).execute(env.store.pool()).await.unwrap();
    let mut again = message_update(42, "private", 42, "once please", None);
    again["update_id"] = json!(first);
    tg.redeliver(TOKEN, again);
    env.llm.push(ScriptedReply::text("Still here."));
    tg.user_says(TOKEN, 42, "are you there?");
    let answers = sent(&tg, 3).await;
    assert_eq!(answers[2].text, "Still here.");
    tokio::time::sleep(Duration::from_millis(800)).await;
    let texts: Vec<String> = tg.sent(TOKEN).iter().map(|m| m.text.clone()).collect();
    assert_eq!(texts, ["Hello Ann!", "Once.", "Still here."], "each update answered exactly once");
    assert_eq!(env.count("SELECT count(*) FROM turns").await, 3);
    assert_eq!(tg.unconfirmed(TOKEN), 0, "every update was confirmed");
    pod_b.stop.cancel();
    env.stop().await;
}

async fn env_channel(env: &TestEnv) -> uuid::Uuid {
    sqlx::query_scalar("SELECT id FROM channels").fetch_one(env.store.pool()).await.unwrap()
}

#[tokio::test]
async fn the_webhook_needs_the_secret_and_strangers_commands_and_long_answers_are_handled() {
    let env = TestEnv::start().await;
    let tg = TelegramEmulator::start().await.unwrap();
    let channel = bind(&env, &tg, "webhook", "allowlist", &["42"]).await;
    let pod = Pod::start(&env).await;
    let hook = format!("{}/telegram/{}", pod.url, channel.id);
    let post = |secret: &str, update: Value| {
        env.http.post(&hook).header("X-Telegram-Bot-Api-Secret-Token", secret).json(&update).send()
    };
    let mut update = message_update(42, "private", 42, "hello", None);
    update["update_id"] = json!(500);

    // A forged call: refused, nothing stored.
    assert_eq!(post("wrong", update.clone()).await.unwrap().status(), 401);
    assert_eq!(env.http.post(&hook).json(&update).send().await.unwrap().status(), 401);
    assert_eq!(env.count("SELECT count(*) FROM inbound").await, 0);

    // An allowed user gets a long answer, split within Telegram's limit.
    let long = "All good on my side. ".repeat(500); // 10,500 characters
    env.llm.push(ScriptedReply::text(long.trim_end()));
    assert_eq!(post(&channel.webhook_secret, update.clone()).await.unwrap().status(), 200);
    // Telegram retries the same update: taken once.
    assert_eq!(post(&channel.webhook_secret, update.clone()).await.unwrap().status(), 200);
    let parts = sent(&tg, 3).await;
    assert_eq!(parts.len(), 3);
    for (i, part) in parts.iter().enumerate() {
        assert!(part.text.encode_utf16().count() <= 4096);
        assert!(part.text.ends_with(&format!("({}/3)", i + 1)), "{}", &part.text[part.text.len() - 10..]);
    }
    assert_eq!(env.count("SELECT count(*) FROM turns").await, 1);

    // A stranger is told why not; a group message without a mention is ignored.
    let mut stranger = message_update(77, "private", 77, "let me in", None);
    stranger["update_id"] = json!(501);
    post(&channel.webhook_secret, stranger).await.unwrap();
    let mut chatter = message_update(-100, "supergroup", 42, "talking among ourselves", None);
    chatter["update_id"] = json!(502);
    post(&channel.webhook_secret, chatter).await.unwrap();
    let got = sent(&tg, 4).await;
    assert!(got[3].text.contains("77"), "{}", got[3].text);
    assert_eq!(got[3].chat_id, "77");

    // Commands are answered by the gateway: /whoami, and /new starts a fresh session.
    let mut whoami = message_update(42, "private", 42, "/whoami", None);
    whoami["update_id"] = json!(503);
    post(&channel.webhook_secret, whoami).await.unwrap();
    let got = sent(&tg, 5).await;
    assert!(got[4].text.contains("user id is 42"), "{}", got[4].text);
    let mut new = message_update(42, "private", 42, "/new", None);
    new["update_id"] = json!(504);
    post(&channel.webhook_secret, new).await.unwrap();
    sent(&tg, 6).await;
    env.llm.push(ScriptedReply::text("Fresh start."));
    let mut next = message_update(42, "private", 42, "hello again", None);
    next["update_id"] = json!(505);
    post(&channel.webhook_secret, next).await.unwrap();
    let got = sent(&tg, 7).await;
    assert_eq!(got[6].text, "Fresh start.");
    assert_eq!(env.count("SELECT count(*) FROM sessions WHERE source = 'telegram'").await, 2, "/new started another");
    assert_eq!(env.count("SELECT count(*) FROM turns").await, 2, "commands and strangers start no turn");
    pod.stop.cancel();
    env.stop().await;
}

#[tokio::test]
async fn flood_control_is_waited_out_and_a_blocked_bot_marks_its_channel() {
    let env = TestEnv::start().await;
    let tg = TelegramEmulator::start().await.unwrap();
    let channel = bind(&env, &tg, "poll", "open", &[]).await;
    let pod = Pod::start(&env).await;
    tg.fail_next(TOKEN, "sendMessage", 1, 429, "Too Many Requests: retry after 1", Some(1));
    env.llm.push(ScriptedReply::text("After the flood."));
    tg.user_says(TOKEN, 42, "hi");
    let got = sent(&tg, 1).await;
    assert_eq!(got[0].text, "After the flood.");
    let attempts = tg.calls(TOKEN).iter().filter(|(m, _)| m == "sendMessage").count();
    assert_eq!(attempts, 2, "one refused with 429, one delivered after the wait");

    // Access changes apply to the running poller at once.
    let access = hermes_store::ChannelAccess {
        dm_policy: Some("allowlist".into()),
        allow_users: Some(vec!["42".into()]),
        ..Default::default()
    };
    env.store.update_channel_access(channel.tenant_id, channel.id, &access).await.unwrap();
    tg.user_says(TOKEN, 44, "hi");
    let got = sent(&tg, 2).await;
    assert!(got[1].text.contains("user id 44"), "{}", got[1].text);
    assert_eq!(env.count("SELECT count(*) FROM turns").await, 1, "a refused stranger starts no turn");

    tg.fail_next(TOKEN, "sendMessage", 1, 403, "Forbidden: bot was blocked by the user", None);
    env.llm.push(ScriptedReply::text("You will not see this."));
    tg.user_says(TOKEN, 42, "hi again");
    let mut status = String::new();
    for _ in 0..200 {
        status = env.store.channel(channel.tenant_id, channel.id).await.unwrap().status;
        if status == "blocked" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status, "blocked");
    let failed: i64 = env.count("SELECT count(*) FROM outbox WHERE status = 'failed'").await;
    assert_eq!(failed, 1, "no endless retries");
    pod.stop.cancel();
    env.stop().await;
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
    let tg = TelegramEmulator::start().await.unwrap();
    bind(&env, &tg, "poll", "open", &[]).await;
    sqlx::query("UPDATE agents SET toolsets = ARRAY['terminal', 'clarify']").execute(env.store.pool()).await.unwrap();
    let pod = Pod::start(&env).await;

    // A dangerous command: the question comes with buttons; a press resumes the turn.
    env.llm
        .push(ScriptedReply::tool_call("terminal", json!({"command": "mkdir -p build && rm -rf build && echo gone"})));
    env.llm.push(ScriptedReply::text("Build directory removed."));
    tg.user_says(TOKEN, 42, "clean the build");
    let asked = sent(&tg, 1).await;
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
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(tg.sent(TOKEN).len(), 2);

    // Another approval, answered with /deny.
    env.llm.push(ScriptedReply::tool_call("terminal", json!({"command": "rm -rf /workspace/cache"})));
    env.llm.push(ScriptedReply::text("Understood, I left it."));
    tg.user_says(TOKEN, 42, "clear the cache");
    sent(&tg, 3).await;
    tg.user_says(TOKEN, 42, "/deny");
    let got = sent(&tg, 5).await;
    let texts: Vec<&str> = got[3..].iter().map(|m| m.text.as_str()).collect();
    assert!(texts.contains(&"🚫 Denied."), "{texts:?}");
    assert!(texts.contains(&"Understood, I left it."), "{texts:?}");

    // A clarifying question is answered by the next plain message.
    env.llm.push(ScriptedReply::tool_call("clarify", json!({"question": "Which environment?"})));
    env.llm.push(ScriptedReply::text("Deploying to staging."));
    tg.user_says(TOKEN, 42, "deploy it");
    let got = sent(&tg, 6).await;
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
    pod.stop.cancel();
    env.stop().await;
}

#[tokio::test]
async fn a_new_message_interrupts_the_turn_the_agent_is_working_on() {
    let env = TestEnv::start().await;
    let tg = TelegramEmulator::start().await.unwrap();
    bind(&env, &tg, "poll", "open", &[]).await;
    let pod = Pod::start(&env).await;
    env.llm.push(ScriptedReply::text("A slow answer nobody waits for.").after(Duration::from_secs(5)));
    tg.user_says(TOKEN, 42, "first question");
    // Wait until the agent is thinking about the first message (its model call is out).
    for _ in 0..200 {
        if env.llm.requests().len() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    env.llm.push(ScriptedReply::text("Answer to the second."));
    tg.user_says(TOKEN, 42, "actually, second question");
    let got = sent(&tg, 1).await;
    assert_eq!(got[0].text, "Answer to the second.");
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(tg.sent(TOKEN).len(), 1, "the interrupted turn sends nothing");
    let statuses: Vec<String> = sqlx::query_scalar("SELECT status::text FROM turns ORDER BY created_at")
        .fetch_all(env.store.pool())
        .await
        .unwrap();
    assert_eq!(statuses, ["cancelled", "completed"]);
    let seen = env.llm.requests().last().unwrap().messages();
    // Stopped before it began, the first message is answered with the second; stopped later,
    // it is already in the conversation. Either way the model sees it.
    assert!(
        seen.iter().any(|m| m["content"].as_str().is_some_and(|c| c.contains("first question"))),
        "the first message is not lost: {seen:?}"
    );
    pod.stop.cancel();
    env.stop().await;
}

#[tokio::test]
async fn a_stranger_pairs_with_a_code_an_admin_approves_in_chat() {
    let env = TestEnv::start().await;
    let tg = TelegramEmulator::start().await.unwrap();
    let channel = bind(&env, &tg, "poll", "pairing", &[]).await;
    let admins = hermes_store::ChannelAccess { admins: Some(vec!["1".into()]), ..Default::default() };
    env.store.update_channel_access(channel.tenant_id, channel.id, &admins).await.unwrap();
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

    env.llm.push(ScriptedReply::text("Nice to meet you."));
    tg.user_says(TOKEN, 42, "hi, I'm in");
    let got = sent(&tg, 7).await;
    assert_eq!(got[6].text, "Nice to meet you.");
    pod.stop.cancel();
    env.stop().await;
}

#[tokio::test]
async fn answers_are_formatted_and_fall_back_to_plain_text_when_telegram_refuses_the_markup() {
    let env = TestEnv::start().await;
    let tg = TelegramEmulator::start().await.unwrap();
    bind(&env, &tg, "poll", "open", &[]).await;
    let pod = Pod::start(&env).await;
    env.llm.push(ScriptedReply::text("**Done**: ran `ls <dir>` for you."));
    tg.user_says(TOKEN, 42, "list it");
    let got = sent(&tg, 1).await;
    assert_eq!(got[0].text, "<b>Done</b>: ran <code>ls &lt;dir&gt;</code> for you.");
    assert_eq!(got[0].parse_mode.as_deref(), Some("HTML"));

    tg.fail_next(TOKEN, "sendMessage", 1, 400, "Bad Request: can't parse entities: Unsupported start tag", None);
    env.llm.push(ScriptedReply::text("**Again**"));
    tg.user_says(TOKEN, 42, "again");
    let got = sent(&tg, 2).await;
    assert_eq!((got[1].text.as_str(), got[1].parse_mode.as_deref()), ("**Again**", None), "plain text, once");
    pod.stop.cancel();
    env.stop().await;
}

#[tokio::test]
async fn chat_commands_rename_report_retry_and_stop_the_conversation() {
    let env = TestEnv::start().await;
    let tg = TelegramEmulator::start().await.unwrap();
    bind(&env, &tg, "poll", "open", &[]).await;
    let pod = Pod::start(&env).await;
    env.llm.push(ScriptedReply::text("Hi!"));
    tg.user_says(TOKEN, 42, "hello");
    sent(&tg, 1).await;

    tg.user_says(TOKEN, 42, "/title Project X");
    assert_eq!(sent(&tg, 2).await[1].text, "Renamed to “Project X”.");
    tg.user_says(TOKEN, 42, "/status");
    let status = sent(&tg, 3).await[2].text.clone();
    assert!(status.contains("Project X") && status.contains("2 messages") && status.ends_with("Idle."), "{status}");

    env.llm.push(ScriptedReply::text("Hi again!"));
    tg.user_says(TOKEN, 42, "/retry");
    let got = sent(&tg, 5).await;
    assert!(got[3..].iter().any(|m| m.text == "Asking again…") && got[3..].iter().any(|m| m.text == "Hi again!"));
    let asked = env.llm.requests().last().unwrap().messages();
    assert_eq!(asked.last().unwrap()["content"], "hello", "the last message, asked again");

    env.llm.push(ScriptedReply::text("A very late answer.").after(Duration::from_secs(5)));
    tg.user_says(TOKEN, 42, "a long task");
    for _ in 0..200 {
        if env.llm.requests().len() == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    tg.user_says(TOKEN, 42, "/stop");
    assert_eq!(sent(&tg, 6).await[5].text, "Stopped.");
    tg.user_says(TOKEN, 42, "/usage");
    let usage = sent(&tg, 7).await[6].text.clone();
    assert!(usage.starts_with("Today this assistant made 2 model calls"), "answered calls count: {usage}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(tg.sent(TOKEN).len(), 7, "the stopped task sends nothing");
    pod.stop.cancel();
    env.stop().await;
}

#[tokio::test]
async fn a_streaming_channel_shows_a_live_preview_that_the_answer_replaces() {
    let env = TestEnv::start().await;
    let tg = TelegramEmulator::start().await.unwrap();
    let channel = bind(&env, &tg, "poll", "open", &[]).await;
    let streaming = hermes_store::ChannelAccess { streaming: Some(true), ..Default::default() };
    env.store.update_channel_access(channel.tenant_id, channel.id, &streaming).await.unwrap();
    let pod = Pod::start(&env).await;
    env.llm.push(ScriptedReply::tool_call("terminal", json!({"command": "sleep 2 && echo built"})));
    env.llm.push(ScriptedReply::text("The build is done."));
    tg.user_says(TOKEN, 42, "build it");
    // While the tool runs, a preview shows what the agent is doing.
    let mut preview = None;
    for _ in 0..100 {
        if let Some(m) = tg.all_sent(TOKEN).into_iter().next() {
            preview = Some(m);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let preview = preview.expect("a preview while the tool runs");
    assert!(preview.text.contains("🔧 terminal"), "{}", preview.text);
    // Then the answer replaces it: the chat ends with the answer alone.
    let got = sent(&tg, 1).await;
    for _ in 0..100 {
        if tg.sent(TOKEN).len() == 1 && tg.sent(TOKEN)[0].text == "The build is done." {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let visible: Vec<String> = tg.sent(TOKEN).iter().map(|m| m.text.clone()).collect();
    assert_eq!(visible, ["The build is done."], "first seen: {:?}", got.iter().map(|m| &m.text).collect::<Vec<_>>());
    assert!(tg.all_sent(TOKEN)[0].deleted, "the preview was removed");
    pod.stop.cancel();
    env.stop().await;
}

#[tokio::test]
async fn photos_and_text_files_reach_the_agent_and_other_files_are_named() {
    let env = TestEnv::start().await;
    let tg = TelegramEmulator::start().await.unwrap();
    bind(&env, &tg, "poll", "open", &[]).await;
    let pod = Pod::start(&env).await;
    env.llm.push(ScriptedReply::text("A cat."));
    tg.user_sends_photo(TOKEN, 42, "photo-1", b"\xff\xd8\xff fake jpeg", Some("what is this?"));
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

    env.llm.push(ScriptedReply::text("I cannot open that."));
    tg.user_sends_document(TOKEN, 42, "doc-2", "movie.mp4", "video/mp4", b"\x00\x01");
    sent(&tg, 3).await;
    let content = env.llm.requests()[2].messages().last().unwrap()["content"].clone();
    assert!(
        content[0]["text"].as_str().unwrap().contains("movie.mp4 (video/mp4), a kind of file I cannot read"),
        "{content}"
    );
    pod.stop.cancel();
    env.stop().await;
}

#[tokio::test]
async fn a_paste_the_chat_app_split_in_parts_is_answered_as_one_message() {
    let env = TestEnv::start().await;
    let tg = TelegramEmulator::start().await.unwrap();
    bind(&env, &tg, "poll", "open", &[]).await;
    env.llm.push(ScriptedReply::text("Got all of it."));
    // Both parts arrive within the batching moment, before the turn may start.
    tg.user_says(TOKEN, 42, "part one of a long paste");
    tg.user_says(TOKEN, 42, "part two of it");
    let pod = Pod::start(&env).await;
    assert_eq!(sent(&tg, 1).await[0].text, "Got all of it.");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(tg.sent(TOKEN).len(), 1);
    assert_eq!(env.count("SELECT count(*) FROM turns").await, 1);
    let seen = env.llm.requests()[0].messages();
    assert_eq!(seen.last().unwrap()["content"], "part one of a long paste\npart two of it");
    pod.stop.cancel();
    env.stop().await;
}

#[tokio::test]
async fn a_group_is_one_conversation_or_one_per_person_as_the_channel_says() {
    let env = TestEnv::start().await;
    let tg = TelegramEmulator::start().await.unwrap();
    let channel = bind(&env, &tg, "poll", "open", &[]).await;
    let pod = Pod::start(&env).await;
    for n in 0..2 {
        env.llm.push(ScriptedReply::text(format!("shared {n}")));
        tg.group_says(TOKEN, -500, 40 + n, "@HermesTestBot hi", None);
        sent(&tg, usize::try_from(n + 1).unwrap()).await;
    }
    assert_eq!(env.count("SELECT count(*) FROM sessions").await, 1, "one conversation for the group");
    let per_user = hermes_store::ChannelAccess { group_sessions: Some("user".into()), ..Default::default() };
    env.store.update_channel_access(channel.tenant_id, channel.id, &per_user).await.unwrap();
    for n in 0..2 {
        env.llm.push(ScriptedReply::text(format!("own {n}")));
        tg.group_says(TOKEN, -500, 40 + n, "@HermesTestBot again", None);
        sent(&tg, usize::try_from(n + 3).unwrap()).await;
    }
    assert_eq!(env.count("SELECT count(*) FROM sessions").await, 3, "then one per person");
    pod.stop.cancel();
    env.stop().await;
}
