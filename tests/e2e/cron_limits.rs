//! Limits of unattended cron runs: a run that shows no sign of life for the inactivity limit is
//! ended as failed (and the chat told), while a long run that keeps working is not.

use std::time::Duration;

use serde_json::json;

use hermes_testkit::ScriptedReply;
use hermes_testkit::telegram::TelegramEmulator;

use crate::harness::{Roles, TestEnv};
use crate::telegram::{Pod, bind, sent};

#[tokio::test]
async fn a_cron_run_silent_past_the_inactivity_limit_fails_but_a_busy_one_runs_on() {
    let env = TestEnv::start_with(Roles::default(), |c| c.worker.unattended_inactivity_seconds = 2).await;
    let tg = TelegramEmulator::start().await.unwrap();
    let channel = bind(&env, &tg, "poll", "open", &[]).await;
    sqlx::query("UPDATE agents SET toolsets = array_append(toolsets, 'todo')").execute(env.store.pool()).await.unwrap();
    let pod = Pod::start(&env).await;

    // Busy: four steps, each well inside the limit, together well past it.
    let step = Duration::from_millis(700);
    for _ in 0..3 {
        env.llm.push(ScriptedReply::tool_call("todo", json!({})).after(step));
    }
    env.llm.push(ScriptedReply::text("All four steps done.").after(step));
    let mut busy = super::cron::job(channel.agent_id, "busy");
    busy.deliver = "telegram:42".into();
    env.store.create_job(channel.tenant_id, &busy).await.unwrap();
    let got = sent(&tg, 1).await;
    assert_eq!(got[0].text, "⏰ Cron job “busy”\n\nAll four steps done.");

    // Hung: the model never answers within the limit.
    env.llm.push(ScriptedReply::text("too late").after(Duration::from_secs(30)));
    let mut hung = super::cron::job(channel.agent_id, "hung");
    hung.deliver = "telegram:42".into();
    env.store.create_job(channel.tenant_id, &hung).await.unwrap();
    let got = sent(&tg, 2).await;
    assert!(got[1].text.starts_with("⏰ Cron job “hung”\n\n"), "{}", got[1].text);
    let mut error = None;
    for _ in 0..100 {
        error = sqlx::query_scalar("SELECT error FROM cron_runs WHERE status = 'failed'")
            .fetch_optional(env.store.pool())
            .await
            .unwrap()
            .flatten();
        if error.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let error: String = error.expect("the hung run is settled as failed");
    assert!(error.contains("2 s without activity"), "{error}");
    assert_eq!(env.count("SELECT count(*) FROM cron_runs WHERE status = 'completed'").await, 1);
    pod.stop.cancel();
    env.stop().await;
}
