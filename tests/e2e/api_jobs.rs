//! Upstream's `/api/jobs`, as upstream's clients use it: the same jobs as `/v1/cron/jobs` in
//! upstream's envelopes and field names, upstream's checks and error bodies.

use serde_json::{Value, json};

use crate::harness::{Roles, TestEnv};
use crate::openapi::call;

#[tokio::test]
async fn upstream_clients_manage_cron_through_api_jobs_unchanged() {
    let env = TestEnv::start_roles(Roles::API_ONLY).await;
    let [key, stranger] = env.two_tenants(["acme", "other"], "helper").await;

    let job = json!({"name": "Morning brief", "schedule": "every 1d", "prompt": "Summarise the news.", "repeat": 3});
    let (s, made) = call(&env, &key, "post", "/api/jobs", Some(job)).await;
    assert_eq!(s, 200, "{made}");
    let made = &made["job"];
    let id = made["id"].as_str().unwrap().to_owned();
    assert_eq!(made["name"], "Morning brief");
    assert_eq!(made["enabled"], true);
    assert_eq!(made["deliver"], "local", "upstream's default delivery");
    assert_eq!(made["repeat"], json!({"times": 3, "completed": 0}));
    assert!(made["schedule"]["display"].as_str().is_some_and(|d| !d.is_empty()), "{made}");
    assert!(made["next_run_at"].is_string());

    // The same job through the native API.
    let (s, native) = call(&env, &key, "get", &format!("/v1/cron/jobs/{id}"), None).await;
    assert_eq!((s, native["name"].as_str()), (200, Some("Morning brief")));

    // Upstream's checks, upstream's words.
    for (body, says) in [
        (json!({"schedule": "every 1d", "prompt": "x"}), "Name is required"),
        (json!({"name": "x", "prompt": "x"}), "Schedule is required"),
        (json!({"name": "x", "schedule": "every 1d", "prompt": "x", "repeat": 0}), "Repeat must be a positive integer"),
        (json!({"name": "x".repeat(201), "schedule": "every 1d", "prompt": "x"}), "Name must be"),
    ] {
        let (s, refused) = call(&env, &key, "post", "/api/jobs", Some(body)).await;
        assert_eq!(s, 400);
        assert!(refused["error"].as_str().is_some_and(|e| e.contains(says)), "{refused}");
    }
    let (s, refused) =
        call(&env, &key, "post", "/api/jobs", Some(json!({"name": "x", "schedule": "whenever", "prompt": "x"}))).await;
    assert_eq!(s, 400, "{refused}");
    assert!(refused["error"].is_string(), "errors are plain strings, as upstream's: {refused}");

    // PATCH takes upstream's fields; `enabled: false` pauses, and the list hides it.
    let path = format!("/api/jobs/{id}");
    let (s, changed) =
        call(&env, &key, "patch", &path, Some(json!({"name": "Brief", "schedule": "every 2h", "enabled": false})))
            .await;
    assert_eq!(s, 200, "{changed}");
    assert_eq!((changed["job"]["name"].as_str(), changed["job"]["enabled"].as_bool()), (Some("Brief"), Some(false)));
    assert!(changed["job"]["schedule"]["display"].as_str().unwrap().contains('2'), "{changed}");
    let (_, listed) = call(&env, &key, "get", "/api/jobs", None).await;
    assert_eq!(listed["jobs"], json!([]), "paused jobs are hidden by default");
    let (_, all) = call(&env, &key, "get", "/api/jobs?include_disabled=true", None).await;
    assert_eq!(all["jobs"].as_array().unwrap().len(), 1);
    let (s, nothing) = call(&env, &key, "patch", &path, Some(json!({}))).await;
    assert_eq!((s, nothing["error"].as_str()), (400, Some("No valid fields to update")));
    // A field upstream's update does not take is refused by name, never dropped.
    let (s, refused) = call(&env, &key, "patch", &path, Some(json!({"name": "Brief", "workdir": "/tmp"}))).await;
    assert_eq!(s, 400, "{refused}");
    assert!(refused["error"].as_str().is_some_and(|e| e.contains("workdir")), "{refused}");

    for action in ["resume", "pause", "resume", "run"] {
        let (s, done) = call(&env, &key, "post", &format!("{path}/{action}"), None).await;
        assert_eq!(s, 200, "{action}: {done}");
        let job: &Value = &done["job"];
        assert_eq!(job["enabled"], action != "pause", "{action}");
    }

    // Another tenant's job does not exist for them.
    for (method, p) in [("get", path.clone()), ("delete", path.clone()), ("post", format!("{path}/run"))] {
        let (s, missing) = call(&env, &stranger, method, &p, None).await;
        assert_eq!((s, missing["error"].as_str()), (404, Some("Job not found")), "{method} {p}");
    }
    let (s, gone) = call(&env, &key, "delete", &path, None).await;
    assert_eq!((s, gone), (200, json!({"ok": true})));
    let (s, _) = call(&env, &key, "get", &path, None).await;
    assert_eq!(s, 404);
}
