//! Operating `hermesd`: layered config, health/readiness/metrics, JSON logs with request ids.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::harness::{Roles, TestEnv, free_port, poll_until};

#[test]
fn dump_config_shows_defaults_overridden_by_file_then_env() {
    let dir = std::env::temp_dir().join(format!("hermes-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("hermes.toml");
    std::fs::write(&file, "[http]\nbind = \"0.0.0.0:9000\"\n[redis]\nurl = \"redis://file:6379\"\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hermesd"))
        .args(["--config", file.to_str().unwrap(), "--dump-config"])
        .env("HERMES__REDIS__URL", "redis://env:6379")
        .env("HERMES__SECRETS__MASTER_KEY", "c2VjcmV0LWtleQ==")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let cfg: toml::Value = toml::from_str(&String::from_utf8(out.stdout).unwrap()).unwrap();
    assert_eq!(cfg["http"]["bind"].as_str(), Some("0.0.0.0:9000"));
    assert_eq!(cfg["redis"]["url"].as_str(), Some("redis://env:6379"));
    assert_eq!(cfg["database"]["url"].as_str(), Some("postgres://postgres@127.0.0.1:5432/hermes"));
    // A connection URL's password is masked, even the default's.
    assert_eq!(cfg["rabbitmq"]["url"].as_str(), Some("amqp://guest:<redacted>@127.0.0.1:5672/%2f"));
    assert_eq!(cfg["secrets"]["master_key"].as_str(), Some("<redacted>"));

    let bad = Command::new(env!("CARGO_BIN_EXE_hermesd"))
        .arg("--dump-config")
        .env("HERMES__WORKER__LEASE_SECONDS", "soon")
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).to_lowercase().contains("lease_seconds"));
}

#[tokio::test]
async fn hermesd_is_ready_only_with_its_dependencies_and_logs_json_with_request_ids() {
    let env = TestEnv::start_roles(Roles::API_ONLY).await;
    let (api_port, ops_port) = (free_port(), free_port());
    let c = &env.config;
    let mut child = Command::new(env!("CARGO_BIN_EXE_hermesd"))
        .args(["api", "scheduler"])
        .env("HERMES__DATABASE__URL", &c.database.url)
        .env("HERMES__REDIS__KEY_PREFIX", &c.redis.key_prefix)
        .env("HERMES__RABBITMQ__PREFIX", &c.rabbitmq.prefix)
        .env("HERMES__RABBITMQ__QUEUE_EXPIRES_SECONDS", c.rabbitmq.queue_expires_seconds.to_string())
        .env("HERMES__HTTP__BIND", format!("127.0.0.1:{api_port}"))
        .env("HERMES__OPS__BIND", format!("127.0.0.1:{ops_port}"))
        .env("HERMES__TELEMETRY__LOG_FORMAT", "json")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let lines = std::thread::spawn(move || BufReader::new(stdout).lines().map_while(Result::ok).collect::<Vec<_>>());

    let ready = poll_until(async || {
        let resp = env.http.get(format!("http://127.0.0.1:{ops_port}/readyz")).send().await.ok()?;
        Some((resp.status(), resp.json::<Value>().await.unwrap()))
    })
    .await;
    let (status, body) = ready.expect("ops listener answers");
    assert_eq!(status, 200, "{body}");
    for dep in ["postgres", "schema", "redis", "rabbitmq"] {
        assert_eq!(body["checks"][dep], "ok", "{body}");
    }
    let health = env.http.get(format!("http://127.0.0.1:{api_port}/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let resp = env
        .http
        .get(format!("http://127.0.0.1:{api_port}/v1/models"))
        .header("x-request-id", "req-abc-123")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    assert_eq!(resp.headers()["x-request-id"], "req-abc-123");
    // The scheduler's first pass records its counters; it may still be running.
    let scrape = async || {
        env.http.get(format!("http://127.0.0.1:{ops_port}/metrics")).send().await.unwrap().text().await.unwrap()
    };
    poll_until(async || scrape().await.contains("hermes_reaper_republished_total").then_some(())).await;
    let metrics = scrape().await;
    assert!(metrics.contains("hermes_reaper_republished_total"), "{metrics}");
    // The backlog gauges the worker autoscaler reads (the chart's KEDA trigger and HPA):
    // one series each, with no tenant, session or user in a label.
    poll_until(async || scrape().await.contains("hermes_turns_queued ").then_some(())).await;
    let metrics = scrape().await;
    for gauge in [
        "hermes_turns_queued ",
        "hermes_turns_queued_oldest_seconds ",
        "hermes_turns_running ",
        "hermes_outbox_waiting ",
        "hermes_cron_jobs_late ",
        "hermes_cron_runs_open ",
    ] {
        assert!(metrics.lines().any(|l| l.starts_with(gauge)), "{gauge}without labels in {metrics}");
    }
    // Metrics name tenants' load: only the ops port serves them, never the public one.
    let public = env.http.get(format!("http://127.0.0.1:{api_port}/metrics")).send().await.unwrap();
    assert_eq!(public.status(), 404, "no /metrics on the API port");

    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    let status = tokio::task::spawn_blocking(move || child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "graceful exit on SIGTERM: {status}");
    let lines = lines.join().unwrap();
    let logs: Vec<Value> = lines.iter().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert_eq!(logs.len(), lines.len(), "every log line is JSON: {lines:?}");
    let finished = logs
        .iter()
        .find(|l| l["message"] == "request finished" && l.to_string().contains("req-abc-123"))
        .unwrap_or_else(|| panic!("a request log line names its request id: {lines:?}"));
    assert_eq!(finished["status"], 401);
    env.stop().await;
}
