//! Outbound event webhooks end to end: a tenant's endpoint is told, signed the Standard
//! Webhooks way, when a turn finishes, an approval is asked for and a cron run fails; a
//! receiver that fails is retried until it answers; one that refuses (4xx) is given up on; a
//! disabled endpoint's events wait for it; a given-up event is sent again from the admin plane;
//! private addresses are refused unless allowed.

use std::time::Duration;

use serde_json::{Value, json};

use hermes_http::signed::standard_signature;
use hermes_testkit::ScriptedReply;
use hermes_testkit::receiver::{Received, Receiver};

use crate::harness::{Roles, Team, TestEnv, ask, poll_until, wait_until};
use crate::openapi::call;
use crate::telegram::Pod;

async fn received(rx: &Receiver, n: usize) -> Vec<Received> {
    let got = poll_until(async || Some(rx.received()).filter(|got| got.len() >= n)).await;
    got.unwrap_or_else(|| panic!("the receiver got {} requests, expected {n}", rx.received().len()))
}

/// The endpoint's newest delivery once the sender has recorded how its last attempt ended: the
/// receiver has answered before the sender's COMMIT, so a read right after it may see it pending.
async fn newest_settled_delivery(env: &TestEnv, key: &str, hook: &str) -> Value {
    let path = format!("/v1/event-hooks/{hook}/deliveries");
    wait_until("the newest delivery to be settled", async || {
        let (_, deliveries) = call(env, key, "get", &path, None).await;
        Some(deliveries["data"][0].clone()).filter(|d| d["status"].is_string() && d["status"] != "pending")
    })
    .await
}

/// The event, after checking its signature with `secret` (`whsec_<base64 key>`).
fn verified(r: &Received, secret: &str) -> Value {
    use base64::Engine;
    let key = base64::engine::general_purpose::STANDARD.decode(secret.trim_start_matches("whsec_")).unwrap();
    let (id, ts) = (&r.headers["webhook-id"], r.headers["webhook-timestamp"].parse::<i64>().unwrap());
    assert_eq!(r.headers["webhook-signature"], standard_signature(&key, id, ts, &r.body), "signed with the key");
    assert!((chrono::Utc::now().timestamp() - ts).abs() < 60);
    let event: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(r.headers["x-hermes-event"], event["type"].as_str().unwrap());
    event
}

#[tokio::test]
async fn a_tenants_endpoint_is_told_signed_events_and_a_failing_one_is_retried() {
    let env = TestEnv::start_with(Roles::default(), |c| {
        c.gateway.events_allow_private_targets = true;
        c.gateway.events_retry_base_millis = 200;
    })
    .await;
    let (acme, _, key) = env.tenant("acme", "ops").await;
    let pod = Pod::start(&env).await;
    let rx = Receiver::start().await.unwrap();

    let (status, err) =
        call(&env, &key, "post", "/v1/event-hooks", Some(json!({"url": rx.url("/h"), "events": ["turn.done"]}))).await;
    assert_eq!((status, err["error"]["code"].as_str()), (400, Some("invalid_value")), "{err}");
    let body = json!({"url": rx.url("/hermes"), "events": ["turn.finished", "approval.requested", "cron.run.failed"]});
    let (status, hook) = call(&env, &key, "post", "/v1/event-hooks", Some(body)).await;
    assert_eq!(status, 201, "{hook}");
    let secret = hook["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"));
    let id = hook["id"].as_str().unwrap().to_owned();

    // A turn finishes: the first two attempts fail (503, 500), the third is taken.
    rx.answer(&[503, 500]);
    env.llm.push(ScriptedReply::text("Done."));
    let resp = env.chat(&key, json!({"messages": [{"role": "user", "content": "hi"}]})).await;
    assert_eq!(resp.status(), 200);
    let got = received(&rx, 3).await;
    assert_eq!(got[0].headers["webhook-id"], got[2].headers["webhook-id"], "a retry is the same event");
    let event = verified(&got[2], &secret);
    assert_eq!(event["type"], "turn.finished");
    assert_eq!(
        (event["data"]["status"].as_str(), event["data"]["output"].as_str()),
        (Some("completed"), Some("Done."))
    );
    let first = &newest_settled_delivery(&env, &key, &id).await;
    assert_eq!((first["status"].as_str(), first["attempts"].as_i64()), (Some("delivered"), Some(3)), "{first}");

    // From now on only approvals and failed cron runs: nothing else reaches the endpoint.
    let events = json!({"events": ["approval.requested", "cron.run.failed"]});
    assert_eq!(call(&env, &key, "patch", &format!("/v1/event-hooks/{id}"), Some(events)).await.0, 200);
    // An approval is asked for.
    env.llm.push(ScriptedReply::terminal("rm -rf /workspace/build"));
    let run = call(&env, &key, "post", "/v1/runs", Some(json!({"input": "clean the build"}))).await.1;
    assert!(run["run_id"].is_string(), "{run}");
    let got = received(&rx, 4).await;
    let event = verified(&got[3], &secret);
    assert_eq!(event["type"], "approval.requested");
    assert!(event["data"]["prompt"].to_string().contains("rm -rf"), "{event}");

    // A cron run fails: told. A 4xx answer is not retried.
    rx.answer(&[410]);
    for _ in 0..8 {
        env.llm.push(ScriptedReply::error(500));
    }
    let job = json!({"name": "nightly", "prompt": "report", "schedule": "every 1d"});
    assert_eq!(call(&env, &key, "post", "/v1/cron/jobs", Some(job)).await.0, 201);
    call(&env, &key, "post", "/v1/cron/jobs/nightly/run", None).await;
    let got = received(&rx, 5).await;
    let event = verified(&got[4], &secret);
    assert_eq!(
        (event["type"].as_str(), event["data"]["job_name"].as_str()),
        (Some("cron.run.failed"), Some("nightly"))
    );
    // The 410 is settled (the endpoint's last_status is written with it), then a while with no
    // retry: the sleep is the behaviour under test, a retry would come within 200 ms.
    let given_up = newest_settled_delivery(&env, &key, &id).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(rx.received().len(), 5, "a 410 is given up on");
    assert_eq!(given_up["status"], "failed", "{given_up}");
    let (_, shown) = call(&env, &key, "get", &format!("/v1/event-hooks/{id}"), None).await;
    assert_eq!((shown["last_status"].as_i64(), shown.get("secret")), (Some(410), None), "{shown}");
    // The team fixes its receiver and sends the given-up event again from the admin plane: the
    // same event under the same id, so a receiver that drops repeats would know it.
    let (_, owner) = crate::admin::member(&env, acme, "owner@acme.test", hermes_core::MemberRole::Owner).await;
    let (_, viewer) = crate::admin::member(&env, acme, "viewer@acme.test", hermes_core::MemberRole::Member).await;
    let delivery = given_up["id"].as_str().unwrap();
    let resend = format!("/admin/v1/tenants/{acme}/hooks/{id}/deliveries/{delivery}/resend");
    assert_eq!(viewer.call(&env, reqwest::Method::POST, &resend, None).await.0, 403, "a member does not resend");
    assert_eq!(owner.call(&env, reqwest::Method::POST, &resend, None).await.0, 202);
    let got = received(&rx, 6).await;
    assert_eq!(got[5].headers["webhook-id"], got[4].headers["webhook-id"], "resent under the same id");
    assert_eq!(verified(&got[5], &secret)["type"], "cron.run.failed");
    let resent = newest_settled_delivery(&env, &key, &id).await;
    assert_eq!((resent["status"].as_str(), resent["attempts"].as_i64()), (Some("delivered"), Some(1)), "{resent}");
    let elsewhere = format!("/admin/v1/tenants/{acme}/hooks/{}/deliveries/{delivery}/resend", uuid::Uuid::now_v7());
    assert_eq!(owner.call(&env, reqwest::Method::POST, &elsewhere, None).await.0, 404, "under another endpoint");
    // Disabled: events wait; enabled again: they go.
    call(&env, &key, "patch", &format!("/v1/event-hooks/{id}"), Some(json!({"enabled": false}))).await;
    assert_eq!(call(&env, &key, "post", &format!("/v1/event-hooks/{id}/ping"), None).await.0, 202);
    // Nothing may arrive for a while: the sleep is the behaviour under test.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(rx.received().len(), 6, "nothing goes to a disabled endpoint");
    call(&env, &key, "patch", &format!("/v1/event-hooks/{id}"), Some(json!({"enabled": true}))).await;
    let got = received(&rx, 7).await;
    assert_eq!(verified(&got[6], &secret)["type"], "ping");
    pod.stop_with(env).await;
}

#[tokio::test]
async fn endpoints_on_private_addresses_are_refused_unless_allowed() {
    let Team { env, key, .. } = Team::acme("ops").await;
    for url in
        ["http://127.0.0.1:8080/x", "http://169.254.169.254/latest/meta-data", "http://[::1]/x", "ftp://example.com"]
    {
        let (status, err) = call(&env, &key, "post", "/v1/event-hooks", Some(json!({"url": url}))).await;
        assert_eq!((status, err["error"]["code"].as_str()), (400, Some("invalid_url")), "{url}: {err}");
    }
    let (status, _) =
        call(&env, &key, "post", "/v1/event-hooks", Some(json!({"url": "https://hooks.example.com/x"}))).await;
    assert_eq!(status, 201);
    env.stop().await;
}

/// The first event of `kind` the receiver got, checked, waiting for it.
async fn event_of(rx: &Receiver, secret: &str, kind: &str) -> Value {
    let found =
        poll_until(async || rx.received().iter().map(|r| verified(r, secret)).find(|e| e["type"] == kind)).await;
    found.unwrap_or_else(|| panic!("no {kind} event among {} received", rx.received().len()))
}

#[tokio::test]
async fn the_endpoint_hears_of_tools_sessions_approvals_children_and_failed_turns() {
    let env = TestEnv::start_with(Roles::default(), |c| c.gateway.events_allow_private_targets = true).await;
    let (acme, agent, key) = env.tenant("acme", "ops").await;
    let pod = Pod::start(&env).await;
    let rx = Receiver::start().await.unwrap();
    let events =
        ["tool.finished", "session.started", "session.ended", "approval.answered", "turn.failed", "child.finished"];
    let (status, hook) =
        call(&env, &key, "post", "/v1/event-hooks", Some(json!({"url": rx.url("/h"), "events": events}))).await;
    assert_eq!(status, 201, "{hook}");
    let secret = hook["secret"].as_str().unwrap().to_owned();

    // A conversation starts and runs a command (the scripted model runs `$ ...` lines).
    let resp = env.chat(&key, ask("ops", "$ echo events-ok")).await;
    assert_eq!(resp.status(), 200);
    let started = event_of(&rx, &secret, "session.started").await["data"].clone();
    assert_eq!((started["source"].as_str(), started["agent_id"].as_str()), (Some("api"), Some(&*agent.id.to_string())));
    let tool = event_of(&rx, &secret, "tool.finished").await["data"].clone();
    assert_eq!(tool["tool"], "terminal");
    assert!(tool["output"].as_str().unwrap().contains("events-ok"), "{tool}");
    assert_eq!(tool["session_id"], started["session_id"]);
    let session = started["session_id"].as_str().unwrap().to_owned();

    // An approval is asked for and refused.
    env.llm.push(ScriptedReply::terminal("rm -rf /workspace/build"));
    let resp = env.chat(&key, ask("ops", "clean the build")).await;
    let interaction = resp.headers()["x-hermes-interaction-id"].to_str().unwrap().to_owned();
    assert_eq!(env.answer(&key, &interaction, json!({"choice": "deny"})).await.status(), 200);
    let answered = event_of(&rx, &secret, "approval.answered").await["data"].clone();
    assert_eq!(
        (answered["interaction_id"].as_str(), answered["status"].as_str(), answered["choice"].as_str()),
        (Some(&*interaction), Some("answered"), Some("deny"))
    );

    // A background child of that conversation ends.
    let parent = hermes_core::SessionId::from_uuid(session.parse().unwrap());
    let child = hermes_store::delegations::NewChild {
        goal: "count files".into(),
        input: hermes_core::ChatMessage::user("count files"),
        role: hermes_core::ChildRole::Leaf,
    };
    let delegation = hermes_store::delegations::NewDelegation {
        agent: agent.id,
        parent_session: parent,
        parent_turn: hermes_core::TurnId::new(),
        call_id: "call_1",
        reply_to: None,
        max_iterations: 5,
        tools: vec![],
        toolsets: vec![],
        children: vec![child],
        cap: 8,
    };
    env.store.turns().start_delegation(acme, &delegation).await.unwrap();
    let finished = event_of(&rx, &secret, "child.finished").await["data"].clone();
    assert_eq!((finished["parent_session_id"].as_str(), finished["position"].as_i64()), (Some(&*session), Some(1)));
    assert_eq!(finished["goal"], "count files");

    // A conversation made through the API, then deleted: it ended.
    let (status, made) = call(&env, &key, "post", "/api/sessions", Some(json!({"title": "scratch"}))).await;
    assert_eq!(status, 201, "{made}");
    let scratch = made["id"].as_str().unwrap();
    assert_eq!(call(&env, &key, "delete", &format!("/api/sessions/{scratch}"), None).await.0, 200);
    let ended = event_of(&rx, &secret, "session.ended").await["data"].clone();
    assert_eq!((ended["session_id"].as_str(), ended["reason"].as_str()), (Some(scratch), Some("deleted")));
    assert_eq!(ended["title"], "scratch");

    // A turn whose model keeps failing.
    for _ in 0..8 {
        env.llm.push(ScriptedReply::error(500));
    }
    env.chat(&key, ask("ops", "hello?")).await;
    let failed = event_of(&rx, &secret, "turn.failed").await["data"].clone();
    assert_eq!(failed["error_code"], "provider_server_error", "{failed}");
    pod.stop_with(env).await;
}
