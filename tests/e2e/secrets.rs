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

/// One turn of `helper` in which the model makes `calls` in order, then says "done"; the tool
/// results it was given.
async fn tool_results(env: &TestEnv, key: &str, prompt: &str, calls: Vec<ScriptedReply>) -> Vec<String> {
    for call in calls {
        env.llm.push(call);
    }
    env.llm.push(ScriptedReply::text("done"));
    let body: Value = env.chat(key, ask("helper", prompt)).await.json().await.unwrap();
    assert_eq!(answer_text(&body), "done", "{body}");
    env.llm.requests().last().unwrap().texts_of("tool")
}

/// Runs `command` in the agent's sandbox through a turn; what the tool printed.
async fn shell(env: &TestEnv, key: &str, command: &str) -> String {
    let call = ScriptedReply::tool_call("terminal", json!({ "command": command }));
    tool_results(env, key, "call the API", vec![call]).await.pop().unwrap()
}

/// A service whose sandboxes may reach the two stand-in hosts, the agent `helper` of `acme`
/// with the internet and no approvals, and the team's key `gh` allowed for 127.0.0.2 only.
struct Setup {
    env: TestEnv,
    github: TlsEchoHost,
    elsewhere: TlsEchoHost,
    tenant: hermes_core::TenantId,
    agent: hermes_core::AgentId,
    key: String,
    trusted: std::path::PathBuf,
}

impl Setup {
    async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    /// As [`Setup::start`], the configuration changed by `more` too.
    async fn start_with(more: impl FnOnce(&mut hermes_config::HermesConfig) + Send + 'static) -> Self {
        Self::start_full(None, more).await
    }

    /// As [`Setup::start`], the worker's sandboxes on `sandboxes`.
    async fn start_on(sandboxes: std::sync::Arc<dyn hermes_sandbox::Sandboxes>) -> Self {
        Self::start_full(Some(sandboxes), |_| {}).await
    }

    async fn start_full(
        sandboxes: Option<std::sync::Arc<dyn hermes_sandbox::Sandboxes>>,
        more: impl FnOnce(&mut hermes_config::HermesConfig) + Send + 'static,
    ) -> Self {
        // 127.0.0.2 stands in for the key's host (api.github.com), 127.0.0.3 for any other host.
        let github = TlsEchoHost::start("127.0.0.2", "127.0.0.2").await.unwrap();
        let elsewhere = TlsEchoHost::start("127.0.0.3", "127.0.0.3").await.unwrap();
        let trusted = std::env::temp_dir().join(format!("hermes-test-host-ca-{}.pem", uuid::Uuid::now_v7()));
        std::fs::write(&trusted, &github.ca_pem).unwrap();
        let (ports, ca_file) = (vec![github.addr.port(), elsewhere.addr.port()], trusted.display().to_string());
        let tweak = move |c: &mut hermes_config::HermesConfig| {
            c.sandbox.egress_allow_cidrs = vec!["127.0.0.2/32".into(), "127.0.0.3/32".into()];
            c.sandbox.egress_ports = ports;
            // The proxy verifies the stand-in host against its test CA, as it would a real host
            // against the system's roots.
            c.sandbox.egress_trusted_ca_files = vec![ca_file];
            more(c);
        };
        let env = match sandboxes {
            Some(sandboxes) => TestEnv::start_on(sandboxes, tweak).await,
            None => TestEnv::start_with(Roles::default(), tweak).await,
        };
        let (tenant, agent, key) = env.tenant("acme", "helper").await;
        env.store.turns().set_egress(tenant, agent.id, true).await.unwrap();
        // The commands read the environment, which would otherwise wait for a person's approval.
        sqlx::query("UPDATE agents SET approval_mode = 'off' WHERE id = $1")
            .bind(agent.id.as_uuid())
            .execute(&env.db)
            .await
            .unwrap();
        env.pool_key(tenant, "gh", "team", KEY, "127.0.0.2").await;
        Self { env, github, elsewhere, tenant, agent: agent.id, key, trusted }
    }

    async fn bind(&self, name: &str) {
        let placement = hermes_core::secret_placement::SecretPlacement::default();
        self.env.store.agents().bind_secret(self.tenant, self.agent, name, "gh", &placement).await.unwrap();
    }

    /// Nothing the service keeps holds the key.
    async fn stop(self) {
        let kept: Vec<String> = sqlx::query_scalar(
            "SELECT coalesce(content::text, '') FROM messages UNION ALL SELECT coalesce(input::text, '') FROM turns",
        )
        .fetch_all(&self.env.db)
        .await
        .unwrap();
        assert!(!kept.iter().any(|m| m.contains(KEY)), "no transcript or turn holds the key");
        let _ = std::fs::remove_file(&self.trusted);
        self.env.stop().await;
    }
}

/// curl, Python's requests, git and Node's fetch: real clients, each trusting the CA by its
/// own variable.
#[tokio::test]
async fn a_bound_key_reaches_its_host_from_curl_while_the_sandbox_sees_only_a_placeholder() {
    let setup = Setup::start().await;
    setup.bind("GITHUB_TOKEN").await;
    let Setup { env, github, elsewhere, key, .. } = &setup;

    let (gh, other) = (github.addr.port(), elsewhere.addr.port());
    // The tool's output is redacted for the model (a `Bearer ...` is masked), so what came back
    // is counted: lines holding the placeholder, lines holding the key.
    let seen_back = "| tee /tmp/answer | grep -c \"$GITHUB_TOKEN\"; grep -c {KEY} /tmp/answer";
    let python = format!(
        "python3 -W ignore -c 'import os, requests; print(requests.get(\"https://127.0.0.2:{gh}/user\", \
         headers={{\"Authorization\": \"Bearer \" + os.environ[\"GITHUB_TOKEN\"]}}).text)'"
    );
    // Node's fetch takes the proxy from the variables (NODE_USE_ENV_PROXY, Node 22.21 and 24 on)
    // and trusts the CA by NODE_EXTRA_CA_CERTS.
    let node = format!(
        "node -e 'fetch(\"https://127.0.0.2:{gh}/user\", {{headers: {{Authorization: \"Bearer \" + \
         process.env.GITHUB_TOKEN}}}}).then(r => r.text()).then(console.log, e => console.log(String(e.cause || e)))'"
    );
    let command = format!(
        "echo \"${{GITHUB_TOKEN%${{GITHUB_TOKEN#??????????????????????}}}}\"; echo ---; \
         curl -sS -w '%{{stderr}}%{{http_version}}' https://127.0.0.2:{gh}/user -H \"Authorization: Bearer $GITHUB_TOKEN\" \
           2>/tmp/version {seen_back}; echo ---; \
         printf '%s' '{other_ca}' > /tmp/other-ca.pem; \
         curl -sS --cacert /tmp/other-ca.pem https://127.0.0.3:{other}/user -H \"Authorization: Bearer $GITHUB_TOKEN\" \
           {seen_back}; echo ---; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\000' '\\n' | grep -c {KEY}; \
         echo ---; {python} {seen_back}; echo ---; \
         git -c http.extraHeader=\"Authorization: Basic $(printf 'x-access-token:%s' \"$GITHUB_TOKEN\" | base64 -w0)\" \
           ls-remote https://127.0.0.2:{gh}/acme/tools.git 2>&1 | grep -c {KEY}; echo ---; {node} {seen_back}; echo ---; cat /tmp/version",
        other_ca = elsewhere.ca_pem.trim(),
        seen_back = seen_back.replace("{KEY}", KEY),
    );
    let out = shell(env, key, &command).await;
    let parts: Vec<&str> = out.split("---").map(str::trim).collect();
    assert_eq!(parts.len(), 8, "{out}");
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
    // Python's requests (trusting the CA by REQUESTS_CA_BUNDLE) got the same, and git (by
    // GIT_SSL_CAINFO) sent the key inside Basic credentials, as CI checkouts do; neither saw
    // it come back.
    let seen = github.seen();
    assert_eq!(seen[1].authorization, format!("Bearer {KEY}"), "{out}");
    assert_eq!(parts[4].split_whitespace().collect::<Vec<_>>(), ["1", "0"], "{out}");
    use base64::Engine as _;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{KEY}"));
    assert_eq!(seen[2].authorization, format!("Basic {basic}"), "{out}");
    assert_eq!(parts[5].lines().next(), Some("0"), "{out}");
    // And Node's fetch, the same.
    assert_eq!(github.seen().last().unwrap().authorization, format!("Bearer {KEY}"), "{out}");
    assert_eq!(parts[6].split_whitespace().collect::<Vec<_>>(), ["1", "0"], "{out}");
    // curl asked for HTTP/2 and got it from the proxy.
    assert_eq!(parts[7], "2", "{out}");

    setup.stop().await;
}

/// On Kubernetes (the fake API, whose "pods" are sandboxds on this machine): the pod holds the
/// placeholder and trusts the egress CA, and its curl reaches the key's host with the key,
/// through sandboxd's port, the worker's `Egress` calls and the same proxy as Docker's.
#[tokio::test]
async fn on_kubernetes_a_bound_key_reaches_its_host_through_sandboxd_and_the_workers_proxy() {
    let cluster = crate::kubernetes::fake_api::cluster();
    let sandboxes = crate::kubernetes::fake_api::backend(&cluster, |_| {});
    let setup = Setup::start_on(std::sync::Arc::new(sandboxes)).await;
    setup.bind("GITHUB_TOKEN").await;
    let Setup { env, github, elsewhere, key, .. } = &setup;
    let command = format!(
        "echo \"${{GITHUB_TOKEN%${{GITHUB_TOKEN#??????????????????????}}}}\"; echo ---; \
         curl -sS https://127.0.0.2:{gh}/user -H \"Authorization: Bearer $GITHUB_TOKEN\" | tee answer \
           | grep -c \"$GITHUB_TOKEN\"; grep -c {KEY} answer; echo ---; \
         printf '%s' '{other_ca}' > other-ca.pem; curl -sS --cacert other-ca.pem https://127.0.0.3:{other}/user -H \"Authorization: Bearer $GITHUB_TOKEN\" \
           -o /dev/null -w '%{{http_code}}'",
        gh = github.addr.port(),
        other = elsewhere.addr.port(),
        other_ca = elsewhere.ca_pem.trim(),
    );
    let out = shell(env, key, &command).await;
    let parts: Vec<&str> = out.split("---").map(str::trim).collect();
    assert_eq!(parts.len(), 3, "{out}");
    assert!(parts[0].starts_with("hermes_placeholder_") && parts[0].len() == 22, "{out}");
    assert_eq!(github.seen()[0].authorization, format!("Bearer {KEY}"), "{out}");
    assert_eq!(parts[1].split_whitespace().collect::<Vec<_>>(), ["1", "0"], "{out}");
    assert_eq!(parts[2], "200", "{out}");
    let sent_elsewhere = elsewhere.seen()[0].authorization.clone();
    assert!(sent_elsewhere.starts_with("Bearer hermes_placeholder_") && !sent_elsewhere.contains(KEY));
    setup.stop().await;
}

/// A skill that needs `GITHUB_TOKEN` runs once an admin bound it, and a stdio MCP server whose
/// env says `${GITHUB_TOKEN}` calls the key's host with it: both hold the placeholder, the host
/// gets the key, and what comes back holds the placeholder again.
#[tokio::test]
async fn a_skill_and_a_stdio_mcp_server_use_a_bound_key_through_its_placeholder() {
    let setup = Setup::start().await;
    let Setup { env, github, tenant, agent, key, .. } = &setup;
    let url = format!("https://127.0.0.2:{}/user", github.addr.port());
    let skill_md = format!(
        "---\nname: gh-report\ndescription: Reports on GitHub.\nrequired_environment_variables:\n  \
         - name: GITHUB_TOKEN\n    prompt: A GitHub token\n---\n\nRun `curl -sS {url} -H \
         \"Authorization: Bearer $GITHUB_TOKEN\"` (its scan lets a skill send what it declares).\n"
    );
    crate::admin::save_team_skill(env, *tenant, &skill_md).await;
    env.set_toolsets(*agent, &["terminal", "skills"]).await;
    // A stdio server's `${NAME}` must be one of the agent's bound secrets: refused before.
    let server = json!({"command": "/opt/hermes/test/hermes-mcp-test-server",
                        "env": {"MCP_TEST_TOKEN": "${GITHUB_TOKEN}"}, "tools": {"include": ["call_api"]}});
    let (_, owner) = crate::admin::member(env, *tenant, "owner@acme.test", hermes_core::MemberRole::Owner).await;
    let path = format!("/admin/v1/tenants/{tenant}/agents/helper/mcp-servers/tracker");
    let (status, refused) = owner.call(env, reqwest::Method::PUT, &path, Some(server.clone())).await;
    assert_eq!(status, 400, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("bound secrets"), "{refused}");
    setup.bind("GITHUB_TOKEN").await;
    let (status, saved) = owner.call(env, reqwest::Method::PUT, &path, Some(server)).await;
    assert_eq!(status, 200, "{saved}");

    let calls = vec![
        ScriptedReply::tool_call("skill_view", json!({"name": "gh-report"})),
        ScriptedReply::terminal(format!("curl -sS {url} -H \"Authorization: Bearer $GITHUB_TOKEN\"")),
        ScriptedReply::tool_call("mcp_tracker_call_api", json!({"url": url})),
    ];
    let results = tool_results(env, key, "report on GitHub", calls).await;
    let viewed: Value = serde_json::from_str(&results[0]).unwrap();
    assert_eq!(viewed["environment"]["bound"], json!(["GITHUB_TOKEN"]), "{viewed}");
    assert_eq!(viewed["environment"]["missing"], json!([]), "{viewed}");

    // The skill's command and the MCP server each reached the host with the key.
    let seen = github.seen();
    assert_eq!(seen.len(), 2, "{results:?}");
    assert!(seen.iter().all(|s| s.authorization == format!("Bearer {KEY}")));
    // Both read the host's echo (the credential in it masked for the model), never the key.
    assert!(results[1..].iter().all(|r| r.contains("bad credentials: [REDACTED]")), "{results:?}");
    assert!(!results.iter().any(|r| r.contains(KEY)), "{results:?}");
    setup.stop().await;
}

/// The browser reads no CA variable: it takes the egress CA's stand-in certificate by its pin,
/// so it opens pages on a bound secret's host through the proxy. The pin is for that CA alone:
/// a host whose certificate comes from any other CA the browser does not know stays refused.
#[tokio::test]
async fn the_browser_opens_pages_on_a_bound_secrets_host_by_the_egress_cas_pin_only() {
    let setup = Setup::start_with(|c| {
        c.sandbox.docker.image = "hermes-sandbox:browser-test".into();
        c.sandbox.docker.memory_mb = 1024;
        c.sandbox.docker.pids_limit = 1024;
    })
    .await;
    setup.bind("GITHUB_TOKEN").await;
    let Setup { env, github, elsewhere, agent, key, .. } = &setup;
    env.set_toolsets(*agent, &["browser"]).await;
    let secret_host = format!("https://127.0.0.2:{}/user", github.addr.port());
    let other_host = format!("https://127.0.0.3:{}/user", elsewhere.addr.port());
    let calls = vec![
        ScriptedReply::tool_call("browser_navigate", json!({ "url": secret_host })),
        ScriptedReply::tool_call("browser_navigate", json!({ "url": other_host })),
    ];
    let results = tool_results(env, key, "open both", calls).await;
    let opened: Value = serde_json::from_str(&results[0]).unwrap();
    assert_eq!(opened["success"], true, "{opened}");
    assert!(!github.seen().is_empty(), "the page came from the secret's host, through the proxy");
    let refused: Value = serde_json::from_str(&results[1]).unwrap();
    assert_eq!(refused["success"], false, "{refused}");
    assert!(elsewhere.seen().is_empty(), "no request reached a host with an unknown certificate");
    setup.stop().await;
}
