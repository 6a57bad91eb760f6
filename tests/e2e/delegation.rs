//! `delegate_task`: children work in parallel with a narrower toolset and report summaries;
//! their transcripts are sessions linked to the parent.

use serde_json::json;

use hermes_store::NewAgent;
use hermes_testkit::ScriptedReply;

use crate::harness::{TestEnv, answer_text, ask};

async fn delegating_agent(env: &TestEnv) -> String {
    let lead = NewAgent {
        soul: Some("You are the Lead.".into()),
        toolsets: vec!["terminal".into(), "delegation".into()],
        ..env.new_agent("lead", "scripted")
    };
    env.tenant_with("acme", lead).await.2
}

#[tokio::test]
async fn children_work_in_parallel_with_fewer_tools_and_only_their_summaries_return() {
    let env = TestEnv::start().await;
    let key = delegating_agent(&env).await;
    env.llm.push(ScriptedReply::tool_call(
        "delegate_task",
        json!({"tasks": [{"goal": "check service A"}, {"goal": "check service B"}], "context": "we run on k8s"}),
    ));
    env.llm.push(ScriptedReply::text("child summary one"));
    env.llm.push(ScriptedReply::text("child summary two"));
    env.llm.push(ScriptedReply::text("both services are fine"));
    let body = env.answered(&key, "lead", "check our services").await;
    assert_eq!(answer_text(&body), "both services are fine");

    let reqs = env.llm.requests();
    assert_eq!(reqs.len(), 4);
    let parent_tools: Vec<String> = reqs[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(parent_tools.contains(&"delegate_task".to_owned()));
    for child in &reqs[1..3] {
        let msgs = child.messages();
        let system = msgs[0]["content"].as_str().unwrap();
        assert!(!system.contains("You are the Lead."), "children get the default identity");
        assert!(system.contains("delegated by another agent"));
        let tools: Vec<&str> =
            child.body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
        assert_eq!(tools, ["process", "terminal"], "no delegation below depth 1");
        let task = msgs[1]["content"].as_str().unwrap();
        assert!(task.starts_with("check service") && task.contains("we run on k8s"), "{task}");
    }
    let result =
        reqs[3].messages().into_iter().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap().to_owned();
    assert!(
        result.contains("### Task 1: check service A") && result.contains("### Task 2: check service B"),
        "{result}"
    );
    assert!(result.contains("child summary one") && result.contains("child summary two"), "{result}");

    // Child transcripts are sessions linked to the parent.
    let parent: String =
        sqlx::query_scalar("SELECT id::text FROM sessions WHERE lineage IS NULL").fetch_one(&env.db).await.unwrap();
    let children: Vec<(String, i64)> = sqlx::query_as(
        "SELECT s.parent_session_id::text, (SELECT count(*) FROM messages m WHERE m.session_id = s.id)
         FROM sessions s WHERE s.lineage = 'subagent'",
    )
    .fetch_all(&env.db)
    .await
    .unwrap();
    assert_eq!(children.len(), 2);
    assert!(children.iter().all(|(p, n)| *p == parent && *n == 2), "{children:?}");
    // Every call is metered on the parent's turn: two by the parent, one by each child.
    let purposes: Vec<String> =
        sqlx::query_scalar("SELECT purpose FROM model_calls ORDER BY purpose").fetch_all(&env.db).await.unwrap();
    assert_eq!(purposes, ["main", "main", "subagent", "subagent"]);
    let turns = env.count("SELECT count(DISTINCT turn_id) FROM model_calls").await;
    assert_eq!(turns, 1);
    env.stop().await;
}

#[tokio::test]
async fn more_than_three_tasks_is_an_error_the_model_can_fix() {
    let env = TestEnv::start().await;
    let key = delegating_agent(&env).await;
    env.llm.push(ScriptedReply::tool_call("delegate_task", json!({"tasks": ["a", "b", "c", "d"]})));
    env.llm.push(ScriptedReply::text("I will split the work"));
    let resp = env.chat(&key, ask("lead", "do four things")).await;
    assert_eq!(resp.status(), 200);
    let reqs = env.llm.requests();
    assert_eq!(reqs.len(), 2, "no child ran");
    let result =
        reqs[1].messages().into_iter().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap().to_owned();
    assert!(result.contains("at most 3"), "{result}");
    env.stop().await;
}

#[tokio::test]
async fn the_tenant_cap_on_children_is_shared_by_workers_and_slots_of_dead_workers_lapse() {
    let env = TestEnv::start_with(crate::harness::Roles { worker: false, scheduler: false }, |_| {}).await;
    let (tenant, _, _) = env.tenant("acme", "a").await;
    let (other, _, _) = env.tenant("beta", "b").await;
    let (tenant, other) = (tenant.to_string(), other.to_string());
    let (tenant, other) = (tenant.as_str(), other.as_str());
    let connect = || hermes_cache::Cache::connect(&env.config.redis.url, &env.config.redis.key_prefix);
    let worker_1 = connect().await.unwrap().child_slots();
    let worker_2 = connect().await.unwrap().child_slots();
    let long = std::time::Duration::from_secs(60);
    assert!(worker_1.try_acquire(tenant, "c1", 2, long).await.unwrap());
    assert!(worker_2.try_acquire(tenant, "c2", 2, long).await.unwrap());
    assert!(!worker_1.try_acquire(tenant, "c3", 2, long).await.unwrap(), "the cap holds across workers");
    assert!(worker_1.try_acquire(other, "x1", 2, long).await.unwrap(), "other tenants are not affected");
    worker_2.release(tenant, "c2").await.unwrap();
    assert!(worker_1.try_acquire(tenant, "c3", 2, long).await.unwrap());
    // A slot whose worker died lapses.
    assert!(worker_1.try_acquire(other, "x2", 2, std::time::Duration::from_millis(200)).await.unwrap());
    assert!(!worker_1.try_acquire(other, "x3", 2, long).await.unwrap());
    // The slot's 200 ms lease must run out: the sleep is the behaviour under test.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(worker_1.try_acquire(other, "x3", 2, long).await.unwrap());
    env.stop().await;
}
