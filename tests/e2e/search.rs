//! `session_search` through whole turns on real Postgres: discovery with every query operator,
//! Chinese text, scrolling and browsing, scoped to the tenant, agent and end user, and never
//! returning the conversation it is called from.

use serde_json::{Value, json};

use hermes_testkit::ScriptedReply;

use crate::harness::{Team, TestEnv};

async fn enable_search(env: &TestEnv, agent: hermes_core::AgentId) {
    env.set_toolsets(agent, &["session_search"]).await;
}

/// A finished conversation as `user`: the user's words, the agent's answer.
async fn converse(env: &TestEnv, key: &str, user: &str, said: &str, answered: &str) {
    env.llm.push(ScriptedReply::text(answered));
    ask(env, key, user, said).await;
}

/// A turn as `user`, answered by what the test scripted.
async fn ask(env: &TestEnv, key: &str, user: &str, said: &str) {
    let resp = env
        .http
        .post(format!("{}/v1/chat/completions", env.api_url))
        .bearer_auth(key)
        .header("X-Hermes-Session-Key", user)
        .json(&json!({"model": "ops", "messages": [{"role": "user", "content": said}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
}

#[tokio::test]
async fn earlier_conversations_are_found_by_every_operator_in_any_language_and_only_the_users_own() {
    let Team { env, agent, key, .. } = Team::acme("ops").await;
    enable_search(&env, agent.id).await;
    converse(&env, &key, "alice", "How do we rotate the Postgres credentials?", "Run vault write db/rotate-role.")
        .await;
    converse(&env, &key, "alice", "我们的数据库迁移失败了，怎么回滚？", "先运行 migrate down，再检查日志。").await;
    converse(&env, &key, "alice", "Deploy the blue-green release to staging", "Deployed to staging.").await;
    converse(&env, &key, "bob", "Where are the Postgres credentials for billing?", "In the billing vault.").await;
    let (_, other_agent, other_key) = env.tenant("globex", "ops").await;
    enable_search(&env, other_agent.id).await;
    converse(&env, &other_key, "alice", "Postgres credentials again", "Sure.").await;

    let searches = [
        json!({"query": "postgres credentials"}),
        json!({"query": "数据库"}),
        json!({"query": "回滚"}),
        json!({"query": "deploy NOT staging"}),
        json!({"query": "deploy*"}),
        json!({"query": "\"blue green\""}),
        json!({"query": "rotate OR 回滚", "limit": 5}),
        json!({"query": "\"unbalanced AND OR"}),
        json!({}),
        json!({"query": "NOT everything"}),
    ];
    for args in &searches {
        env.llm.push(ScriptedReply::tool_call("session_search", args.clone()));
    }
    env.llm.push(ScriptedReply::text("Found them."));
    ask(&env, &key, "alice", "what did we talk about before?").await;

    let requests = env.llm.requests();
    assert_eq!(requests.len(), 5 + searches.len() + 1);
    let first = requests.len() - searches.len();
    let result = |i: usize| -> Value {
        let messages = requests[first + i].messages();
        let tool = messages.iter().rev().find(|m| m["role"] == "tool").unwrap();
        let text = tool["content"].as_str().unwrap();
        serde_json::from_str(text).unwrap_or_else(|_| json!({"error": text}))
    };
    let titles = |v: &Value| -> Vec<String> {
        v["results"].as_array().unwrap().iter().map(|r| r["title"].as_str().unwrap().to_owned()).collect()
    };

    let postgres = result(0);
    assert_eq!(titles(&postgres), ["How do we rotate the Postgres credentials?"], "only Alice's, only this tenant's");
    let hit = &postgres["results"][0];
    assert!(hit["snippet"].as_str().unwrap().contains("Postgres credentials"), "{hit}");
    let anchor = hit["window"].as_array().unwrap().iter().find(|m| m["anchor"] == true).unwrap();
    assert_eq!(anchor["message_id"], hit["match_message_id"]);
    assert_eq!(anchor["role"], "user");

    assert_eq!(titles(&result(1)), ["我们的数据库迁移失败了，怎么回滚？"], "Chinese without spaces");
    assert!(result(1)["results"][0]["snippet"].as_str().unwrap().contains("数据库"));
    assert_eq!(result(2)["count"], 1);
    assert_eq!(result(3)["count"], 0, "NOT excludes the only deploy conversation");
    assert_eq!(titles(&result(4)), ["Deploy the blue-green release to staging"], "prefix finds deploy and deployed");
    assert_eq!(result(5)["count"], 1, "a quoted phrase matches the hyphenated words");
    assert_eq!(result(6)["count"], 2, "OR finds both");
    assert!(result(7)["mode"] == "discover", "a malformed query is searched, not an error: {}", result(7));

    let browse = result(8);
    assert_eq!(browse["mode"], "browse");
    let listed: Vec<&str> =
        browse["sessions"].as_array().unwrap().iter().map(|s| s["title"].as_str().unwrap()).collect();
    assert_eq!(listed.len(), 3, "Alice's three earlier conversations, newest first: {listed:?}");
    assert_eq!(listed[0], "Deploy the blue-green release to staging");
    assert!(!listed.contains(&"what did we talk about before?"), "never the current conversation");

    assert!(result(9)["error"].as_str().unwrap().contains("no words to look for"));

    // Scrolling one of the results, then asking for a session that is not Alice's.
    let session = postgres["results"][0]["session_id"].as_str().unwrap().to_owned();
    let bob_session: String = sqlx::query_scalar("SELECT id::text FROM sessions WHERE user_key = 'session-key:bob'")
        .fetch_one(&env.db)
        .await
        .unwrap();
    env.llm.push(ScriptedReply::tool_call(
        "session_search",
        json!({"session_id": session, "around_message_id": 1, "window": 2}),
    ));
    env.llm
        .push(ScriptedReply::tool_call("session_search", json!({"session_id": bob_session, "around_message_id": 1})));
    env.llm.push(ScriptedReply::text("ok"));
    ask(&env, &key, "alice", "show me more").await;
    let requests = env.llm.requests();
    let n = requests.len();
    assert_eq!(n, 5 + searches.len() + 1 + 3);
    let scroll: Value = serde_json::from_str(
        requests[n - 2].messages().iter().rev().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap(),
    )
    .unwrap();
    assert_eq!(scroll["mode"], "scroll");
    let texts: Vec<&str> = scroll["messages"].as_array().unwrap().iter().map(|m| m["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["How do we rotate the Postgres credentials?", "Run vault write db/rotate-role."]);
    let refused = requests[n - 1].messages().iter().rev().find(|m| m["role"] == "tool").unwrap()["content"].clone();
    assert!(refused.as_str().unwrap().contains("no such session"), "Bob's conversation is not Alice's: {refused}");
    env.stop().await;
}
