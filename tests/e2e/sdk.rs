//! The official OpenAI SDKs (Python and Node, pinned in `tests/sdk/`), unmodified, against the
//! real service: chat completions plain and streamed, responses plain, chained, streamed and
//! through the SDKs' stream helpers, retrieve and delete, models, and a typed 404.
//! `deploy/dev/test.sh` installs both SDKs.

use serde_json::Value;

use hermes_testkit::ScriptedReply;

use crate::harness::Team;

/// Runs one SDK script with the service's address and a key; returns what it printed.
async fn run_sdk(program: &str, script: &str) -> Value {
    let Team { env, key, .. } = Team::acme("helper").await;
    for text in [
        "Hello from Hermes.",
        "Streamed answer.",
        "Response one.",
        "Response two.",
        "Streamed response.",
        "Helper stream.",
    ] {
        env.llm.push(ScriptedReply::text(text));
    }
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/sdk");
    let out = tokio::process::Command::new(program)
        .arg(format!("{root}/{script}"))
        .current_dir(root)
        .env("OPENAI_BASE_URL", format!("{}/v1", env.api_url))
        .env("OPENAI_API_KEY", &key)
        .env("HERMES_MODEL", "helper")
        .output()
        .await
        .unwrap_or_else(|e| panic!("cannot run {program} (deploy/dev/test.sh installs the SDKs): {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{script} failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let seen = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    env.stop().await;
    seen
}

fn check(seen: &Value) {
    assert_eq!(seen["chat"]["text"], "Hello from Hermes.", "{seen}");
    assert_eq!(seen["chat"]["finish"], "stop");
    assert!(seen["chat"]["total_tokens"].as_u64().unwrap() > 0);
    assert_eq!(seen["chat_stream"]["text"], "Streamed answer.");
    assert!(seen["chat_stream"]["total_tokens"].as_u64().unwrap() > 0);
    assert_eq!(seen["responses"]["first"], "Response one.");
    assert_eq!(seen["responses"]["second"], "Response two.");
    assert_eq!(seen["responses"]["status"], "completed");
    assert_eq!(seen["responses"]["previous"], true);
    assert_eq!(seen["responses_stream"]["first"], "response.created");
    assert_eq!(seen["responses_stream"]["last"], "response.completed");
    assert_eq!(seen["responses_stream"]["text"], "Streamed response.");
    assert!(seen["responses_stream"]["deltas"].as_u64().unwrap() >= 1);
    assert_eq!(seen["responses_helper"]["text"], "Helper stream.");
    assert_eq!(seen["retrieve"]["text"], "Response one.");
    assert_eq!(seen["retrieve"]["deleted"], true);
    assert_eq!(seen["models"], serde_json::json!(["helper"]));
    assert_eq!(seen["error"]["status"], 404);
    assert_eq!(seen["error"]["code"], "model_not_found");
}

#[tokio::test]
async fn the_official_python_sdk_works_unmodified() {
    check(&run_sdk("python3", "openai_python.py").await);
}

#[tokio::test]
async fn the_official_node_sdk_works_unmodified() {
    check(&run_sdk("node", "node/check_openai.mjs").await);
}
