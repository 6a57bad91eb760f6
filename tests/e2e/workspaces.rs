//! Per-person workspaces (issue 38 item 2) in real Docker: under `workspace = person` each end
//! user (here API callers told apart by `X-Hermes-Session-Key`) has their own sandbox. Person B
//! can neither list, read nor signal anything of person A's; A's files and processes live on;
//! the agent's shared workspace is untouched. Prints the first reply's time in a new person's
//! workspace (cold) and in an existing one (warm), and the memory an idle workspace holds.

use std::time::Instant;

use bollard::Docker;
use futures_util::StreamExt;
use serde_json::Value;

use hermes_core::Workspace;
use hermes_sandbox::SandboxKey;
use hermes_testkit::ScriptedReply;

use crate::harness::{Team, TestEnv, answer_text, ask};

/// Person `who` asks, and the model makes `calls` then answers `done`: the output of the last
/// call, and how long the answer took.
async fn run_as(env: &TestEnv, key: &str, who: &str, calls: Vec<ScriptedReply>) -> (String, std::time::Duration) {
    let steps = calls.len();
    for call in calls {
        env.llm.push(call);
    }
    env.llm.push(ScriptedReply::text("done"));
    let asked = env.llm.requests().len();
    let started = Instant::now();
    let resp = env
        .http
        .post(format!("{}/v1/chat/completions", env.api_url))
        .bearer_auth(key)
        .header("X-Hermes-Session-Key", who)
        .json(&ask("ops", "run it"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    let took = started.elapsed();
    assert_eq!(answer_text(&body), "done");
    let last = env.llm.requests()[asked + steps].messages();
    let tool = last.iter().rev().find(|m| m["role"] == "tool").expect("the command's output");
    (tool["content"].as_str().unwrap().to_owned(), took)
}

/// A shell line printing `PID=<pid>` for each process of the sandbox running `sleep 600` (the
/// pattern is written so that this line's own shell does not match it).
const SLEEPERS: &str = "for f in /proc/[0-9]*; do tr '\\000' ' ' < $f/cmdline 2>/dev/null | grep -q 'sleep 60[0]' && echo PID=${f#/proc/}; done";

#[tokio::test]
async fn each_person_has_a_sandbox_the_others_can_neither_list_read_nor_signal() {
    let Team { env, tenant, agent, key } = Team::acme("ops").await;
    sqlx::query("UPDATE agents SET workspace = 'person', approval_mode = 'off' WHERE id = $1")
        .bind(agent.id.as_uuid())
        .execute(&env.db)
        .await
        .unwrap();

    let background =
        ScriptedReply::tool_call("terminal", serde_json::json!({"command": "sleep 600", "background": true}));
    let look = format!("echo a-secret > /workspace/alice.txt; {SLEEPERS}; echo HOST=$(hostname)");
    let (alice, cold) = run_as(&env, &key, "alice", vec![background, ScriptedReply::terminal(look)]).await;
    let field = |out: &str, name: &str| {
        out.lines().find_map(|l| l.strip_prefix(name)).unwrap_or_else(|| panic!("{name} in {out}")).trim().to_owned()
    };
    let (alice_pid, alice_host) = (field(&alice, "PID="), field(&alice, "HOST="));

    // Bob looks for Alice's file and process, and signals her process by its number. In his
    // own process namespace that number may be one of his shell's: never that one, or the
    // command would kill itself (it did, once, in CI).
    let snoop = format!(
        "echo HOST=$(hostname); ls -a /workspace; cat /workspace/alice.txt; echo SLEEPERS; {SLEEPERS}; \
         if [ {alice_pid} != $$ ] && [ {alice_pid} != $PPID ]; then kill -9 {alice_pid} && echo KILLED; fi"
    );
    let (bob, bob_cold) = run_as(&env, &key, "bob", vec![ScriptedReply::terminal(snoop)]).await;
    assert!(!bob.contains("alice.txt\n") && bob.contains("No such file"), "Bob lists and reads nothing: {bob}");
    assert!(!bob.contains("a-secret"), "{bob}");
    assert!(!bob.contains("PID="), "Bob sees no process of Alice's: {bob}");
    assert_ne!(field(&bob, "HOST="), alice_host, "another sandbox");

    let check = format!("cat /workspace/alice.txt; {SLEEPERS}");
    let (again, warm) = run_as(&env, &key, "alice", vec![ScriptedReply::terminal(check)]).await;
    assert!(again.contains("a-secret"), "Alice's file lives on: {again}");
    assert_eq!(field(&again, "PID="), alice_pid, "her process lives on, whatever Bob signalled: {again} / {bob}");

    // Two containers with their own volumes, neither of them the agent's shared one.
    let docker = Docker::connect_with_local_defaults().unwrap().negotiate_version().await.unwrap();
    let sandboxes = hermes_sandbox::docker::DockerSandboxes::connect(&env.config.sandbox).await.unwrap();
    let shared = sandboxes.container_name(SandboxKey::shared(tenant, agent.id));
    assert!(docker.inspect_container(&shared, None).await.is_err(), "nobody used the shared workspace");
    let session = hermes_core::SessionId::new();
    let person = |who: &str| {
        let ws = Workspace::for_turn(hermes_core::WorkspaceScope::Person, &format!("session-key:{who}"), session);
        sandboxes.container_name(SandboxKey { tenant, agent: agent.id, workspace: ws })
    };
    let (a, b) = (person("alice"), person("bob"));
    let mounts = |info: bollard::models::ContainerInspectResponse| {
        info.mounts.unwrap_or_default().into_iter().filter_map(|m| m.name).collect::<Vec<_>>()
    };
    let (a_info, b_info) =
        (docker.inspect_container(&a, None).await.unwrap(), docker.inspect_container(&b, None).await.unwrap());
    let (a_labels, b_labels) =
        (a_info.config.clone().unwrap().labels.unwrap(), b_info.config.clone().unwrap().labels.unwrap());
    assert_ne!(a_labels["io.hermes.workspace"], b_labels["io.hermes.workspace"]);
    let (a_vols, b_vols) = (mounts(a_info), mounts(b_info));
    assert!(a_vols.iter().all(|v| !b_vols.contains(v)), "no volume in common: {a_vols:?} {b_vols:?}");

    let options = bollard::query_parameters::StatsOptions { stream: false, one_shot: false };
    let stats = Box::pin(docker.stats(&b, Some(options))).next().await.and_then(Result::ok);
    let idle_memory = stats.and_then(|s| s.memory_stats).and_then(|m| m.usage).unwrap_or(0);
    eprintln!(
        "first reply with the terminal: cold (new workspace) {:.0} ms and {:.0} ms, warm {:.0} ms; \
         an idle workspace holds {:.1} MiB",
        cold.as_secs_f64() * 1e3,
        bob_cold.as_secs_f64() * 1e3,
        warm.as_secs_f64() * 1e3,
        idle_memory as f64 / (1024.0 * 1024.0)
    );
    env.stop().await;
}

/// Builds `hermes-sandbox:test-node`: the test image with a marker naming it (offline: the
/// base is local).
fn node_image() -> &'static str {
    let dir = std::env::temp_dir().join(format!("hermes-node-image-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("marker"), "node-image\n").unwrap();
    let dockerfile = format!("FROM {}\nCOPY marker /etc/hermes-image\n", crate::harness::SANDBOX_TEST_IMAGE);
    std::fs::write(dir.join("Dockerfile"), dockerfile).unwrap();
    let built = std::process::Command::new("docker")
        .args(["build", "-q", "-t", "hermes-sandbox:test-node"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    "hermes-sandbox:test-node"
}

/// Images and resources per agent (issue 38 item 3): the operator lists images and maxima; an
/// agent picks `node` and its limits, and its sandbox runs that image with them; a changed
/// choice remakes the sandbox at the next turn with the workspace kept (the admin API's
/// checks of a choice: `admin::agents`).
#[tokio::test]
async fn an_agent_runs_the_image_and_limits_it_picked_and_a_change_applies_at_the_next_turn() {
    let node = node_image();
    let env = TestEnv::start_with(crate::harness::Roles::default(), |c| {
        c.sandbox.images = vec![hermes_config::SandboxImage {
            name: "node".into(),
            reference: node.into(),
            carries: "Node and npx".into(),
        }];
        c.sandbox.max.cpus = 2.0;
        c.sandbox.max.memory_mb = 1024;
    })
    .await;
    let (tenant, agent, key) = env.tenant("acme", "ops").await;
    let choice = serde_json::json!({"image": "node", "cpus": 1.5, "memory_mb": 512, "pids": 128});
    sqlx::query("UPDATE agents SET sandbox = $2, approval_mode = 'off' WHERE id = $1")
        .bind(agent.id.as_uuid())
        .bind(choice)
        .execute(&env.db)
        .await
        .unwrap();

    let (out, _) =
        run_as(&env, &key, "alice", vec![ScriptedReply::terminal("cat /etc/hermes-image; echo kept > /workspace/f")])
            .await;
    assert!(out.contains("node-image"), "{out}");
    let docker = Docker::connect_with_local_defaults().unwrap().negotiate_version().await.unwrap();
    let sandboxes = hermes_sandbox::docker::DockerSandboxes::connect(&env.config.sandbox).await.unwrap();
    let name = sandboxes.container_name(SandboxKey::shared(tenant, agent.id));
    let info = docker.inspect_container(&name, None).await.unwrap();
    assert_eq!(info.config.unwrap().image.as_deref(), Some(node));
    let host = info.host_config.unwrap();
    assert_eq!(
        (host.nano_cpus, host.memory, host.pids_limit),
        (Some(1_500_000_000), Some(512 * 1024 * 1024), Some(128))
    );

    // Back to the defaults: the next turn's sandbox is the default image, the workspace kept.
    sqlx::query("UPDATE agents SET sandbox = '{}' WHERE id = $1")
        .bind(agent.id.as_uuid())
        .execute(&env.db)
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(6)).await; // the worker reads the setting every 5 s
    let (out, _) =
        run_as(&env, &key, "alice", vec![ScriptedReply::terminal("cat /etc/hermes-image 2>&1; cat /workspace/f")])
            .await;
    assert!(out.contains("No such file") && out.contains("kept"), "{out}");
    let info = docker.inspect_container(&name, None).await.unwrap();
    assert_eq!(info.config.unwrap().image.as_deref(), Some(crate::harness::SANDBOX_TEST_IMAGE));
    env.stop().await;
}
