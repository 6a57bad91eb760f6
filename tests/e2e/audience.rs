//! Narrower tools for wider audiences (issue 38 item 4): a bot's rules per kind of chat and
//! per chat, an API key's and a webhook's toolset lists keep an agent's turns to part of its
//! toolsets, enforced in the worker from the turn's source, never widening; `/help` says what
//! the chat has.

use serde_json::json;

use hermes_testkit::ScriptedReply;

use crate::admin::remote_cli::run_local;
use crate::openapi::call;
use crate::telegram::{TOKEN, open_chat_with_tools, sent};
use crate::webhooks::{github, post, tool_names};

const AGENT_TOOLSETS: &[&str] = &["terminal", "file", "web", "memory", "todo"];

#[tokio::test]
async fn a_public_group_gets_narrower_tools_than_the_teams_dm_and_help_says_which() {
    let (env, tg, channel, _pod) = open_chat_with_tools(AGENT_TOOLSETS).await;
    let key = env.key_of("acme").await;
    let path = format!("/v1/channels/{}", channel.id);
    let unknown = json!({"toolsets": {"groups": ["web", "shell"]}});
    let (status, err) = call(&env, &key, "patch", &path, Some(unknown)).await;
    assert_eq!((status, err["error"]["param"].as_str()), (400, Some("toolsets")), "{err}");
    let misspelt = json!({"toolsets": {"group": ["web"]}});
    assert_eq!(call(&env, &key, "patch", &path, Some(misspelt)).await.0, 400, "an unknown field is refused");
    // Groups: web, memory, todo, and browser (which the agent lacks: a rule never adds it);
    // the team's own group keeps the terminal.
    let rules = json!({"toolsets": {"groups": ["web", "memory", "todo", "browser"],
                                    "chats": {"-200": ["terminal", "file"]}}});
    let (status, shown) = call(&env, &key, "patch", &path, Some(rules)).await;
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["toolsets"]["chats"]["-200"], json!(["terminal", "file"]));

    env.llm.push(ScriptedReply::text("in the DM"));
    tg.user_says(TOKEN, 42, "hello");
    sent(&tg, 1).await;
    env.llm.push(ScriptedReply::text("in public"));
    tg.group_says(TOKEN, -100, 43, "@HermesTestBot hello", None);
    sent(&tg, 2).await;
    env.llm.push(ScriptedReply::text("in the team's group"));
    tg.group_says(TOKEN, -200, 42, "@HermesTestBot hello", None);
    sent(&tg, 3).await;

    let offered: Vec<Vec<String>> = env.llm.requests().iter().map(|r| tool_names(&r.body)).collect();
    let has = |n: usize, tool: &str| offered[n].iter().any(|t| t == tool);
    assert!(has(0, "terminal") && has(0, "read_file") && has(0, "web_search"), "the DM keeps all: {:?}", offered[0]);
    assert!(!has(1, "terminal") && !has(1, "read_file") && !has(1, "browser_navigate"), "{:?}", offered[1]);
    assert!(has(1, "web_search") && has(1, "memory") && has(1, "todo"), "{:?}", offered[1]);
    assert!(has(2, "terminal") && has(2, "read_file") && !has(2, "web_search"), "{:?}", offered[2]);

    tg.group_says(TOKEN, -100, 43, "/help@HermesTestBot", None);
    let help = sent(&tg, 4).await.pop().unwrap().text;
    assert!(help.contains("Tools here (this chat's share of mine): web, memory, todo."), "{help}");
    tg.user_says(TOKEN, 42, "/help");
    let help = sent(&tg, 5).await.pop().unwrap().text;
    assert!(help.contains("Tools here: terminal, file, web, memory, todo."), "{help}");

    // Lifting the rules gives the group the agent's toolsets again, from its next message.
    let (status, _) = call(&env, &key, "patch", &path, Some(json!({"toolsets": {}}))).await;
    assert_eq!(status, 200);
    env.llm.push(ScriptedReply::text("in public again"));
    tg.group_says(TOKEN, -100, 43, "@HermesTestBot again", None);
    sent(&tg, 6).await;
    assert!(tool_names(&env.llm.requests()[3].body).contains(&"terminal".to_owned()));
    env.stop().await;
}

#[tokio::test]
async fn an_api_key_keeps_its_turns_to_its_toolsets_and_a_webhook_to_its_own() {
    let (env, tg, _channel, pod) = open_chat_with_tools(AGENT_TOOLSETS).await;
    let db = env.config.database.url.clone();
    let ctl = move |toolsets: &'static [&'static str]| {
        let db = db.clone();
        tokio::task::spawn_blocking(move || {
            let mut args = vec!["key", "create", "--tenant", "acme", "--name", "public site"];
            args.extend(toolsets.iter().flat_map(|t| ["--toolset", *t]));
            run_local(&db, "dana", &args)
        })
    };
    let (ok, out) = ctl(&["shell"]).await.unwrap();
    assert!(!ok && out.contains("shell"), "an unknown toolset is refused: {out}");
    let (ok, made) = ctl(&["memory", "browser"]).await.unwrap();
    assert!(ok, "{made}");
    let narrow = made.split_whitespace().find(|w| w.starts_with("hk_")).expect("the key is shown once").to_owned();
    let full = env.key_of("acme").await;

    for key in [&narrow, &full] {
        env.llm.push(ScriptedReply::text("ok"));
        let resp = env.chat(key, json!({"model": "helper", "messages": [{"role": "user", "content": "hi"}]})).await;
        assert_eq!(resp.status(), 200);
    }
    let requests = env.llm.requests();
    assert_eq!(tool_names(&requests[0].body), ["memory"], "the narrow key: memory only, browser not added");
    assert!(tool_names(&requests[1].body).contains(&"terminal".to_owned()), "another key keeps all");

    // A webhook with no toolsets at all: its turn is offered none (a webhook's turn has web
    // and vision at most).
    let hook = json!({"name": "alerts", "deliver": "telegram:42", "toolsets": []});
    let (status, hook) = call(&env, &full, "post", "/v1/webhooks", Some(hook)).await;
    assert_eq!(status, 201, "{hook}");
    assert_eq!(hook["toolsets"], json!([]));
    let (path, secret) = (hook["path"].as_str().unwrap(), hook["secret"].as_str().unwrap());
    let body = br#"{"zen": "Keep it logically awesome."}"#;
    env.llm.push(ScriptedReply::text("noted"));
    let (status, _) = post(&pod, path, &github(secret, "ping", "d1", body), body).await;
    assert_eq!(status, 202);
    sent(&tg, 1).await;
    assert_eq!(tool_names(&env.llm.requests()[2].body), Vec::<String>::new());
    env.stop().await;
}
