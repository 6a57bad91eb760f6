//! `/openapi.json` describes the API that is really served: every documented route exists,
//! and real responses of every endpoint (successes and errors) validate against the
//! document's schemas.

use serde_json::{Value, json};

use hermes_testkit::ScriptedReply;

use crate::harness::TestEnv;

pub(crate) struct Spec {
    pub(crate) doc: Value,
}

impl Spec {
    /// Checks `body`, the answer to `method path` with `status`, against the document.
    pub(crate) fn check(&self, method: &str, path: &str, status: u16, body: &Value) {
        let schema = self
            .doc
            .pointer(&format!(
                "/paths/{}/{method}/responses/{status}/content/application~1json/schema",
                path.replace('~', "~0").replace('/', "~1")
            ))
            .unwrap_or_else(|| panic!("{method} {path} documents no JSON answer for {status}"));
        let root = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "components": self.doc["components"],
            "allOf": [schema],
        });
        let validator = jsonschema::validator_for(&root).unwrap();
        let errors: Vec<String> =
            validator.iter_errors(body).map(|e| format!("{} at {}", e, e.instance_path())).collect();
        assert!(errors.is_empty(), "{method} {path} {status} does not match the document: {errors:?}\n{body}");
    }
}

/// Calls the API as `key`; the status and the JSON body (or the text, if not JSON).
pub(crate) async fn call(env: &TestEnv, key: &str, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let url = format!("{}{path}", env.api_url);
    let req = match method {
        "get" => env.http.get(url),
        "post" => env.http.post(url),
        "patch" => env.http.patch(url),
        "put" => env.http.put(url),
        "delete" => env.http.delete(url),
        other => panic!("{other}"),
    };
    let req = req.bearer_auth(key);
    let req = match body {
        Some(b) => req.json(&b),
        None => req,
    };
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

#[tokio::test]
async fn the_openapi_document_matches_the_routes_and_the_responses() {
    let tg = hermes_testkit::telegram::TelegramEmulator::start().await.unwrap();
    let base = tg.base_url();
    let env = TestEnv::start_with(crate::harness::Roles::default(), |c| c.platforms.telegram_api_base = base).await;
    let (_, _, key) = env.tenant("acme", "helper").await;
    let doc: Value = env.http.get(format!("{}/openapi.json", env.api_url)).send().await.unwrap().json().await.unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"), "{}", doc["openapi"]);
    let spec = Spec { doc: doc.clone() };

    // Every documented route is served (an unknown id is fine; an unknown route is not).
    let paths = doc["paths"].as_object().unwrap();
    let operations: usize = paths.values().map(|m| m.as_object().unwrap().len()).sum();
    assert_eq!(
        operations,
        65 + 85,
        "every endpoint is documented (the tenant API with upstream's /api/jobs, and the admin API)"
    );
    for (path, methods) in paths {
        let concrete = path.replace("{id}", "00000000-0000-0000-0000-000000000000");
        for method in methods.as_object().unwrap().keys() {
            let (status, body) = call(&env, &key, method, &concrete, Some(json!({}))).await;
            assert_ne!(status, 405, "{method} {path} is documented but not routed");
            assert_ne!(body["error"]["message"], "no such endpoint", "{method} {path} is documented but not routed");
        }
    }

    let check = |method: &'static str, path: &'static str, status: u16, body: &Value| {
        spec.check(method, path, status, body);
    };
    // A call to the path `template` names (with `id` for its `{id}`), checked against the
    // document.
    let checked = async |method: &'static str, template: &'static str, id: &str, body: Option<Value>| {
        let (status, answer) = call(&env, &key, method, &template.replace("{id}", id), body).await;
        spec.check(method, template, status, &answer);
        (status, answer)
    };
    // The OpenAI-compatible core.
    env.llm.push(ScriptedReply::text("Hi there."));
    let (s, chat) = call(
        &env,
        &key,
        "post",
        "/v1/chat/completions",
        Some(json!({"messages": [{"role": "user", "content": "hi"}]})),
    )
    .await;
    check("post", "/v1/chat/completions", s, &chat);
    let (s, _) = checked("post", "/v1/chat/completions", "", Some(json!({"messages": []}))).await;
    assert_eq!(s, 400);
    let (s, err) = call(&env, "wrong-key", "get", "/v1/models", None).await;
    assert_eq!(s, 401);
    check("get", "/v1/models", s, &err);
    checked("get", "/v1/models", "", None).await;

    env.llm.push(ScriptedReply::text("Hello."));
    let (_, response) = checked("post", "/v1/responses", "", Some(json!({"input": "hello"}))).await;
    let id = response["id"].as_str().unwrap();
    checked("get", "/v1/responses/{id}", id, None).await;
    checked("delete", "/v1/responses/{id}", id, None).await;
    let (s, _) = checked("get", "/v1/responses/{id}", id, None).await;
    assert_eq!(s, 404);

    // Runs.
    env.llm.push(ScriptedReply::text("Done."));
    let (s, started) = checked("post", "/v1/runs", "", Some(json!({"input": "go"}))).await;
    assert_eq!(s, 202);
    let run = started["run_id"].as_str().unwrap();
    checked("get", "/v1/runs/{id}", run, None).await;
    let (s, _) = checked("post", "/v1/runs/{id}/approval", run, Some(json!({"choice": "once"}))).await;
    assert_eq!(s, 409);

    // Discovery, usage, sessions.
    for path in ["/v1/capabilities", "/v1/toolsets", "/v1/skills", "/v1/usage", "/api/sessions"] {
        let (s, body) = call(&env, &key, "get", path, None).await;
        assert_eq!(s, 200, "{path}: {body}");
        check("get", path, s, &body);
    }
    let session = chat_session(&env, &key).await;
    checked("get", "/api/sessions/{id}", &session, None).await;
    checked("patch", "/api/sessions/{id}", &session, Some(json!({"title": "Greeting"}))).await;
    checked("get", "/api/sessions/{id}/messages", &session, None).await;
    // A goal: none yet; an empty one is refused (a set goal runs turns: tests/e2e/goals.rs).
    for method in ["get", "delete"] {
        let (s, _) = checked(method, "/api/sessions/{id}/goal", &session, None).await;
        assert_eq!(s, 404, "{method}");
    }
    let (s, _) = checked("put", "/api/sessions/{id}/goal", &session, Some(json!({"goal": ""}))).await;
    assert_eq!(s, 400);
    let (s, _) = checked("patch", "/api/sessions/{id}/goal", &session, Some(json!({"state": "paused"}))).await;
    assert_eq!(s, 404);
    let (s, fork) = checked("post", "/api/sessions/{id}/fork", &session, Some(json!({}))).await;
    assert_eq!(s, 201);
    checked("get", "/api/sessions/{id}/export", &session, None).await;
    let (s, deleted) =
        call(&env, &key, "delete", &format!("/api/sessions/{}", fork["id"].as_str().unwrap()), None).await;
    check("delete", "/api/sessions/{id}", s, &deleted);

    // Channels.
    tg.add_bot("777:spec", "SpecBot");
    let bind = json!({"agent": "helper", "platform": "telegram", "token": "777:spec"});
    let (s, channel) = call(&env, &key, "post", "/v1/channels", Some(bind)).await;
    assert_eq!(s, 201, "{channel}");
    check("post", "/v1/channels", s, &channel);
    let id = channel["id"].as_str().unwrap();
    checked("get", "/v1/channels", "", None).await;
    checked("get", "/v1/channels/{id}", id, None).await;
    checked("patch", "/v1/channels/{id}", id, Some(json!({"streaming": false}))).await;
    checked("get", "/v1/channels/{id}/pairings", id, None).await;
    let approve = format!("/v1/channels/{id}/pairings/approve");
    let (s, wrong) = call(&env, &key, "post", &approve, Some(json!({"code": "ABCDEFGH"}))).await;
    assert_eq!(s, 400);
    check("post", "/v1/channels/{id}/pairings/approve", s, &wrong);
    checked("delete", "/v1/channels/{id}", id, None).await;

    // Cron.
    let job = json!({"prompt": "Summarise the news.", "schedule": "every 2h", "name": "news"});
    let (s, created) = call(&env, &key, "post", "/v1/cron/jobs", Some(job)).await;
    assert_eq!(s, 201, "{created}");
    check("post", "/v1/cron/jobs", s, &created);
    let (s, _) = checked("post", "/v1/cron/jobs", "", Some(json!({"prompt": "x", "schedule": "soon"}))).await;
    assert_eq!(s, 400);
    let id = created["id"].as_str().unwrap();
    checked("get", "/v1/cron/jobs", "", None).await;
    checked("get", "/v1/cron/jobs/{id}", id, None).await;
    checked("post", "/v1/cron/jobs/{id}/pause", id, Some(json!({}))).await;
    checked("post", "/v1/cron/jobs/{id}/resume", id, None).await;
    checked("get", "/v1/cron/jobs/{id}/runs", id, None).await;
    checked("delete", "/v1/cron/jobs/{id}", id, None).await;
    env.stop().await;
}

/// The session of the test's first chat turn.
async fn chat_session(env: &TestEnv, key: &str) -> String {
    let (_, list) = call(env, key, "get", "/api/sessions", None).await;
    list["data"].as_array().unwrap().last().unwrap()["id"].as_str().unwrap().to_owned()
}
