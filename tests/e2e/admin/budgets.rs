//! Spending caps set from the admin plane stop turns at once and lift as they are removed; and
//! sessions are found across the whole tenant by agent, source and what was said in them.

use hermes_core::MemberRole;
use hermes_testkit::ScriptedReply;
use reqwest::Method;
use serde_json::json;

use super::{Acme, member};
use crate::harness::{Roles, TestEnv, ask};

#[tokio::test]
async fn a_cap_set_in_the_admin_plane_stops_the_next_turn_and_removing_it_lets_turns_go_on() {
    let Acme { env, id: acme, key, owner, viewer, .. } = Acme::start(Roles { worker: true, scheduler: false }).await;
    let t = |rest: &str| format!("/admin/v1/tenants/{acme}{rest}");

    let cap = json!({"hard_usd": 0.0, "soft_usd": 0.0});
    assert_eq!(viewer.call(&env, Method::PUT, &t("/budgets/helper/day"), Some(cap.clone())).await.0, 403);
    let (s, err) = owner.call(&env, Method::PUT, &t("/budgets/helper/week"), Some(cap.clone())).await;
    assert_eq!(s, 404, "no such period: {err}");
    let (s, err) = owner.call(&env, Method::PUT, &t("/budgets/helper/day"), Some(json!({}))).await;
    assert_eq!((s, err["error"]["code"].as_str()), (400, Some("invalid_value")), "{err}");
    let (s, err) = owner.call(&env, Method::PUT, &t("/budgets/helper/day"), Some(json!({"hard_usd": -1}))).await;
    assert_eq!(s, 400, "{err}");
    // The agent (by name) may spend nothing today: its next turn is refused before any call.
    assert_eq!(owner.call(&env, Method::PUT, &t("/budgets/helper/day"), Some(cap)).await.0, 204);
    let (s, list) = viewer.call(&env, Method::GET, &t("/budgets"), None).await;
    assert_eq!(s, 200, "a member sees the caps");
    let only = &list["data"][0];
    assert_eq!((only["period"].as_str(), only["hard_reached"].as_bool()), (Some("day"), Some(true)), "{list}");
    assert!(only["agent_id"].is_string(), "{list}");
    let resp = env.chat(&key, ask("helper", "hello")).await;
    assert_eq!(resp.status(), 402);
    assert!(env.llm.requests().is_empty(), "no model call was made");

    // Removed: turns go on. Removing it twice finds nothing.
    assert_eq!(owner.call(&env, Method::DELETE, &t("/budgets/helper/day"), None).await.0, 204);
    assert_eq!(owner.call(&env, Method::DELETE, &t("/budgets/helper/day"), None).await.0, 404);
    env.llm.push(ScriptedReply::text("Hello again."));
    assert_eq!(env.chat(&key, ask("helper", "hello")).await.status(), 200);
    // A tenant-wide monthly cap is listed first, with what was spent.
    let (s, _) = owner.call(&env, Method::PUT, &t("/budgets/tenant/month"), Some(json!({"soft_usd": 25.0}))).await;
    assert_eq!(s, 204);
    let (_, list) = owner.call(&env, Method::GET, &t("/budgets"), None).await;
    assert_eq!((list["data"][0]["agent_id"].is_null(), list["data"][0]["soft_usd"].as_f64()), (true, Some(25.0)));
    assert_eq!(list["data"][0]["hard_reached"], false);

    // Each change is in the audit log, with what it was before.
    let (_, audit) = owner.call(&env, Method::GET, &t("/audit?action=budget.set"), None).await;
    assert_eq!(audit["data"].as_array().map(Vec::len), Some(2), "{audit}");
    let (_, audit) = owner.call(&env, Method::GET, &t("/audit?action=budget.removed"), None).await;
    assert_eq!(audit["data"].as_array().map(Vec::len), Some(1), "{audit}");
    env.stop().await;
}

#[tokio::test]
async fn sessions_are_found_across_the_tenant_by_agent_source_and_words() {
    let env = TestEnv::start_with(Roles { worker: true, scheduler: false }, |_| {}).await;
    let (acme, _, key) = env.tenant("acme", "helper").await;
    env.agent(acme, "billing").await;
    let (_, viewer) = member(&env, acme, "viewer@acme.test", MemberRole::Member).await;
    let t = |rest: &str| format!("/admin/v1/tenants/{acme}{rest}");

    for (model, text, reply) in [
        ("helper", "Our invoice for the zeppelin order is wrong", "I will check the zeppelin invoice."),
        ("billing", "Please refund the zeppelin deposit", "The refund is on its way."),
        ("helper", "What is the weather in Lisbon?", "Sunny."),
    ] {
        env.llm.push(ScriptedReply::text(reply));
        assert_eq!(env.chat(&key, ask(model, text)).await.status(), 200);
    }

    let (s, all) = viewer.call(&env, Method::GET, &t("/sessions"), None).await;
    assert_eq!((s, all["data"].as_array().map(Vec::len)), (200, Some(3)), "{all}");
    let (_, found) = viewer.call(&env, Method::GET, &t("/sessions?q=zeppelin"), None).await;
    let found = found["data"].as_array().unwrap().clone();
    assert_eq!(found.len(), 2, "both agents' sessions that mention it: {found:?}");
    assert!(found.iter().all(|s| s["snippet"].as_str().is_some_and(|x| x.to_lowercase().contains("zeppelin"))));
    let (_, narrowed) = viewer.call(&env, Method::GET, &t("/sessions?q=zeppelin&agent=billing"), None).await;
    let narrowed = narrowed["data"].as_array().unwrap();
    assert_eq!(narrowed.len(), 1, "{narrowed:?}");
    assert!(narrowed[0]["snippet"].as_str().unwrap().contains("refund"), "{narrowed:?}");
    let (_, phrase) = viewer.call(&env, Method::GET, &t("/sessions?q=%22zeppelin%20invoice%22"), None).await;
    assert_eq!(phrase["data"].as_array().map(Vec::len), Some(1), "a phrase: {phrase}");
    let (_, by_source) = viewer.call(&env, Method::GET, &t("/sessions?source=telegram"), None).await;
    assert_eq!(by_source["data"].as_array().map(Vec::len), Some(0), "no chat sessions yet");
    let (_, by_source) = viewer.call(&env, Method::GET, &t("/sessions?source=api&agent=helper"), None).await;
    assert_eq!(by_source["data"].as_array().map(Vec::len), Some(2));
    let (s, err) = viewer.call(&env, Method::GET, &t("/sessions?q=%22%22"), None).await;
    assert_eq!((s, err["error"]["param"].as_str()), (400, Some("q")), "{err}");
    assert_eq!(viewer.call(&env, Method::GET, &t("/sessions?agent=nobody"), None).await.0, 404);

    // Another tenant's search finds nothing of acme's.
    let (globex, _, other_key) = env.tenant("globex", "helper").await;
    env.llm.push(ScriptedReply::text("Noted."));
    assert_eq!(env.chat(&other_key, ask("helper", "zeppelin here too")).await.status(), 200);
    let (_, globex_owner) = member(&env, globex, "owner@globex.test", MemberRole::Owner).await;
    let path = format!("/admin/v1/tenants/{globex}/sessions?q=zeppelin");
    let (_, theirs) = globex_owner.call(&env, Method::GET, &path, None).await;
    assert_eq!(theirs["data"].as_array().map(Vec::len), Some(1), "{theirs}");
    env.stop().await;
}
