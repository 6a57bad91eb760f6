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

    // Bob looks for Alice's file and process, and signals her process by its number.
    let snoop = format!(
        "ls -a /workspace; cat /workspace/alice.txt; echo SLEEPERS; {SLEEPERS}; \
         kill -9 {alice_pid} && echo KILLED; echo HOST=$(hostname)"
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
