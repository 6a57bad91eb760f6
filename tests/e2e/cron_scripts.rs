//! Upstream's script jobs (issue 41): a job's script runs in the agent's sandbox, from its
//! scripts folder only and in an empty environment; a `no_agent` job delivers what the script
//! prints with no model call (nothing when it prints nothing, an alert when it fails); a script
//! can keep the agent asleep (`{"wakeAgent": false}`) or feed it, with other jobs' latest
//! output (`context_from`); and a worker killed mid-script leaves the run delivered once.

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use hermes_sandbox::SandboxKey;
use hermes_testkit::ScriptedReply;
use hermes_testkit::telegram::TelegramEmulator;

use crate::harness::{Roles, TestEnv, ask, kill, poll_until};
use crate::openapi::call;
use crate::telegram::{Pod, TOKEN, open_bot, sent};

/// The scripts the agent writes into its scripts folder, as upstream's agent does.
const SCRIPTS: &str = "mkdir -p .hermes/scripts && cd .hermes/scripts
printf 'echo \"RAM 93%% on the build box\"\\n' > ram.sh
printf 'echo checked 3 feeds\\necho \"{\\\\\"wakeAgent\\\\\": false}\"\\n' > gate.sh
printf 'echo partial; echo broken pipe >&2; exit 3\\n' > broken.sh
cat > feeds.sh <<'EOF'
echo \"env: $(env | cut -d= -f1 | sort | tr '\\n' ' ')\"
echo \"cwd: $(pwd)\"
EOF
printf 'echo started >> /workspace/slow-runs; sleep 4; echo slow done\\n' > slow.sh
printf 'echo ESCAPED\\n' > ../outside.sh && ln -sf ../outside.sh evil.sh
ls /workspace/.hermes/scripts";

/// An environment whose agent has the terminal, a Telegram bot for it, and its scripts written.
async fn with_scripts(roles: Roles) -> (TestEnv, TelegramEmulator, Pod, String, SandboxKey) {
    with_scripts_and(roles, |_| {}).await
}

async fn with_scripts_and(
    roles: Roles,
    tweak: impl FnOnce(&mut hermes_config::HermesConfig),
) -> (TestEnv, TelegramEmulator, Pod, String, SandboxKey) {
    let env = TestEnv::start_with(roles, tweak).await;
    let (tg, channel) = open_bot(&env).await;
    env.set_toolsets(channel.agent_id, &["terminal", "file"]).await;
    let pod = Pod::start(&env).await;
    let key = env.key_of("acme").await;
    (env, tg, pod, key, SandboxKey::shared(channel.tenant_id, channel.agent_id))
}

async fn write_scripts(env: &TestEnv, key: &str) {
    env.llm.push(ScriptedReply::terminal(SCRIPTS));
    env.llm.push(ScriptedReply::text("Scripts written."));
    let body: Value = env.chat(key, ask("helper", "write the scripts")).await.json().await.unwrap();
    assert_eq!(crate::harness::answer_text(&body), "Scripts written.", "{body}");
    let listed = env.llm.requests().last().unwrap().messages().last().unwrap()["content"].to_string();
    assert!(listed.contains("ram.sh") && listed.contains("evil.sh"), "the scripts are in their folder: {listed}");
}

async fn make(env: &TestEnv, key: &str, job: Value) -> Value {
    let (status, made) = call(env, key, "post", "/api/jobs", Some(job)).await;
    assert_eq!(status, 200, "{made}");
    made["job"].clone()
}

async fn run_now(env: &TestEnv, key: &str, job: &Value) {
    let path = format!("/api/jobs/{}/run", job["id"].as_str().unwrap());
    assert_eq!(call(env, key, "post", &path, None).await.0, 200);
}

#[tokio::test]
async fn script_jobs_deliver_a_watchdog_without_a_model_and_wake_the_agent_only_when_asked() {
    let (env, tg, pod, key, sandbox) = with_scripts(Roles::default()).await;
    let agent = sandbox.agent;
    write_scripts(&env, &key).await;
    let calls = env.llm.requests().len();

    // Upstream's watchdog: the script is the job. No model is called.
    let ram = make(
        &env,
        &key,
        json!({"name": "memory-watchdog", "schedule": "every 5m", "script": "ram.sh", "no_agent": true, "deliver": "telegram:42"}),
    )
    .await;
    assert_eq!((ram["script"].as_str(), ram["no_agent"].as_bool()), (Some("ram.sh"), Some(true)), "{ram}");
    run_now(&env, &key, &ram).await;
    assert_eq!(sent(&tg, 1).await[0].text, "⏰ Cron job “memory-watchdog”\n\nRAM 93% on the build box");

    // A broken watchdog does not fail silently: an alert with its exit code and stderr.
    let broken =
        make(&env, &key, json!({"name": "broken", "schedule": "every 5m", "script": "broken.sh", "no_agent": true, "deliver": "telegram:42"}))
            .await;
    run_now(&env, &key, &broken).await;
    let alert = &sent(&tg, 2).await[1].text;
    assert!(alert.contains("broken.sh failed") && alert.contains("code 3") && alert.contains("broken pipe"), "{alert}");

    // A symlink out of the scripts folder is not followed.
    let evil =
        make(&env, &key, json!({"name": "evil", "schedule": "every 5m", "script": "evil.sh", "no_agent": true, "deliver": "telegram:42"}))
            .await;
    run_now(&env, &key, &evil).await;
    let blocked = &sent(&tg, 3).await[2].text;
    assert!(blocked.contains("outside the scripts folder") && !blocked.contains("ESCAPED"), "{blocked}");

    // A job whose runs may not run programs does not run a script either.
    let narrow = json!({"name": "narrow", "schedule": "every 5m", "script": "ram.sh", "no_agent": true,
                        "enabled_toolsets": ["web"], "deliver": "telegram:42"});
    let narrow = make(&env, &key, narrow).await;
    run_now(&env, &key, &narrow).await;
    let refused = &sent(&tg, 4).await[3].text;
    assert!(refused.contains("may not run programs") && !refused.contains("RAM 93%"), "{refused}");

    // The gate keeps the agent asleep: a silent run, no model call.
    let gate = make(
        &env,
        &key,
        json!({"name": "feed-gate", "schedule": "every 30m", "script": "gate.sh", "prompt": "Summarise what changed.", "deliver": "telegram:42"}),
    )
    .await;
    run_now(&env, &key, &gate).await;
    env.wait_for_count("SELECT count(*) FROM cron_runs WHERE status IN ('completed', 'failed')", 5).await;
    assert_eq!(env.llm.requests().len(), calls, "no model call for a script job that kept the agent asleep");
    assert_eq!(env.count("SELECT count(*) FROM cron_runs WHERE status = 'failed'").await, 3, "broken, evil, narrow");

    // A script that wakes the agent feeds it, under the latest output of the jobs it names.
    env.llm.push(ScriptedReply::text("Feeds are fine."));
    let feeds = make(
        &env,
        &key,
        json!({"name": "feeds", "schedule": "every 1h", "script": "feeds.sh", "context_from": "memory-watchdog",
               "prompt": "Report on the feeds.", "deliver": "telegram:42", "workdir": "/workspace"}),
    )
    .await;
    assert_eq!(feeds["context_from"], json!([ram["id"]]), "kept by id: {feeds}");
    run_now(&env, &key, &feeds).await;
    assert_eq!(sent(&tg, 5).await[4].text, "⏰ Cron job “feeds”\n\nFeeds are fine.");
    let asked = env.llm.requests().last().unwrap().messages().last().unwrap()["content"].as_str().unwrap().to_owned();
    let order = [
        "## Output from job 'memory-watchdog'",
        "RAM 93% on the build box",
        "## Script Output",
        "Report on the feeds.",
    ];
    let at: Vec<usize> = order.iter().map(|s| asked.find(s).unwrap_or_else(|| panic!("{s:?} in {asked}"))).collect();
    assert!(at.is_sorted(), "context, then the script's output, then the prompt: {asked}");
    // Of the sandbox's environment the script keeps only the way out through the egress proxy
    // (and its certificates); the rest is what a shell sets itself. It starts in its workdir.
    let names = asked.split("env: ").nth(1).and_then(|rest| rest.lines().next()).unwrap_or_default();
    let proxy = hermes_sandbox::PROXY_ENV.map(|(name, _)| name);
    let trust = hermes_sandbox::spec::TRUST_ENV.map(|(name, _)| name);
    let shell_own = ["HOME", "LANG", "PATH", "TZ", "PWD", "OLDPWD", "SHLVL", "_"];
    let kept = |n: &str| n.is_empty() || shell_own.contains(&n) || proxy.contains(&n) || trust.contains(&n);
    assert!(names.contains("HTTPS_PROXY") && names.split(' ').all(kept), "{names}");
    assert!(asked.contains("cwd: /workspace\n"), "{asked}");
    assert_eq!(tg.sent(TOKEN).len(), 5, "the gate's silent run sent nothing");

    // The agent sets a watchdog up itself, with its `cronjob` tool.
    env.set_toolsets(agent, &["terminal", "file", "cronjob"]).await;
    let create = json!({"action": "create", "name": "disk", "schedule": "every 1h", "script": "ram.sh",
                        "no_agent": true, "deliver": "telegram:42"});
    env.llm.push(ScriptedReply::tool_call("cronjob", create));
    env.llm.push(ScriptedReply::text("Watchdog set."));
    env.answered(&key, "helper", "alert me when RAM is high").await;
    let (_, disk) = call(&env, &key, "get", "/api/jobs/disk", None).await;
    assert_eq!((disk["job"]["script"].as_str(), disk["job"]["no_agent"].as_bool()), (Some("ram.sh"), Some(true)));
    let calls = env.llm.requests().len();
    run_now(&env, &key, &disk["job"]).await;
    assert_eq!(sent(&tg, 6).await[5].text, "⏰ Cron job “disk”\n\nRAM 93% on the build box");
    assert_eq!(env.llm.requests().len(), calls);
    pod.stop_with(env).await;
}

/// The installation sets how long a script may run (upstream's `cron.script_timeout_seconds`).
#[tokio::test]
async fn a_script_past_the_configured_timeout_is_killed_and_alerted() {
    let tweak = |c: &mut hermes_config::HermesConfig| c.worker.cron_script_timeout_seconds = 2;
    let (env, tg, pod, key, _) = with_scripts_and(Roles::default(), tweak).await;
    write_scripts(&env, &key).await;
    let slow =
        make(&env, &key, json!({"name": "slow", "schedule": "every 1h", "script": "slow.sh", "no_agent": true, "deliver": "telegram:42"}))
            .await;
    run_now(&env, &key, &slow).await;
    let alert = &sent(&tg, 1).await[0].text;
    assert!(alert.contains("Script timed out after 2 s: slow.sh"), "{alert}");
    assert!(!alert.contains("slow done"), "{alert}");
    env.wait_for_count("SELECT count(*) FROM cron_runs WHERE status = 'failed'", 1).await;
    pod.stop_with(env).await;
}

#[tokio::test]
async fn a_worker_killed_while_the_script_runs_leaves_the_run_delivered_once() {
    let (env, tg, pod, key, sandbox) = with_scripts(Roles::NO_WORKER).await;
    let worker_a = env.spawn_hermesd(&["worker"], "worker-a");
    write_scripts(&env, &key).await;
    let slow =
        make(&env, &key, json!({"name": "slow", "schedule": "every 1h", "script": "slow.sh", "no_agent": true, "deliver": "telegram:42"}))
            .await;
    run_now(&env, &key, &slow).await;

    let docker = hermes_sandbox::docker::DockerSandboxes::connect(&env.config.sandbox).await.unwrap();
    let container = docker.container_name(sandbox);
    let runs = || {
        let out = Command::new("docker").args(["exec", &container, "cat", "/workspace/slow-runs"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    assert!(poll_until(async || (runs() == 1).then_some(())).await.is_some(), "the script started");
    kill(worker_a);
    let worker_b = env.spawn_hermesd(&["worker"], "worker-b");

    assert_eq!(sent(&tg, 1).await[0].text, "⏰ Cron job “slow”\n\nslow done");
    env.wait_for_count("SELECT count(*) FROM cron_runs WHERE status = 'completed'", 1).await;
    // Nothing may be sent twice: the wait is the behaviour under test.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(tg.sent(TOKEN).len(), 1, "delivered once");
    assert_eq!(runs(), 2, "the killed run's script ran again on the next worker");
    let attempts: i32 = sqlx::query_scalar("SELECT attempts FROM turns t JOIN cron_runs r ON r.turn_id = t.id")
        .fetch_one(&env.db)
        .await
        .unwrap();
    assert_eq!(attempts, 2);
    kill(worker_b);
    pod.stop_with(env).await;
}

#[tokio::test]
async fn api_jobs_takes_upstreams_script_fields_and_refuses_what_it_cannot_honour() {
    let env = TestEnv::start_roles(Roles::API_ONLY).await;
    let (tenant, _, key) = env.tenant("acme", "helper").await;
    // Upstream's documented payloads, as its clients send them.
    let watchdog = json!({"name": "memory-watchdog", "schedule": "every 5m", "script": "memory-watchdog.sh",
                          "no_agent": true, "deliver": "local", "enabled": false});
    let made = make(&env, &key, watchdog).await;
    assert_eq!((made["enabled"].as_bool(), made["state"].as_str()), (Some(false), Some("paused")), "{made}");
    let feed = json!({"name": "process-feed", "schedule": "every 30m", "script": "feed-changed.sh",
                      "prompt": "A new ~/data/feed.json has landed. Summarize what changed.",
                      "context_from": [made["id"]], "enabled_toolsets": ["web", "file"], "model": "gpt-4.1-mini",
                      "workdir": "/workspace/data", "provider": null, "base_url": null});
    let chained = make(&env, &key, feed).await;
    let (_, got) = call(&env, &key, "get", &format!("/api/jobs/{}", chained["id"].as_str().unwrap()), None).await;
    let got = &got["job"];
    for (field, want) in [
        ("script", json!("feed-changed.sh")),
        ("no_agent", json!(false)),
        ("context_from", json!([made["id"]])),
        ("enabled_toolsets", json!(["web", "file"])),
        ("model", json!("gpt-4.1-mini")),
        ("workdir", json!("/workspace/data")),
    ] {
        assert_eq!(got[field], want, "{field}: {got}");
    }

    for (body, says) in [
        (json!({"name": "x", "schedule": "every 1h", "prompt": "x", "timeout": 5}), "unknown field `timeout`"),
        (
            json!({"name": "x", "schedule": "every 1h", "prompt": "x", "provider": "anthropic"}),
            "provider cannot be set per job",
        ),
        (json!({"name": "x", "schedule": "every 1h", "no_agent": true}), "no_agent needs a script"),
        (json!({"name": "x", "schedule": "every 1h", "script": "../../etc/x.sh", "no_agent": true}), "scripts folder"),
        (json!({"name": "x", "schedule": "every 1h", "script": "/usr/bin/id", "no_agent": true}), "scripts folder"),
        (json!({"name": "x", "schedule": "every 1h", "prompt": "x", "workdir": "/etc"}), "workspace"),
        (json!({"name": "x", "schedule": "every 1h", "prompt": "x", "context_from": "nope"}), "no job \"nope\""),
    ] {
        let (status, refused) = call(&env, &key, "post", "/api/jobs", Some(body.clone())).await;
        assert_eq!(status, 400, "{body}: {refused}");
        let error = refused["error"].as_str().unwrap_or_default();
        assert!(error.contains(says), "{body}: {error}");
    }
    let path = format!("/api/jobs/{}", made["id"].as_str().unwrap());
    let (status, refused) = call(&env, &key, "patch", &path, Some(json!({"script": "other.sh"}))).await;
    assert_eq!(status, 400, "PATCH takes upstream's update fields only, and says so: {refused}");

    // A key kept to the web tools makes jobs kept to them: their runs cannot run its scripts.
    let (web_key, web_only) = env.store.tenancy().create_api_key(tenant, None, "web only", None).await.unwrap();
    env.store.tenancy().limit_api_key_toolsets(tenant, web_key.id, Some(&["web".to_owned()])).await.unwrap();
    let body = json!({"name": "sneaky", "schedule": "every 1h", "script": "x.sh", "no_agent": true,
                      "enabled_toolsets": ["terminal", "web"]});
    let sneaky = make(&env, &web_only, body).await;
    assert_eq!(sneaky["enabled_toolsets"], json!(["web"]), "{sneaky}");

    // An agent with a workspace per person: a job's runs would not see anyone's scripts.
    let private = env.agent(tenant, "private").await;
    sqlx::query("UPDATE agents SET workspace = 'person' WHERE id = $1")
        .bind(private.id.as_uuid())
        .execute(&env.db)
        .await
        .unwrap();
    let body = json!({"name": "x", "schedule": "every 1h", "script": "x.sh", "no_agent": true, "agent": "private"});
    let (status, refused) = call(&env, &key, "post", "/api/jobs", Some(body)).await;
    assert_eq!(status, 400, "{refused}");
    assert!(refused["error"].as_str().is_some_and(|e| e.contains("one shared workspace")), "{refused}");
    env.stop().await;
}

/// A job's `workdir` is its runs' working folder, as upstream's: commands and relative paths
/// start there, and the context file there is in the run's prompt.
#[tokio::test]
async fn a_jobs_workdir_is_where_its_runs_work_and_find_their_context_file() {
    let (env, tg, pod, key, _) = with_scripts(Roles::default()).await;
    let setup = "mkdir -p proj && echo 'Answer in haiku.' > proj/AGENTS.md && echo 'deploy at five' > proj/notes.txt";
    env.llm.push(ScriptedReply::terminal(setup));
    env.llm.push(ScriptedReply::text("Set up."));
    let body: Value = env.chat(&key, ask("helper", "set up the project")).await.json().await.unwrap();
    assert_eq!(crate::harness::answer_text(&body), "Set up.", "{body}");
    let job = json!({"name": "proj", "schedule": "every 1h", "prompt": "check the project", "workdir": "proj", "deliver": "telegram:42"});
    let job = make(&env, &key, job).await;
    assert_eq!(job["workdir"], "/workspace/proj");
    env.llm.push(ScriptedReply::tool_call("read_file", json!({"path": "notes.txt"})));
    env.llm.push(ScriptedReply::terminal("pwd"));
    env.llm.push(ScriptedReply::text("Checked."));
    run_now(&env, &key, &job).await;
    assert_eq!(sent(&tg, 1).await[0].text, "⏰ Cron job “proj”\n\nChecked.");
    // The run's last step: the one that saw both tool results (other calls may follow: a title).
    let requests = env.llm.requests();
    let run = requests.iter().rev().find(|r| r.messages().iter().filter(|m| m["role"] == "tool").count() == 2);
    let last = run.expect("the run's last step").messages();
    let system = last[0]["content"].as_str().unwrap_or_default();
    assert!(system.contains("Answer in haiku."), "the workdir's AGENTS.md is the run's context: {system}");
    let results: Vec<String> = last.iter().filter(|m| m["role"] == "tool").map(|m| m["content"].to_string()).collect();
    assert!(results[0].contains("deploy at five"), "a relative path is under the workdir: {results:?}");
    assert!(results[1].contains("/workspace/proj"), "commands start in the workdir: {results:?}");
    pod.stop_with(env).await;
}
