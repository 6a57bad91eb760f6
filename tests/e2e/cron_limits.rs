//! Limits of unattended cron runs: a run that shows no sign of life for the inactivity limit is
//! ended as failed (and the chat told), while a long run that keeps working is not. And one
//! job managed by all three hands (API, chat command, the agent's tool) under the same rules.

use std::time::Duration;

use serde_json::json;

use hermes_testkit::ScriptedReply;

use crate::harness::{Roles, Team, TestEnv, poll_until};
use crate::openapi::call;
use crate::telegram::{Pod, TOKEN, exchange, open_bot, open_chat_with_tools, sent};

#[tokio::test]
async fn a_cron_run_silent_past_the_inactivity_limit_fails_but_a_busy_one_runs_on() {
    let env = TestEnv::start_with(Roles::default(), |c| c.worker.unattended_inactivity_seconds = 2).await;
    let (tg, channel) = open_bot(&env).await;
    sqlx::query("UPDATE agents SET toolsets = array_append(toolsets, 'todo')").execute(&env.db).await.unwrap();
    let pod = Pod::start(&env).await;

    // Busy: four steps, each well inside the limit, together well past it.
    let step = Duration::from_millis(700);
    for _ in 0..3 {
        env.llm.push(ScriptedReply::tool_call("todo", json!({})).after(step));
    }
    env.llm.push(ScriptedReply::text("All four steps done.").after(step));
    let mut busy = super::cron::job(channel.agent_id, "busy");
    busy.deliver = "telegram:42".into();
    env.store.automation().create_job(channel.tenant_id, &busy).await.unwrap();
    let got = sent(&tg, 1).await;
    assert_eq!(got[0].text, "⏰ Cron job “busy”\n\nAll four steps done.");

    // Hung: the model never answers within the limit.
    env.llm.push(ScriptedReply::text("too late").after(Duration::from_secs(30)));
    let mut hung = super::cron::job(channel.agent_id, "hung");
    hung.deliver = "telegram:42".into();
    env.store.automation().create_job(channel.tenant_id, &hung).await.unwrap();
    let got = sent(&tg, 2).await;
    assert!(got[1].text.starts_with("⏰ Cron job “hung”\n\n"), "{}", got[1].text);
    let error = poll_until(async || -> Option<String> {
        sqlx::query_scalar("SELECT error FROM cron_runs WHERE status = 'failed'")
            .fetch_optional(&env.db)
            .await
            .unwrap()
            .flatten()
    })
    .await;
    let error: String = error.expect("the hung run is settled as failed");
    assert!(error.contains("2 s without activity"), "{error}");
    assert_eq!(env.count("SELECT count(*) FROM cron_runs WHERE status = 'completed'").await, 1);
    pod.stop_with(env).await;
}

#[tokio::test]
async fn a_chats_job_is_managed_by_the_chat_the_agents_tool_and_the_api_and_nobody_elses_is_reachable() {
    let (env, tg, _, pod) = open_chat_with_tools(&["terminal", "cronjob"]).await;
    let tenant = env.store.tenancy().tenant_by_name("acme").await.unwrap().id;
    let key = env.store.tenancy().create_api_key(tenant, None, "k", None).await.unwrap().1;

    // A job the API made is not this chat's: the chat cannot see or change it, nor can the
    // agent acting for the chat (issue 17: any chat user could edit, run or redirect any job).
    let body = json!({"name": "Payroll export", "prompt": "Export payroll.", "schedule": "every 1d",
                      "deliver": "telegram:42"});
    let (status, foreign) = call(&env, &key, "post", "/v1/cron/jobs", Some(body)).await;
    assert_eq!(status, 201, "{foreign}");
    tg.user_says(TOKEN, 42, "/cron edit \"payroll export\" --deliver telegram:666");
    assert_eq!(sent(&tg, 1).await[0].text, "There is no job “payroll export” in this chat. /cron list shows them.");
    env.llm.push(ScriptedReply::tool_call("cronjob", json!({"action": "run", "job_id": "Payroll export"})));
    assert_eq!(
        exchange(&env, &tg, (42, "run the payroll export"), "I cannot reach it.", 2).await[1].text,
        "I cannot reach it."
    );
    let result = env.llm.requests().last().unwrap().last_text();
    assert!(result.contains("no such job"), "the tool does not reach another chat's job: {result}");
    let (_, seen) = call(&env, &key, "get", &format!("/v1/cron/jobs/{}", foreign["id"].as_str().unwrap()), None).await;
    assert_eq!((seen["deliver"].as_str(), seen["state"].as_str()), (Some("telegram:42"), Some("scheduled")), "{seen}");

    // Made in the chat...
    tg.user_says(TOKEN, 42, "/cron add \"every 1d\" Summarise yesterday. --name \"Standup digest\"");
    assert!(sent(&tg, 3).await[2].text.starts_with("Scheduled “Standup digest”"), "{}", tg.sent(TOKEN)[2].text);
    let (_, jobs) = call(&env, &key, "get", "/v1/cron/jobs", None).await;
    let id = jobs["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["name"] == "Standup digest")
        .and_then(|j| j["id"].as_str())
        .unwrap()
        .to_owned();
    // ...edited from the chat, by name in any case...
    tg.user_says(TOKEN, 42, "/cron edit \"standup DIGEST\" --schedule \"every 2h\"");
    assert_eq!(sent(&tg, 4).await[3].text, "Updated “Standup digest” (every 2h).");
    // ...paused by the agent's tool in that chat...
    env.llm.push(ScriptedReply::tool_call("cronjob", json!({"action": "pause", "job_id": "standup digest"})));
    assert_eq!(exchange(&env, &tg, (42, "pause the standup digest"), "Paused it.", 5).await[4].text, "Paused it.");
    let (_, seen) = call(&env, &key, "get", &format!("/v1/cron/jobs/{id}"), None).await;
    assert_eq!((seen["state"].as_str(), seen["schedule"].as_str()), (Some("paused"), Some("every 2h")), "{seen}");
    // ...resumed from the chat, and removed through the API: gone for the tool too.
    tg.user_says(TOKEN, 42, "/cron resume \"standup digest\"");
    assert!(sent(&tg, 6).await[5].text.starts_with("Resumed “Standup digest”; next run "));
    assert_eq!(call(&env, &key, "delete", &format!("/v1/cron/jobs/{id}"), None).await.0, 200);
    env.llm.push(ScriptedReply::tool_call("cronjob", json!({"action": "run", "job_id": "Standup digest"})));
    assert_eq!(exchange(&env, &tg, (42, "run the standup digest"), "It is gone.", 7).await[6].text, "It is gone.");
    let result = env.llm.requests().last().unwrap().last_text();
    assert!(result.contains("no such job"), "the tool says there is no such job: {result}");
    pod.stop_with(env).await;
}

#[tokio::test]
async fn a_jobs_runs_use_its_model_and_only_its_toolsets() {
    let Team { env, key, .. } = Team::acme("ops").await;
    sqlx::query("UPDATE agents SET toolsets = ARRAY['terminal', 'todo', 'memory']").execute(&env.db).await.unwrap();
    let bad = json!({"prompt": "x", "schedule": "every 1d", "enabled_toolsets": ["teleport"]});
    let (status, err) = call(&env, &key, "post", "/v1/cron/jobs", Some(bad)).await;
    assert_eq!((status, err["error"]["code"].as_str()), (400, Some("invalid_value")), "{err}");
    let body = json!({"name": "tidy", "prompt": "Tidy the task list.", "schedule": "every 1d",
                      "run_model": "small-model", "enabled_toolsets": ["todo", "file"]});
    let (status, job) = call(&env, &key, "post", "/v1/cron/jobs", Some(body)).await;
    assert_eq!((status, job["model"].as_str()), (201, Some("small-model")), "{job}");
    env.llm.push(ScriptedReply::text("Tidied."));
    call(&env, &key, "post", "/v1/cron/jobs/tidy/run", None).await;
    assert!(env.llm.wait_for_requests(1, Duration::from_secs(20)).await);
    let request = env.llm.requests()[0].body.clone();
    assert_eq!(request["model"], "small-model");
    let tools: Vec<&str> = request["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["function"]["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(tools, ["todo"], "the job's toolsets that the agent has");
    env.stop().await;
}
