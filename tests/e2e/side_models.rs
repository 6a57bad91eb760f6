//! A model per side task: each task an agent gave its own models runs on them, falling back in
//! order when one fails; a task given none runs on the auxiliary model, as before. Long pages
//! are summarised only for an agent that gave `web_extract` models.

use serde_json::{Value, json};

use hermes_core::AuxiliaryTask;
use hermes_store::ModelRef;
use hermes_testkit::ScriptedReply;
use hermes_testkit::web::{WebWorld, long_paragraph};

use crate::harness::{Roles, Team, TestEnv, answer_text, ask};

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

#[tokio::test]
async fn an_agent_with_a_web_extract_model_reads_long_pages_summarised_by_it() {
    let world = WebWorld::start().await.unwrap();
    let site = world.host();
    let env = TestEnv::start_with(Roles::default(), move |c| c.web.allow_private_hosts = vec![site]).await;
    let (tenant, agent, key) = env.tenant("acme", "ops").await;
    env.set_toolsets(agent.id, &["web"]).await;
    let reader = ModelRef { model: "page-reader".into(), base_url: env.llm.base_url(), api_mode: None };
    let tasks = [(AuxiliaryTask::WebExtract, vec![reader])].into_iter().collect();
    env.store.agents().set_model_routing(tenant, agent.id, None, Some(&tasks)).await.unwrap();

    env.llm.push(ScriptedReply::tool_call("web_extract", json!({"urls": [world.page("long")]})));
    env.llm.push(ScriptedReply::text("- 400 paragraphs on agents, sandboxes and quotas."));
    env.llm.push(ScriptedReply::text("It is about agents, sandboxes and quotas."));
    let body: Value = env.chat(&key, ask("ops", "what is the long read about?")).await.json().await.unwrap();
    assert_eq!(answer_text(&body), "It is about agents, sandboxes and quotas.", "{body}");

    let requests = env.llm.requests();
    let models: Vec<&str> = requests.iter().map(|r| r.body["model"].as_str().unwrap_or_default()).collect();
    assert_eq!(models, ["scripted-model", "page-reader", "scripted-model"]);
    let asked = &requests[1];
    assert!(asked.messages()[0]["content"].as_str().unwrap().contains("condense a web page"));
    assert!(asked.last_text().contains(&long_paragraph(200)), "the summariser reads the middle too");
    let result: Value = serde_json::from_str(&requests[2].texts_of("tool")[0]).unwrap();
    let content = result["results"][0]["content"].as_str().unwrap();
    assert!(content.starts_with("[SUMMARY of this 4"), "{content}");
    assert!(
        content.contains("could not be kept (the turn has no file tools"),
        "an agent without files is told: {content}"
    );
    assert!(content.ends_with("- 400 paragraphs on agents, sandboxes and quotas."), "{content}");
    assert!(!content.contains(&long_paragraph(1)), "the summary stands for the page");
    let calls: Vec<(String, String)> =
        sqlx::query_as("SELECT purpose, model FROM model_calls ORDER BY id").fetch_all(&env.db).await.unwrap();
    assert!(calls.contains(&("auxiliary".into(), "page-reader".into())), "the summary is metered: {calls:?}");
    env.stop().await;
}
