//! Discovery endpoints: `/v1/capabilities`, `/v1/toolsets` (which must list exactly the tools
//! an agent with those toolsets is given) and `/v1/skills`.

use hermes_core::toolsets::TOOLSETS;
use hermes_testkit::ScriptedReply;

use crate::harness::{Team, ask};
use crate::openapi::call;

#[tokio::test]
async fn toolsets_match_the_tools_agents_get_and_skills_follow_the_agents_view() {
    let Team { env, agent, key, .. } = Team::acme("ops").await;
    let all: Vec<&str> = TOOLSETS.iter().map(|t| t.name()).collect();
    env.set_toolsets(agent.id, &all).await;
    env.llm.push(ScriptedReply::text("hi"));
    assert_eq!(env.chat(&key, ask("ops", "hi")).await.status(), 200);
    let mut given: Vec<String> = env.llm.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    given.sort();
    let mut listed: Vec<String> = TOOLSETS.iter().flat_map(|t| t.tools.iter().map(|s| (*s).to_owned())).collect();
    listed.sort();
    assert_eq!(given, listed, "the catalogue is exactly what an agent with every toolset gets");

    let (status, toolsets) = call(&env, &key, "get", "/v1/toolsets?model=ops", None).await;
    assert_eq!(status, 200);
    assert!(toolsets["data"].as_array().unwrap().iter().all(|t| t["enabled"] == true));

    env.set_toolsets(agent.id, &["skills"]).await;
    let (_, toolsets) = call(&env, &key, "get", "/v1/toolsets", None).await;
    let enabled: Vec<&str> = toolsets["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["enabled"] == true)
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(enabled, ["skills"]);
    let (_, skills) = call(&env, &key, "get", "/v1/skills", None).await;
    let names: Vec<&str> = skills["data"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert!(
        names.contains(&"code-review") && !names.contains(&"git-workflow"),
        "terminal-only skills hidden: {names:?}"
    );
    assert_eq!(skills["data"][0]["source"], "bundled");

    let (status, caps) = call(&env, &key, "get", "/v1/capabilities", None).await;
    assert_eq!(status, 200);
    assert_eq!(caps["object"], "hermes.api_server.capabilities");
    assert_eq!(caps["features"]["idempotency_key"], true);
    let (status, _) = call(&env, "hk_not_a_key", "get", "/v1/capabilities", None).await;
    assert_eq!(status, 401);
    env.stop().await;
}
