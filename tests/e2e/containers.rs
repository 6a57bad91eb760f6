//! The service image as real containers: `deploy/docker/build-local-image.sh` builds it from
//! this test's own `hermesd`, and the api, the scheduler and two workers run from it (non-root,
//! read-only root filesystem) against the machine's Postgres, Redis and RabbitMQ. A worker
//! container killed mid-turn is survived: the other finishes the turn, once.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use hermes_testkit::ScriptedReply;

use crate::harness::{Roles, Team, TestEnv, answer_text, free_port, poll_until, unique};

/// Containers of one test, removed however the test ends.
struct Containers {
    names: Vec<String>,
}

impl Drop for Containers {
    fn drop(&mut self) {
        for name in &self.names {
            let _ = Command::new("docker").args(["rm", "-f", name]).output();
        }
    }
}

/// Builds the image from the `hermesd` this test was compiled with; returns its tag.
fn build_image() -> String {
    let tag = "hermes-cloud:e2e".to_owned();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_hermesd")).parent().unwrap().to_owned();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/docker/build-local-image.sh");
    let out = Command::new(script)
        .args(["--no-ctl", "--tag", &tag, "--bin-dir"])
        .arg(bin_dir)
        .output()
        .expect("the build script runs");
    assert!(out.status.success(), "image build failed: {}", String::from_utf8_lossy(&out.stderr));
    tag
}

/// The docker socket's group, for a non-root worker container to start sandboxes.
fn docker_gid() -> String {
    let out = Command::new("stat").args(["-c", "%g", "/var/run/docker.sock"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Starts `role` (with `worker_id` for a worker) from `image` on the host network, configured
/// like the test's in-process roles; returns the container's name and its ops port.
fn run_role(
    env: &TestEnv,
    image: &str,
    run: &str,
    role: &str,
    worker_id: &str,
    settings: &[(&str, String)],
) -> (String, u16) {
    let c = &env.config;
    let name = format!("hermes-e2e-{run}-{worker_id}");
    let ops = free_port();
    let mut vars: Vec<(&str, String)> = vec![
        ("HERMES__DATABASE__URL", format!("{}?sslmode=disable", c.database.url)),
        ("HERMES__DATABASE__MIGRATE_ON_START", "false".into()),
        ("HERMES__REDIS__URL", c.redis.url.clone()),
        ("HERMES__REDIS__KEY_PREFIX", c.redis.key_prefix.clone()),
        ("HERMES__RABBITMQ__URL", c.rabbitmq.url.clone()),
        ("HERMES__RABBITMQ__PREFIX", c.rabbitmq.prefix.clone()),
        ("HERMES__RABBITMQ__QUEUE_EXPIRES_SECONDS", c.rabbitmq.queue_expires_seconds.to_string()),
        ("HERMES__SECRETS__MASTER_KEY", c.secrets.master_key.clone().unwrap_or_default()),
        ("HERMES__SANDBOX__DOCKER__IMAGE", c.sandbox.docker.image.clone()),
        ("HERMES__SANDBOX__DOCKER__NAME_PREFIX", c.sandbox.docker.name_prefix.clone()),
        ("HERMES__SANDBOX__PREWARM", "false".into()),
        ("HERMES__LEARNING__REVIEW_ENABLED", "false".into()),
        ("HERMES__WORKER__ID", worker_id.into()),
        ("HERMES__WORKER__LEASE_SECONDS", c.worker.lease_seconds.to_string()),
        ("HERMES__WORKER__HEARTBEAT_MILLIS", c.worker.heartbeat_millis.to_string()),
        ("HERMES__SCHEDULER__REAPER_INTERVAL_MILLIS", c.scheduler.reaper_interval_millis.to_string()),
        ("HERMES__SCHEDULER__QUEUED_GRACE_SECONDS", c.scheduler.queued_grace_seconds.to_string()),
        ("HERMES__API__RECHECK_SECONDS", c.api.recheck_seconds.to_string()),
        ("HERMES__OPS__BIND", format!("127.0.0.1:{ops}")),
        ("HERMES__GATEWAY__BIND", format!("127.0.0.1:{}", free_port())),
    ];
    vars.extend(settings.iter().cloned());
    let mut cmd = Command::new("docker");
    cmd.args(["run", "-d", "--name", &name, "--network", "host", "--read-only", "--tmpfs", "/tmp"]).args([
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
    ]);
    if role == "worker" {
        cmd.args(["-v", "/var/run/docker.sock:/var/run/docker.sock", "--group-add", &docker_gid()]);
    }
    for (k, v) in &vars {
        cmd.args(["-e", &format!("{k}={v}")]);
    }
    let out = cmd.args([image, role]).output().unwrap();
    assert!(out.status.success(), "docker run {role}: {}", String::from_utf8_lossy(&out.stderr));
    (name, ops)
}

async fn wait_ready(env: &TestEnv, name: &str, ops: u16) {
    let ready = poll_until(async || {
        let resp = env.http.get(format!("http://127.0.0.1:{ops}/readyz")).send().await.ok()?;
        resp.status().is_success().then_some(())
    })
    .await;
    if ready.is_none() {
        let logs = Command::new("docker").args(["logs", "--tail", "30", name]).output().unwrap();
        panic!(
            "{name} never became ready: {}{}",
            String::from_utf8_lossy(&logs.stdout),
            String::from_utf8_lossy(&logs.stderr)
        );
    }
}

#[tokio::test]
async fn the_image_runs_every_role_and_survives_a_worker_container_killed_mid_turn() {
    let image = build_image();
    // The test's database, scripted model and tenant; every role runs from the image.
    let Team { env, key, .. } = Team::start(Roles::API_ONLY, "ops").await;
    let run = unique("");
    let mut containers = Containers { names: Vec::new() };

    let api_port = free_port();
    let api = run_role(&env, &image, &run, "api", "api", &[("HERMES__HTTP__BIND", format!("127.0.0.1:{api_port}"))]);
    containers.names.push(api.0.clone());
    let scheduler = run_role(&env, &image, &run, "scheduler", "scheduler", &[]);
    containers.names.push(scheduler.0.clone());
    let workers = [
        run_role(&env, &image, &run, "worker", "worker-0", &[]),
        run_role(&env, &image, &run, "worker", "worker-1", &[]),
    ];
    containers.names.extend(workers.iter().map(|(n, _)| n.clone()));
    for (name, ops) in [&api, &scheduler, &workers[0], &workers[1]] {
        wait_ready(&env, name, *ops).await;
    }

    // Whichever worker takes the turn dies waiting for this answer.
    env.llm.push(ScriptedReply::text("never delivered").after(Duration::from_secs(120)));
    env.llm.push(ScriptedReply::text("finished by the other worker"));
    let (http, url, body) = (
        env.http.clone(),
        format!("http://127.0.0.1:{api_port}/v1/chat/completions"),
        json!({
            "model": "ops", "messages": [{"role": "user", "content": "go"}]
        }),
    );
    let key2 = key.clone();
    let client = tokio::spawn(async move { http.post(url).bearer_auth(key2).json(&body).send().await.unwrap() });
    assert!(env.llm.wait_for_requests(1, Duration::from_secs(60)).await, "a worker container called the model");
    let owner: String =
        sqlx::query_scalar("SELECT lease_owner FROM turns WHERE status = 'running'").fetch_one(&env.db).await.unwrap();
    let holder = owner.split('/').next().unwrap_or_default().to_owned();
    let (victim, _) = workers.iter().find(|(name, _)| name.ends_with(&holder)).expect("the owner is one of the two");
    let killed = Command::new("docker").args(["kill", "--signal", "KILL", victim]).output().unwrap();
    assert!(killed.status.success(), "docker kill: {}", String::from_utf8_lossy(&killed.stderr));

    let resp = tokio::time::timeout(Duration::from_secs(90), client).await.expect("the client is answered").unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(answer_text(&body), "finished by the other worker");
    // One turn, claimed twice, one answer stored: the kill lost nothing and doubled nothing.
    let (status, attempts): (String, i32) =
        sqlx::query_as("SELECT status::text, attempts FROM turns").fetch_one(&env.db).await.unwrap();
    assert_eq!((status.as_str(), attempts), ("completed", 2));
    let roles: Vec<String> =
        sqlx::query_scalar("SELECT role FROM messages ORDER BY seq").fetch_all(&env.db).await.unwrap();
    assert_eq!(roles, ["user", "assistant"]);
    assert_eq!(env.llm.requests().len(), 2, "the model was asked once per attempt");
    drop(containers);
    env.stop().await;
}
