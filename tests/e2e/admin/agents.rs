//! Editing an agent from the console: model, SOUL, toolsets, fallbacks, internet access,
//! approvals and how images are seen change for new sessions; bad values are refused with the field named; members
//! change nothing; the audit log holds the agent before and after.

use reqwest::Method;
use serde_json::json;

use super::Acme;
use crate::harness::Roles;

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
