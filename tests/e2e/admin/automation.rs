//! What the console shows and does about unattended work: cron jobs (run now, pause,
//! resume, history), webhook triggers and event endpoints (deliveries, a test event), the
//! questions parked turns wait on (answered here, the turn goes on), and the operators'
//! cluster view.

use hermes_testkit::ScriptedReply;
use reqwest::Method;
use serde_json::json;

use super::{Acme, cli};
use crate::harness::{Roles, poll_until};
use crate::openapi::call;

#[tokio::test]
async fn cron_hooks_and_waiting_approvals_are_run_answered_and_watched_from_the_admin_api() {
    let Acme { env, id: acme, key, owner, viewer } = Acme::start(Roles::default()).await;
    let t = |rest: &str| format!("/admin/v1/tenants/{acme}{rest}");

    // First the approval: the cron job run below would take scripted replies meant for it.
    // A turn waits for an approval; a member sees it, the owner denies it, the turn goes on.
    env.llm.push(ScriptedReply::terminal("rm -rf /workspace/build"));
    env.llm.push(ScriptedReply::text("Understood, I left it alone."));
    let (s, run) = call(&env, &key, "post", "/v1/runs", Some(json!({"input": "clean up"}))).await;
    assert_eq!(s, 202, "{run}");
    let waiting = poll_until(async || {
        let (_, list) = viewer.call(&env, Method::GET, &t("/approvals"), None).await;
        list["data"].as_array().and_then(|a| a.first().cloned())
    })
    .await
    .expect("the run waits for an approval");
    assert_eq!(waiting["kind"], "approval");
    let question = waiting["id"].as_str().unwrap().to_owned();
    let (s, _) =
        viewer.call(&env, Method::POST, &t(&format!("/approvals/{question}")), Some(json!({"choice": "once"}))).await;
    assert_eq!(s, 403, "a member does not answer");
    let (s, answered) =
        owner.call(&env, Method::POST, &t(&format!("/approvals/{question}")), Some(json!({"choice": "deny"}))).await;
    assert_eq!((s, answered["answered"].as_bool()), (200, Some(true)), "{answered}");
    let (s, again) =
        owner.call(&env, Method::POST, &t(&format!("/approvals/{question}")), Some(json!({"choice": "once"}))).await;
    assert_eq!((s, again["error"]["code"].as_str()), (409, Some("interaction_closed")));
    let run_id = run["run_id"].as_str().unwrap();
    let finished = poll_until(async || {
        let (_, state) = call(&env, &key, "get", &format!("/v1/runs/{run_id}"), None).await;
        (state["status"] == "completed").then_some(state)
    })
    .await
    .expect("the denied run goes on and finishes");
    assert!(finished.to_string().contains("left it alone"), "{finished}");
    // The conversation exports as one JSON file, for anyone who may read it.
    let session = finished["session_id"].as_str().unwrap().to_owned();
    let (s, exported) = viewer.call(&env, Method::GET, &t(&format!("/sessions/{session}/export")), None).await;
    assert_eq!(s, 200, "{exported}");
    assert!(exported.to_string().contains("clean up"), "the transcript is in the export: {exported}");

    // Cron.
    let (s, job) =
        call(&env, &key, "post", "/v1/cron/jobs", Some(json!({"prompt": "Digest.", "schedule": "every 1d"}))).await;
    assert_eq!(s, 201, "{job}");
    let id = job["id"].as_str().unwrap();
    let (s, jobs) = owner.call(&env, Method::GET, &t("/cron"), None).await;
    assert_eq!((s, jobs["data"].as_array().unwrap().len()), (200, 1));
    let (s, _) = viewer.call(&env, Method::POST, &t(&format!("/cron/{id}/run")), None).await;
    assert_eq!(s, 403, "a member does not run jobs");
    let (s, paused) = owner.call(&env, Method::POST, &t(&format!("/cron/{id}/pause")), None).await;
    assert_eq!((s, paused["state"].as_str()), (200, Some("paused")));
    let (s, resumed) = owner.call(&env, Method::POST, &t(&format!("/cron/{id}/resume")), None).await;
    assert_eq!((s, resumed["state"].as_str()), (200, Some("scheduled")));
    let (s, due) = owner.call(&env, Method::POST, &t(&format!("/cron/{id}/run")), None).await;
    assert_eq!(s, 200);
    let due_at = chrono::DateTime::parse_from_rfc3339(due["next_run_at"].as_str().unwrap()).unwrap();
    assert!((chrono::Utc::now() - due_at.to_utc()).num_seconds().abs() < 30, "due now: {due}");
    let (s, _) = owner.call(&env, Method::POST, &t(&format!("/cron/{id}/explode")), None).await;
    assert_eq!(s, 404, "no such action");
    let (s, _) = owner.call(&env, Method::GET, &t(&format!("/cron/{id}/runs")), None).await;
    assert_eq!(s, 200);

    // Hooks: listed without secrets; a test event shows in the deliveries.
    call(&env, &key, "post", "/v1/webhooks", Some(json!({"name": "ci", "deliver": "local"}))).await;
    let (_, endpoint) =
        call(&env, &key, "post", "/v1/event-hooks", Some(json!({"url": "https://hooks.example.com/x"}))).await;
    let endpoint = endpoint["id"].as_str().unwrap();
    let (s, hooks) = owner.call(&env, Method::GET, &t("/hooks"), None).await;
    assert_eq!(
        (s, hooks["webhooks"].as_array().unwrap().len(), hooks["event_hooks"].as_array().unwrap().len()),
        (200, 1, 1)
    );
    assert!(!hooks.to_string().contains("whsec_"), "no secret is shown: {hooks}");
    let (s, _) = owner.call(&env, Method::POST, &t(&format!("/hooks/{endpoint}/ping")), None).await;
    assert_eq!(s, 200);
    let (s, deliveries) = owner.call(&env, Method::GET, &t(&format!("/hooks/{endpoint}/deliveries")), None).await;
    assert_eq!((s, deliveries["data"].as_array().unwrap().is_empty()), (200, false), "{deliveries}");

    // The cluster view is the operators'.
    let (s, _) = owner.call(&env, Method::GET, "/admin/v1/cluster", None).await;
    assert_eq!(s, 403);
    let ops = env.store.admin().ensure_person("ops@example.com", "", true, &cli()).await.unwrap();
    let ops = super::by_link(&env, ops.id).await;
    // Two workers report the same shared sandbox, the second more recently: it shows once, as
    // the newer report has it.
    let census = hermes_cache::Cache::connect(&env.config.redis.url, &env.config.redis.key_prefix)
        .await
        .unwrap()
        .sandbox_census();
    let sandbox = |execs| hermes_core::census::LiveSandbox {
        tenant_id: acme.as_uuid(),
        agent_id: uuid::Uuid::now_v7(),
        backend: "docker".into(),
        name: "hermes-sbx-acme".into(),
        running_execs: execs,
        running_processes: 0,
        idle_secs: 3,
    };
    let at = chrono::Utc::now();
    for (worker, at, execs) in [("worker-a", at - chrono::Duration::seconds(20), 0), ("worker-b", at, 2)] {
        let report = hermes_core::census::SandboxReport { worker: worker.into(), at, sandboxes: vec![sandbox(execs)] };
        census.publish(&report, std::time::Duration::from_secs(60)).await.unwrap();
    }
    let (s, cluster) = ops.call(&env, Method::GET, "/admin/v1/cluster", None).await;
    assert_eq!(s, 200, "{cluster}");
    for field in ["turns_queued", "turns_running", "outbox_waiting", "cron_jobs_late", "workers"] {
        assert!(cluster.get(field).is_some(), "{field}: {cluster}");
    }
    let shown = cluster["sandboxes"].as_array().unwrap();
    assert_eq!(shown.len(), 1, "{cluster}");
    assert_eq!((shown[0]["worker"].as_str(), shown[0]["running_execs"].as_u64()), (Some("worker-b"), Some(2)));
    assert_eq!(shown[0]["tenant_id"].as_str(), Some(acme.to_string().as_str()));
    env.stop().await;
}

#[tokio::test]
async fn a_sessions_goal_is_set_watched_paused_and_dropped_from_the_console() {
    let Acme { env, id: acme, key, owner, viewer } = Acme::start(Roles::default()).await;
    let t = |rest: &str| format!("/admin/v1/tenants/{acme}{rest}");
    let (s, session) = call(&env, &key, "post", "/api/sessions", Some(json!({"title": "release"}))).await;
    assert_eq!(s, 201, "{session}");
    let goal = t(&format!("/sessions/{}/goal", session["id"].as_str().unwrap()));
    let (s, none) = viewer.call(&env, Method::GET, &goal, None).await;
    assert_eq!(s, 404, "no goal yet: {none}");

    env.llm.push(ScriptedReply::text("Tagged and shipped."));
    env.llm.push(ScriptedReply::text(r#"{"done": true, "reason": "Shipped."}"#));
    let body = json!({"goal": "ship the release"});
    assert_eq!(viewer.call(&env, Method::PUT, &goal, Some(body.clone())).await.0, 403, "a member only watches");
    let (s, set) = owner.call(&env, Method::PUT, &goal, Some(body)).await;
    assert_eq!((s, set["state"].as_str()), (202, Some("active")), "{set}");
    let done = poll_until(async || {
        let (_, shown) = viewer.call(&env, Method::GET, &goal, None).await;
        (shown["state"] == "done").then_some(shown)
    })
    .await
    .expect("the goal is reached");
    assert_eq!(done["last_reason"], "Shipped.");

    let (s, paused) = owner.call(&env, Method::PATCH, &goal, Some(json!({"state": "paused"}))).await;
    assert_eq!((s, paused["state"].as_str()), (200, Some("paused")), "{paused}");
    assert_eq!(owner.call(&env, Method::DELETE, &goal, None).await.0, 204);
    assert_eq!(owner.call(&env, Method::DELETE, &goal, None).await.0, 404, "dropped already");
    let (_, audit) = owner.call(&env, Method::GET, &t("/audit?limit=50"), None).await;
    let actions: Vec<&str> = audit["data"].as_array().unwrap().iter().filter_map(|e| e["action"].as_str()).collect();
    for action in ["session.goal_set", "session.goal_paused", "session.goal_cleared"] {
        assert!(actions.contains(&action), "{action} in {actions:?}");
    }
    env.stop().await;
}
