//! Team secrets a sandbox uses but never reads (issue 39), on real Docker: an admin binds the
//! team's key to `GITHUB_TOKEN` of an agent; in the sandbox the variable holds a placeholder,
//! which the worker's egress proxy swaps for the key on connections to the key's host only
//! (TLS ended there with the installation's egress CA, which the sandbox trusts, and begun
//! again with full verification of the host). The host's echo comes back redacted; a host the
//! key may not go to gets the placeholder; no process environment holds the key.

use serde_json::{Value, json};

use hermes_testkit::ScriptedReply;
use hermes_testkit::tls_host::TlsEchoHost;

use crate::harness::{Roles, TestEnv, answer_text, ask};

const KEY: &str = "ghp_team_key_never_in_the_sandbox_42";

/// Runs `command` in the agent's sandbox through a turn; what the tool printed.
async fn shell(env: &TestEnv, key: &str, command: &str) -> String {
    env.llm.push(ScriptedReply::tool_call("terminal", json!({ "command": command })));
    env.llm.push(ScriptedReply::text("done"));
    let body: Value = env.chat(key, ask("helper", "call the API")).await.json().await.unwrap();
    assert_eq!(answer_text(&body), "done", "{body}");
    let request = env.llm.requests().last().unwrap().messages();
    request.iter().rev().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_bound_key_reaches_its_host_from_curl_while_the_sandbox_sees_only_a_placeholder() {
    // 127.0.0.2 stands in for the key's host (api.github.com), 127.0.0.3 for any other host.
    let github = TlsEchoHost::start("127.0.0.2", "127.0.0.2").await.unwrap();
    let elsewhere = TlsEchoHost::start("127.0.0.3", "127.0.0.3").await.unwrap();
    let trusted = std::env::temp_dir().join(format!("hermes-test-host-ca-{}.pem", uuid::Uuid::now_v7()));
    std::fs::write(&trusted, &github.ca_pem).unwrap();
    let (ports, ca_file) = (vec![github.addr.port(), elsewhere.addr.port()], trusted.display().to_string());
    let env = TestEnv::start_with(Roles::default(), move |c| {
        c.sandbox.egress_allow_cidrs = vec!["127.0.0.2/32".into(), "127.0.0.3/32".into()];
        c.sandbox.egress_ports = ports;
        // The proxy verifies the stand-in host against its test CA, as it would a real host
        // against the system's roots.
        c.sandbox.egress_trusted_ca_files = vec![ca_file];
    })
    .await;
    let (tenant, agent, key) = env.tenant("acme", "helper").await;
    env.store.turns().set_egress(tenant, agent.id, true).await.unwrap();
    // The command reads the environment, which would otherwise wait for a person's approval.
    sqlx::query("UPDATE agents SET approval_mode = 'off' WHERE id = $1")
        .bind(agent.id.as_uuid())
        .execute(&env.db)
        .await
        .unwrap();
    env.pool_key(tenant, "gh", "team", KEY, "127.0.0.2").await;
    let placement = hermes_core::secret_placement::SecretPlacement::default();
    env.store.agents().bind_secret(tenant, agent.id, "GITHUB_TOKEN", "gh", &placement).await.unwrap();

    let (gh, other) = (github.addr.port(), elsewhere.addr.port());
    // The tool's output is redacted for the model (a `Bearer ...` is masked), so what came back
    // is counted: lines holding the placeholder, lines holding the key.
    let seen_back = "| tee /tmp/answer | grep -c \"$GITHUB_TOKEN\"; grep -c {KEY} /tmp/answer";
    let command = format!(
        "echo \"${{GITHUB_TOKEN%${{GITHUB_TOKEN#??????????????????????}}}}\"; echo ---; \
         curl -sS https://127.0.0.2:{gh}/user -H \"Authorization: Bearer $GITHUB_TOKEN\" {seen_back}; echo ---; \
         printf '%s' '{other_ca}' > /tmp/other-ca.pem; \
         curl -sS --cacert /tmp/other-ca.pem https://127.0.0.3:{other}/user -H \"Authorization: Bearer $GITHUB_TOKEN\" \
           {seen_back}; echo ---; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\000' '\\n' | grep -c {KEY}",
        other_ca = elsewhere.ca_pem.trim(),
        seen_back = seen_back.replace("{KEY}", KEY),
    );
    let out = shell(&env, &key, &command).await;
    let parts: Vec<&str> = out.split("---").map(str::trim).collect();
    assert_eq!(parts.len(), 4, "{out}");
    // The variable holds a placeholder (its first 22 characters are shown).
    assert!(parts[0].starts_with("hermes_placeholder_") && parts[0].len() == 22, "{out}");

    // The key's host got the key; its echo came back as the placeholder (one line), never
    // the key (none).
    assert_eq!(github.seen()[0].authorization, format!("Bearer {KEY}"));
    assert_eq!(parts[1].split_whitespace().collect::<Vec<_>>(), ["1", "0"], "{out}");
    // Another host got the placeholder, untouched: the tunnel there is not opened.
    let sent_elsewhere = elsewhere.seen()[0].authorization.clone();
    assert!(sent_elsewhere.starts_with("Bearer hermes_placeholder_") && !sent_elsewhere.contains(KEY));
    assert_eq!(parts[2].split_whitespace().collect::<Vec<_>>(), ["1", "0"], "{out}");
    // No process of the sandbox holds the key in its environment.
    assert_eq!(parts[3].lines().next(), Some("0"), "{out}");

    // Nothing the service keeps holds the key either.
    let kept: Vec<String> = sqlx::query_scalar(
        "SELECT coalesce(content::text, '') FROM messages UNION ALL SELECT coalesce(input::text, '') FROM turns",
    )
    .fetch_all(&env.db)
    .await
    .unwrap();
    assert!(!kept.iter().any(|m| m.contains(KEY)), "no transcript or turn holds the key");
    let _ = std::fs::remove_file(&trusted);
    env.stop().await;
}
