//! Editing an agent from the console: model, SOUL, toolsets, fallbacks, internet access,
//! approvals and how images are seen change for new sessions; bad values are refused with the
//! field named; members change nothing; the audit log holds the agent before and after. A new
//! agent named no toolsets gets the installation's defaults, which follow its services.

use std::collections::BTreeMap;

use hermes_core::TenantId;
use reqwest::Method;
use serde_json::{Value, json};

use super::{Acme, Console, acme_and_owner};
use crate::harness::{Roles, TestEnv};

#[tokio::test]
async fn an_agent_is_edited_with_its_values_checked_and_audited() {
    let Acme { env, id: acme, owner, viewer, .. } = Acme::start(Roles::API_ONLY).await;
    let path = format!("/admin/v1/tenants/{acme}/agents/helper");

    let (s, _) = viewer.call(&env, Method::PATCH, &path, Some(json!({"model": "gpt-x"}))).await;
    assert_eq!(s, 403);
    let edit = json!({
        "model": "gpt-4o-mini", "soul": "You are terse.", "toolsets": ["terminal", "memory"],
        "fallbacks": [{"model": "backup", "base_url": "https://api.example.com/v1"}], "egress": true, "approval_mode": "smart",
    });
    let (s, agent) = owner.call(&env, Method::PATCH, &path, Some(edit)).await;
    assert_eq!(s, 200, "{agent}");
    assert_eq!(
        (agent["model"].as_str(), agent["soul"].as_str(), agent["egress"].as_bool()),
        (Some("gpt-4o-mini"), Some("You are terse."), Some(true))
    );
    assert_eq!(agent["approval_mode"], "smart");
    assert_eq!(agent["workspace"], "agent", "an agent made before workspaces had owners keeps its shared one");
    assert_eq!(agent["fallbacks"][0]["model"], "backup");
    let stored = env.store.agents().agent_by_name(acme, "helper").await.unwrap();
    assert_eq!(stored.toolsets, ["terminal", "memory"]);

    let (s, own) = owner.call(&env, Method::PATCH, &path, Some(json!({"workspace": "person"}))).await;
    assert_eq!((s, own["workspace"].as_str()), (200, Some("person")));
    let (s, odd) = owner.call(&env, Method::PATCH, &path, Some(json!({"sandbox": {"shell": "zsh"}}))).await;
    assert!(s == 400 && odd["error"]["message"].as_str().unwrap().contains("unknown field `shell`"), "{odd}");
    // Model settings and what API callers may ask, each kept when only the other changes.
    let thinking = json!({"model_settings": {"reasoning_effort": "high", "temperature": 0.4, "fast": true}});
    let (s, set) = owner.call(&env, Method::PATCH, &path, Some(thinking)).await;
    assert_eq!((s, set["model_settings"]["reasoning_effort"].as_str()), (200, Some("high")), "{set}");
    let limits = json!({"client_limits": {"max_output_tokens": 4000, "max_reasoning_effort": "medium"}});
    let (s, limited) = owner.call(&env, Method::PATCH, &path, Some(limits)).await;
    assert_eq!((s, limited["client_limits"]["max_output_tokens"].as_u64()), (200, Some(4000)));
    assert_eq!(limited["model_settings"], json!({"reasoning_effort": "high", "temperature": 0.4, "fast": true}));
    let stored = env.store.agents().agent_by_name(acme, "helper").await.unwrap();
    assert_eq!(stored.model_settings.reasoning_effort, Some(hermes_core::ReasoningEffort::High));
    let extreme = json!({"model_settings": {"reasoning_effort": "extreme"}});
    let (s, odd) = owner.call(&env, Method::PATCH, &path, Some(extreme)).await;
    assert!(s == 400 && odd["error"]["message"].as_str().unwrap().contains("extreme"), "{odd}");
    let (s, cleared) = owner.call(&env, Method::PATCH, &path, Some(json!({"soul": ""}))).await;
    assert_eq!((s, cleared["soul"].clone()), (200, json!(null)), "an empty SOUL clears it");
    // Images: a vision model and the mode, set together; `null` takes the model away again.
    let eye = json!({"image_input_mode": "text", "vision_model": {"model": "eye-1", "base_url": "https://vision.example.com/v1"}});
    let (s, seeing) = owner.call(&env, Method::PATCH, &path, Some(eye)).await;
    assert_eq!(
        (s, seeing["image_input_mode"].as_str(), seeing["vision_model"]["model"].as_str()),
        (200, Some("text"), Some("eye-1"))
    );
    let (s, blind) = owner.call(&env, Method::PATCH, &path, Some(json!({"vision_model": null}))).await;
    assert_eq!(
        (s, blind["image_input_mode"].as_str(), blind["vision_model"].clone()),
        (200, Some("text"), json!(null))
    );
    let stored = env.store.agents().agent_by_name(acme, "helper").await.unwrap();
    assert_eq!((stored.image_input_mode, stored.shown.vision_model), (hermes_core::ImageInputMode::Text, None));
    for (body, param) in [
        (json!({"toolsets": ["teleport"]}), "toolsets"),
        (json!({"approval_mode": "yolo"}), "approval_mode"),
        (json!({"image_input_mode": "telepathy"}), "image_input_mode"),
        (json!({"workspace": "everyone"}), "workspace"),
        (json!({"sandbox": {"image": "gpu"}}), "sandbox"),
        (json!({"sandbox": {"cpus": 64.0}}), "sandbox"),
        (json!({"sandbox": {"memory_mb": 0}}), "sandbox"),
        (json!({"model_settings": {"temperature": 3.0}}), "model_settings"),
        (json!({"model_settings": {"thinking_budget": 100}}), "model_settings"),
        (json!({"client_limits": {"max_output_tokens": 0}}), "client_limits"),
        (json!({"vision_model": {"model": "m", "base_url": "http://10.0.0.8/v1"}}), "vision_model"),
        (json!({"fallbacks": [{"model": "m", "base_url": "http://169.254.169.254/v1"}]}), "fallbacks"),
    ] {
        let (s, refused) = owner.call(&env, Method::PATCH, &path, Some(body)).await;
        assert_eq!((s, refused["error"]["param"].as_str()), (400, Some(param)), "{refused}");
    }
    let (before, after): (serde_json::Value, serde_json::Value) = sqlx::query_as(
        "SELECT before, after FROM audit_log WHERE action = 'agent.updated' AND tenant_id = $1 ORDER BY id LIMIT 1",
    )
    .bind(acme.as_uuid())
    .fetch_one(&env.db)
    .await
    .unwrap();
    assert_eq!((before["model"].as_str(), after["model"].as_str()), (Some("scripted-model"), Some("gpt-4o-mini")));
}

#[tokio::test]
async fn openrouter_routing_and_side_task_models_are_set_checked_and_kept_apart() {
    let Acme { env, id: acme, owner, .. } = Acme::start(Roles::API_ONLY).await;
    let path = format!("/admin/v1/tenants/{acme}/agents/helper");
    let routing = json!({"order": ["anthropic", "google-vertex"], "sort": "throughput", "allow_fallbacks": false,
        "data_collection": "deny", "require_parameters": true});
    let judges = json!({"approval": [{"model": "judge-a", "base_url": "https://judge.example.com/v1"},
        {"model": "judge-b", "base_url": "https://judge.example.com/v1"}], "goal_judge": []});
    let (s, set) = owner.call(&env, Method::PATCH, &path, Some(json!({"provider_routing": routing}))).await;
    assert_eq!((s, &set["provider_routing"]), (200, &routing), "{set}");
    let (s, set) = owner.call(&env, Method::PATCH, &path, Some(json!({"auxiliary_models": judges}))).await;
    assert_eq!(s, 200, "{set}");
    assert_eq!(set["provider_routing"], routing, "routing is kept when only the side models change");
    assert_eq!(set["auxiliary_models"]["approval"][1]["model"], "judge-b");
    assert!(set["auxiliary_models"].get("goal_judge").is_none(), "a task given no models uses the auxiliary one");
    let stored = env.store.agents().agent_by_name(acme, "helper").await.unwrap();
    assert_eq!(stored.provider_routing.sort, Some(hermes_core::ProviderSort::Throughput));
    assert_eq!(stored.auxiliary_models[&hermes_core::AuxiliaryTask::Approval].len(), 2);
    let model = |m: &str, url: &str| json!({"model": m, "base_url": url});
    let public = "https://m.example.com/v1";
    let five = vec![model("m", public); 5];
    for (body, says) in [
        (json!({"provider_routing": {"sort": "cheapest"}}), "cheapest"),
        (json!({"provider_routing": {"only": ["openai"], "ignore": ["openai"]}}), "ignore"),
        (json!({"provider_routing": {"order": ["Not A Slug"]}}), "slug"),
        (json!({"provider_routing": {"providers": ["x"]}}), "unknown field `providers`"),
        (
            json!({"fallbacks": [{"model": "x", "base_url": "https://openrouter.ai/api/v1", "api_mode": "responses"}]}),
            "chat completions",
        ),
        (json!({"auxiliary_models": {"titles": [model("m", public)]}}), "titles"),
        (json!({"auxiliary_models": {"approval": [model("m", "http://10.0.0.8/v1")]}}), "not a public address"),
        (json!({"auxiliary_models": {"approval": five}}), "at most 4"),
        (json!({"auxiliary_models": {"vision": [model("deepseek-chat", public)]}}), "reads only text"),
        (
            json!({"vision_model": model("eye", public), "auxiliary_models": {"vision": [model("eye-2", public)]}}),
            "not both",
        ),
    ] {
        let (s, refused) = owner.call(&env, Method::PATCH, &path, Some(body.clone())).await;
        let message = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(s == 400 && message.contains(says), "{body} -> {refused}");
    }
    let (s, cleared) = owner.call(&env, Method::PATCH, &path, Some(json!({"provider_routing": {}}))).await;
    assert_eq!(
        (s, &cleared["provider_routing"], &cleared["auxiliary_models"]["approval"][0]["model"]),
        (200, &json!({}), &json!("judge-a"))
    );
}

/// `name` made over the admin API by acme's owner on `env`, with `toolsets` if given: its
/// toolsets as made.
async fn made(env: &TestEnv, owner: &Console, acme: TenantId, name: &str, toolsets: Option<Value>) -> Vec<String> {
    let mut body = json!({"name": name, "model": "gpt-4o", "provider_base_url": "https://api.openai.com/v1"});
    if let Some(toolsets) = toolsets {
        body["toolsets"] = toolsets;
    }
    let (s, agent) = owner.call(env, Method::POST, &format!("/admin/v1/tenants/{acme}/agents"), Some(body)).await;
    assert_eq!(s, 201, "{agent}");
    let stored = env.store.agents().agent_by_name(acme, name).await.unwrap();
    assert_eq!(serde_json::to_value(&stored.toolsets).unwrap(), agent["toolsets"], "answered as stored");
    stored.toolsets.clone()
}

/// The console's choices on `env`: each toolset's (configured, needs, default) by name.
async fn choices(env: &TestEnv, owner: &Console, acme: TenantId) -> BTreeMap<String, (bool, Value, bool)> {
    let (s, list) = owner.call(env, Method::GET, &format!("/admin/v1/tenants/{acme}/toolsets"), None).await;
    assert_eq!(s, 200, "{list}");
    let list = list["data"].as_array().unwrap();
    assert!(list.iter().all(|c| !c["description"].as_str().unwrap_or_default().is_empty()), "each says what it does");
    let entry = |c: &Value| (c["configured"].as_bool().unwrap(), c["needs"].clone(), c["default"].as_bool().unwrap());
    list.iter().map(|c| (c["name"].as_str().unwrap().to_owned(), entry(c))).collect()
}

#[tokio::test]
async fn a_new_agent_with_no_toolsets_named_gets_web_where_the_operator_configured_search() {
    // Never called: making an agent only reads the setting.
    let searxng = "http://127.0.0.1:9/searxng".to_owned();
    let env = TestEnv::start_with(Roles::API_ONLY, |c| c.web.searxng_url = Some(searxng)).await;
    let (acme, _, owner) = acme_and_owner(&env).await;

    let defaults = made(&env, &owner, acme, "scout", None).await;
    for toolset in ["terminal", "file", "memory", "web", "vision"] {
        assert!(defaults.contains(&toolset.to_owned()), "{toolset} in {defaults:?}");
    }
    for asked_for in ["mcp", "cronjob", "messaging", "image_gen", "browser"] {
        assert!(!defaults.contains(&asked_for.to_owned()), "{asked_for} not in {defaults:?}");
    }
    // What the caller names wins unchanged, none included.
    assert_eq!(made(&env, &owner, acme, "quiet", Some(json!([]))).await, Vec::<String>::new());
    assert_eq!(made(&env, &owner, acme, "shell", Some(json!(["terminal"]))).await, ["terminal"]);

    let offered = choices(&env, &owner, acme).await;
    assert_eq!(offered["web"], (true, json!("web_search"), true));
    assert_eq!(offered["image_gen"], (false, json!("image_gen"), false), "no image service here");
    assert_eq!(offered["mcp"], (true, Value::Null, false), "ready, but asked for");
}

#[tokio::test]
async fn a_new_agent_with_no_toolsets_named_gets_no_web_without_a_search_service() {
    let Acme { env, id: acme, owner, viewer, .. } = Acme::start(Roles::API_ONLY).await;
    let defaults = made(&env, &owner, acme, "scout", None).await;
    assert!(defaults.contains(&"terminal".to_owned()) && !defaults.contains(&"web".to_owned()), "{defaults:?}");
    // The console shows a member the choices too (the agent page), with what web lacks.
    let offered = choices(&env, &viewer, acme).await;
    assert_eq!(offered["web"], (false, json!("web_search"), false));
}
