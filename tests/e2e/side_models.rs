//! A model per side task: each task an agent gave its own models runs on them, falling back in
//! order when one fails; a task given none runs on the auxiliary model, as before.

use serde_json::Value;

use hermes_core::AuxiliaryTask;
use hermes_store::ModelRef;
use hermes_testkit::ScriptedReply;

use crate::harness::{Team, answer_text, ask};

#[tokio::test]
async fn the_approval_judge_runs_on_its_own_chain_and_other_tasks_on_the_auxiliary_model() {
    let Team { env, tenant, agent, key } = Team::acme("ops").await;
    env.store.turns().set_approval_mode(tenant, agent.id, hermes_core::ApprovalMode::Smart).await.unwrap();
    let on_scripted = |model: &str| ModelRef { model: model.into(), base_url: env.llm.base_url(), api_mode: None };
    sqlx::query("UPDATE agents SET auxiliary = $1 WHERE id = $2")
        .bind(serde_json::to_value(on_scripted("aux-cheap")).unwrap())
        .bind(agent.id.as_uuid())
        .execute(&env.db)
        .await
        .unwrap();
    let judges = [(AuxiliaryTask::Approval, vec![on_scripted("judge-gone"), on_scripted("judge-ok")])];
    let judges = judges.into_iter().collect();
    env.store.agents().set_model_routing(tenant, agent.id, None, Some(&judges)).await.unwrap();

    // The first judge is gone (404): the next in its chain reviews the command.
    env.llm.push(ScriptedReply::terminal("mkdir -p build && rm -rf build && echo gone"));
    env.llm.push(ScriptedReply::error(404));
    env.llm.push(ScriptedReply::text("APPROVE"));
    env.llm.push(ScriptedReply::text("Removed the build directory."));
    let body: Value = env.chat(&key, ask("ops", "clean")).await.json().await.unwrap();
    assert_eq!(answer_text(&body), "Removed the build directory.", "{body}");
    let models = |from: usize| -> Vec<String> {
        env.llm.requests()[from..].iter().map(|r| r.body["model"].as_str().unwrap_or_default().to_owned()).collect()
    };
    assert_eq!(models(0), ["scripted-model", "judge-gone", "judge-ok", "scripted-model"]);
    let calls: Vec<(String, String)> =
        sqlx::query_as("SELECT purpose, model FROM model_calls ORDER BY id").fetch_all(&env.db).await.unwrap();
    assert!(calls.contains(&("auxiliary".into(), "judge-ok".into())), "the judge's call is metered: {calls:?}");

    // With no models of its own, the task is the auxiliary model's again.
    env.store.agents().set_model_routing(tenant, agent.id, None, Some(&Default::default())).await.unwrap();
    env.llm.push(ScriptedReply::terminal("mkdir -p dist && rm -rf dist && echo gone"));
    env.llm.push(ScriptedReply::text("APPROVE"));
    env.llm.push(ScriptedReply::text("Removed dist."));
    let body: Value = env.chat(&key, ask("ops", "clean dist")).await.json().await.unwrap();
    assert_eq!(answer_text(&body), "Removed dist.", "{body}");
    assert_eq!(models(4), ["scripted-model", "aux-cheap", "scripted-model"]);
    assert_eq!(env.llm.requests()[5].messages()[1]["content"].as_str().map(|c| c.contains("rm -rf dist")), Some(true));
    env.stop().await;
}
