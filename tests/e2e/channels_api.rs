//! `/v1/channels` end to end: binding a Telegram bot, a Slack app in Socket Mode and a WeCom AI
//! bot through the API (each checked with its platform's emulator first), the errors an admin
//! meets (a refused token, a bot bound twice, a missing field, a key restricted to one agent),
//! changing access, and pairing a stranger approved through the API.

use serde_json::{Value, json};

use hermes_testkit::slack::SlackEmulator;
use hermes_testkit::telegram::TelegramEmulator;
use hermes_testkit::wecom_bot::WecomBotEmulator;

use crate::harness::TestEnv;
use crate::openapi::call;
use crate::telegram::{Pod, TOKEN, sent};

#[tokio::test]
async fn an_admin_binds_bots_through_the_api_and_approves_a_stranger() {
    // The platforms' API bases are the operator's (here: the emulators), never a tenant's.
    let tg = TelegramEmulator::start().await.unwrap();
    let slack = SlackEmulator::start("xoxb-1", "UBOT").await.unwrap();
    let bot = WecomBotEmulator::start("aib-7", "s3cret").await.unwrap();
    let env = TestEnv::start_with(crate::harness::Roles::default(), |c| {
        c.platforms.telegram_api_base = tg.base_url();
        c.platforms.slack_api_base = slack.base_url();
        c.platforms.wecom_bot_url = bot.url();
    })
    .await;
    let (tenant, agent, key) = env.tenant("acme", "helper").await;
    tg.add_bot(TOKEN, "AcmeBot");

    // A Telegram bot: checked with getMe, switched to long-poll, its menu registered.
    let body = json!({ "agent": "helper", "platform": "telegram", "token": TOKEN,
                       "dm_policy": "pairing" });
    let (status, channel) = call(&env, &key, "post", "/v1/channels", Some(body.clone())).await;
    assert_eq!(status, 201, "{channel}");
    assert_eq!((channel["platform"].as_str(), channel["mode"].as_str()), (Some("telegram"), Some("poll")));
    assert_eq!(channel["bot_username"], "AcmeBot");
    assert!(channel.get("credentials").is_none() && !channel.to_string().contains(TOKEN), "no secrets shown");
    let calls: Vec<String> = tg.calls(TOKEN).into_iter().map(|(m, _)| m).collect();
    assert!(calls.contains(&"deleteWebhook".to_owned()) && calls.contains(&"setMyCommands".to_owned()), "{calls:?}");
    let id = channel["id"].as_str().unwrap().to_owned();

    // The same bot again, a refused token, a missing field, a mode Telegram has not.
    let (status, err) = call(&env, &key, "post", "/v1/channels", Some(body)).await;
    assert_eq!((status, err["error"]["code"].as_str()), (409, Some("channel_exists")), "{err}");
    let wrong = json!({ "agent": "helper", "platform": "telegram", "token": "999:nope" });
    let (status, err) = call(&env, &key, "post", "/v1/channels", Some(wrong)).await;
    assert_eq!((status, err["error"]["code"].as_str()), (400, Some("platform_refused")), "{err}");
    let missing = json!({ "agent": "helper", "platform": "slack", "mode": "socket", "token": "xoxb-1" });
    let (status, err) = call(&env, &key, "post", "/v1/channels", Some(missing)).await;
    assert_eq!(status, 400);
    assert!(err["error"]["message"].as_str().unwrap().contains("app-level token"), "{err}");
    let odd = json!({ "agent": "helper", "platform": "telegram", "mode": "socket", "token": TOKEN });
    assert_eq!(call(&env, &key, "post", "/v1/channels", Some(odd)).await.0, 400);
    let unknown = json!({ "agent": "helper", "platform": "signal", "token": TOKEN });
    let (status, err) = call(&env, &key, "post", "/v1/channels", Some(unknown)).await;
    assert_eq!((status, err["error"]["code"].as_str()), (400, Some("invalid_value")), "{err}");

    // A key restricted to one agent may not manage channels.
    let (_, narrow) = env.store.tenancy().create_api_key(tenant, Some(agent.id), "narrow", None).await.unwrap();
    let (status, err) = call(&env, &narrow, "get", "/v1/channels", None).await;
    assert_eq!((status, err["error"]["type"].as_str()), (403, Some("permission_error")));

    // A Slack app in Socket Mode and a WeCom AI bot, each checked with its platform.
    slack.socket_mode("xapp-1");
    let app = json!({ "agent": "helper", "platform": "slack", "mode": "socket", "token": "xoxb-1",
                      "app_token": "xapp-1" });
    let (status, bound) = call(&env, &key, "post", "/v1/channels", Some(app)).await;
    assert_eq!(status, 201, "{bound}");
    assert!(bound["setup"].as_str().unwrap().contains("Socket Mode"));
    let wrong_secret = json!({ "agent": "helper", "platform": "wecom", "mode": "websocket", "bot_id": "aib-7",
                               "secret": "nope" });
    let (status, err) = call(&env, &key, "post", "/v1/channels", Some(wrong_secret)).await;
    assert_eq!((status, err["error"]["code"].as_str()), (400, Some("platform_refused")), "{err}");
    assert!(err["error"]["message"].as_str().unwrap().contains("853000"), "{err}");
    let good = json!({ "agent": "helper", "platform": "wecom", "mode": "websocket", "bot_id": "aib-7",
                       "secret": "s3cret" });
    assert_eq!(call(&env, &key, "post", "/v1/channels", Some(good)).await.0, 201);
    let (_, list) = call(&env, &key, "get", "/v1/channels", None).await;
    let modes: Vec<&str> = list["data"].as_array().unwrap().iter().map(|c| c["mode"].as_str().unwrap()).collect();
    assert_eq!(modes, ["poll", "socket", "websocket"]);
    // A Bot-API-compatible server without `setMyCommands`: the bot is bound all the same.
    tg.add_bot("2:menuless", "MenulessBot");
    tg.fail_next("2:menuless", "setMyCommands", 1, 404, "Not Found: method not found", None);
    let menuless = json!({ "agent": "helper", "platform": "telegram", "token": "2:menuless" });
    let (status, bound) = call(&env, &key, "post", "/v1/channels", Some(menuless)).await;
    assert_eq!(status, 201, "{bound}");
    assert!(bound["setup"].as_str().unwrap_or_default().contains("command menu"), "{bound}");

    // Access changes; a bad value is a clear error.
    let path = format!("/v1/channels/{id}");
    let (status, changed) = call(&env, &key, "patch", &path, Some(json!({ "busy_mode": "queue" }))).await;
    assert_eq!((status, changed["busy_mode"].as_str()), (200, Some("queue")));
    let (status, err) = call(&env, &key, "patch", &path, Some(json!({ "dm_policy": "everyone" }))).await;
    assert_eq!(status, 400, "{err}");
    let (status, err) = call(&env, &key, "patch", &path, Some(json!({ "busy_mode": "sometimes" }))).await;
    assert_eq!((status, err["error"]["code"].as_str()), (400, Some("invalid_value")), "{err}");

    // A stranger gets a code from the bot; the admin approves it through the API.
    let pod = Pod::start(&env).await;
    tg.user_says(TOKEN, 42, "hello?");
    let got = sent(&tg, 1).await;
    let code: String =
        got[0].text.lines().find(|l| l.len() == 8 && l.chars().all(|c| c.is_ascii_alphanumeric())).unwrap().to_owned();
    let (_, waiting) = call(&env, &key, "get", &format!("{path}/pairings"), None).await;
    assert_eq!(waiting["data"][0]["code"], code.as_str());
    let approve = format!("{path}/pairings/approve");
    let (status, err) = call(&env, &key, "post", &approve, Some(json!({ "code": "ZZZZZZZZ" }))).await;
    assert_eq!((status, err["error"]["code"].as_str()), (400, Some("wrong_code")));
    let (status, ok) = call(&env, &key, "post", &approve, Some(json!({ "code": code }))).await;
    assert_eq!((status, &ok), (200, &json!({ "approved": true, "user_id": "42" })));
    let got = sent(&tg, 2).await;
    assert!(got[1].text.starts_with("You're in!"), "{:?}", got[1].text);

    // Unbinding: the channel is gone, and the bot can be bound again.
    let (status, deleted): (u16, Value) = call(&env, &key, "delete", &path, None).await;
    assert_eq!((status, deleted["deleted"].as_bool()), (200, Some(true)));
    assert_eq!(call(&env, &key, "get", &path, None).await.0, 404);

    // Each change is recorded as the key's, through the use cases the admin API and hermesctl
    // run too; refusals leave no entry, and no bot secret reaches the log.
    let filter = hermes_store::admin::AuditFilter { limit: 100, ..Default::default() };
    let entries = env.store.admin().audit_entries(tenant, &filter).await.unwrap().entries;
    let mut actions: Vec<&str> = entries.iter().map(|e| e.action.as_str()).collect();
    actions.reverse();
    let bound = ["channel.bound"; 4];
    let rest = ["channel.changed", "pairing.approved", "channel.unbound"];
    assert_eq!(actions, [&bound[..], &rest[..]].concat(), "oldest first");
    let key_id = env.store.tenancy().api_keys(tenant).await.unwrap().into_iter().find(|k| k.name == "test").unwrap().id;
    for e in &entries {
        assert_eq!((e.actor.kind.as_str(), e.actor.id.as_str()), ("api_key", key_id.to_string().as_str()));
    }
    let log = serde_json::to_string(&entries).unwrap();
    for secret in [TOKEN, "xapp-1", "s3cret", "2:menuless"] {
        assert!(!log.contains(secret), "{secret} reached the audit log");
    }
    pod.stop.cancel();
    env.stop().await;
}
