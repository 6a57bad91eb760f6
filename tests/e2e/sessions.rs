//! Session lifecycle on real Postgres and Redis: automatic titles, lineage through every kind
//! of parent link, export as JSON and ShareGPT, retention pruning, and the chat reset rules
//! (idle, daily in the tenant's time zone, never while a background process runs).

use chrono::{Duration, TimeZone, Utc};
use serde_json::{Value, json};

use hermes_core::{ChatMessage, SessionId};
use hermes_store::{ResetReason, Route, SessionPolicy};
use hermes_testkit::ScriptedReply;

use crate::harness::{Team, ask};

fn session_of(resp: &reqwest::Response) -> SessionId {
    resp.headers()["x-hermes-session-id"].to_str().unwrap().parse().unwrap()
}

#[tokio::test]
async fn sessions_get_titles_lineage_and_exports() {
    let Team { env, tenant, agent, key } = Team::acme("ops").await;
    env.set_toolsets(agent.id, &["todo"]).await;
    env.llm.push(ScriptedReply::tool_call(
        "todo",
        json!({"todos": [{"id": "1", "content": "ship", "status": "pending"}]}),
    ));
    env.llm.push(ScriptedReply::text("Planned."));
    let long = format!("Plan the release of version two {}\nsecond line", "with many careful steps ".repeat(5));
    let resp = env.chat(&key, ask("ops", long)).await;
    assert_eq!(resp.status(), 200);
    let root = session_of(&resp);
    let meta = env.store.conversations().session(tenant, root).await.unwrap();
    let title = meta.title.unwrap();
    assert!(title.starts_with("Plan the release of version two with") && title.ends_with('…'), "{title}");
    assert!(title.chars().count() <= 61, "{title}");
    env.store.conversations().set_session_title(tenant, root, Some("Release planning")).await.unwrap();
    assert!(
        env.store.conversations().set_session_title(tenant, SessionId::new(), Some("x")).await.is_err(),
        "unknown is NotFound"
    );

    // A delegated child and a compacted continuation of it: the lineage walks up and down.
    let child = env.store.conversations().create_child_session(tenant, root, "research task").await.unwrap();
    let grandchild = SessionId::new();
    sqlx::query(
        "INSERT INTO sessions (id, tenant_id, agent_id, source, parent_session_id, lineage, title)
         VALUES ($1, $2, $3, 'subagent', $4, 'compaction', 'research, continued')",
    )
    .bind(grandchild.as_uuid())
    .bind(tenant.as_uuid())
    .bind(agent.id.as_uuid())
    .bind(child.as_uuid())
    .execute(&env.db)
    .await
    .unwrap();
    let lineage = env.store.conversations().session_lineage(tenant, grandchild).await.unwrap();
    let shape: Vec<(SessionId, i32, Option<&str>)> =
        lineage.iter().map(|n| (n.session_id, n.depth, n.lineage.as_deref())).collect();
    assert_eq!(shape, [(root, 0, None), (child, 1, Some("subagent")), (grandchild, 2, Some("compaction"))]);
    let (other, _, _) = env.tenant("globex", "ops").await;
    assert!(
        env.store.conversations().session_lineage(other, root).await.is_err(),
        "another tenant's session is not found"
    );

    // Export: JSON keeps everything; ShareGPT has the conversation with tool blocks.
    let export = env.store.conversations().export_session(tenant, root).await.unwrap();
    assert_eq!(export.title.as_deref(), Some("Release planning"));
    assert_eq!(export.lineage.len(), 3);
    let roles: Vec<&str> = export.messages.iter().map(|m| m.message.role.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    let json = serde_json::to_value(&export).unwrap();
    assert_eq!(json["messages"][1]["tool_calls"][0]["function"]["name"], "todo");
    let share = export.to_sharegpt();
    let from: Vec<&str> =
        share["conversations"].as_array().unwrap().iter().map(|c| c["from"].as_str().unwrap()).collect();
    assert_eq!(from, ["system", "human", "gpt", "tool", "gpt"]);
    let call = share["conversations"][2]["value"].as_str().unwrap();
    assert!(call.contains("<tool_call>") && call.contains("\"name\":\"todo\""), "{call}");
    assert!(share["conversations"][3]["value"].as_str().unwrap().starts_with("<tool_response>"));
    assert_eq!(share["conversations"][4]["value"], "Planned.");
    env.stop().await;
}

#[tokio::test]
async fn sessions_past_the_tenants_retention_are_pruned_unless_a_turn_is_open() {
    let Team { env, tenant, key, .. } = Team::acme("ops").await;
    let mut sessions = Vec::new();
    for i in 0..3 {
        env.llm.push(ScriptedReply::text("ok"));
        let resp = env.chat(&key, ask("ops", format!("hi {i}"))).await;
        sessions.push(session_of(&resp));
    }
    let now = Utc::now();
    // Keeping forever (the default) prunes nothing, however old.
    sqlx::query("UPDATE sessions SET updated_at = now() - interval '40 days'").execute(&env.db).await.unwrap();
    assert_eq!(env.store.system().prune_sessions(now, 0, 100).await.unwrap(), 0);

    let policy =
        SessionPolicy { retention_days: Some(30), ..env.store.conversations().session_policy(tenant).await.unwrap() };
    env.store.conversations().set_session_policy(tenant, &policy).await.unwrap();
    // Session 1 was active recently; session 2 has a queued turn.
    sqlx::query("UPDATE sessions SET updated_at = now() - interval '2 days' WHERE id = $1")
        .bind(sessions[1].as_uuid())
        .execute(&env.db)
        .await
        .unwrap();
    sqlx::query("UPDATE turns SET status = 'queued' WHERE session_id = $1")
        .bind(sessions[2].as_uuid())
        .execute(&env.db)
        .await
        .unwrap();
    assert_eq!(env.store.system().prune_sessions(now, 0, 100).await.unwrap(), 1);
    assert!(env.store.conversations().session(tenant, sessions[0]).await.is_err(), "the old one is gone");
    assert!(env.store.conversations().session(tenant, sessions[1]).await.is_ok());
    assert!(env.store.conversations().session(tenant, sessions[2]).await.is_ok(), "an open turn keeps its session");
    assert_eq!(env.count(&format!("SELECT count(*) FROM messages WHERE session_id = '{}'", sessions[0])).await, 0);
    env.stop().await;
}

#[tokio::test]
async fn a_chat_keeps_its_session_until_the_reset_rules_say_otherwise_but_never_while_a_process_runs() {
    let Team { env, tenant, agent, .. } = Team::acme("ops").await;
    let policy = SessionPolicy { timezone: "Asia/Shanghai".parse().unwrap(), ..SessionPolicy::default() };
    env.store.conversations().set_session_policy(tenant, &policy).await.unwrap();
    let route = Route {
        agent: agent.id,
        key: "telegram:chat:42".into(),
        source: hermes_core::SessionSource::Telegram,
        user_key: "telegram:7".into(),
    };
    let cache = hermes_cache::Cache::connect(&env.config.redis.url, &env.config.redis.key_prefix).await.unwrap();
    let marks = cache.background_marks();
    let send = async |text: &str, now: chrono::DateTime<Utc>| -> (SessionId, Option<ResetReason>) {
        let (target, reason) = env
            .store
            .turns()
            .route_target(tenant, &route, now, async |session| marks.is_marked(tenant, session).await.unwrap())
            .await
            .unwrap();
        let new = hermes_store::NewTurn::new(agent.id, target, ChatMessage::user(text));
        let (session, _) = env.store.turns().enqueue_turn(tenant, new).await.unwrap();
        // Its last activity is "now" on the fake clock.
        sqlx::query("UPDATE sessions SET updated_at = $2 WHERE id = $1")
            .bind(session.as_uuid())
            .bind(now)
            .execute(&env.db)
            .await
            .unwrap();
        (session, reason)
    };
    // 10:00 Shanghai is 02:00 UTC.
    let t0 = Utc.with_ymd_and_hms(2026, 11, 30, 2, 0, 0).unwrap();
    let (first, reason) = send("hello", t0).await;
    assert_eq!(reason, None);
    assert_eq!(
        env.store.conversations().session(tenant, first).await.unwrap().source,
        hermes_core::SessionSource::Telegram
    );
    let (same, _) = send("later that day", t0 + Duration::hours(6)).await;
    assert_eq!(same, first, "same day, not idle: the same conversation");

    // 04:00 in Shanghai (20:00 UTC) passes: the next message starts a new session.
    let (second, reason) = send("next morning", Utc.with_ymd_and_hms(2026, 11, 30, 20, 30, 0).unwrap()).await;
    assert_eq!(reason, Some(ResetReason::Daily));
    assert_ne!(second, first);
    let user_key: String = sqlx::query_scalar("SELECT user_key FROM sessions WHERE id = $1")
        .bind(second.as_uuid())
        .fetch_one(&env.db)
        .await
        .unwrap();
    assert_eq!(user_key, "telegram:7");

    // A background process keeps the conversation going past the rules...
    marks.mark(tenant, second, std::time::Duration::from_secs(60)).await.unwrap();
    let late = Utc.with_ymd_and_hms(2026, 12, 2, 12, 0, 0).unwrap();
    let (kept, reason) = send("is the build done?", late).await;
    assert_eq!((kept, reason), (second, None));
    // ...and once it has finished, the day of idleness resets it.
    marks.clear(tenant, second).await.unwrap();
    let (third, reason) = send("new topic", late + Duration::hours(25)).await;
    assert_eq!(reason, Some(ResetReason::Idle));
    assert_ne!(third, second);
    assert_eq!(env.count("SELECT count(*) FROM session_routes").await, 1, "one route, pointing at the newest");
    env.stop().await;
}

#[tokio::test]
async fn a_background_process_marks_its_session_until_it_is_seen_finished() {
    let Team { env, tenant, key, .. } = Team::acme("ops").await;
    let cache = hermes_cache::Cache::connect(&env.config.redis.url, &env.config.redis.key_prefix).await.unwrap();
    env.llm.push(ScriptedReply::tool_call("terminal", json!({"command": "sleep 30", "background": true})));
    env.llm.push(ScriptedReply::text("started"));
    let resp = env.chat(&key, ask("ops", "start it")).await;
    assert_eq!(resp.status(), 200);
    let session = session_of(&resp);
    assert!(cache.background_marks().is_marked(tenant, session).await.unwrap(), "marked while it runs");

    let started = env.llm.requests()[1].messages();
    let text = started.iter().rev().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap().to_owned();
    let id = text.split_whitespace().nth(5).unwrap().trim_end_matches('.').to_owned();
    env.llm.push(ScriptedReply::tool_call("process", json!({"action": "kill", "session_id": id})));
    env.llm.push(ScriptedReply::text("killed"));
    let resp = env.chat_with(&key, ask("ops", "stop it"), Some(&session.to_string())).await;
    assert_eq!(resp.status(), 200);
    let killed: Value =
        json!(env.llm.requests()[3].messages().iter().rev().find(|m| m["role"] == "tool").unwrap()["content"]);
    assert!(killed.as_str().unwrap().contains(&id), "{killed}");
    assert!(!cache.background_marks().is_marked(tenant, session).await.unwrap(), "cleared once nothing runs");
    env.stop().await;
}
