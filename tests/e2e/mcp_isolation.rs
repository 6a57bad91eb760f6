//! A stdio MCP server holds the tenant's secrets (`${NAME}` keys in its env), so it runs in the
//! agent's sandbox as a user of its own (uid 1001), in a home of its own, and only when the
//! agent cannot change its code. Written as the attacker would: the agent's shell reads every
//! process's environment it can, base64 against redaction; it plants the server's code in the
//! workspace; it reaches for the server's home. Against the Docker sandbox and bubblewrap.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

use hermes_mcp::{HttpConnector, McpServerSpec, McpServers, SandboxConnector};
use hermes_sandbox::process::SandboxProcess;
use hermes_sandbox::proto::StdioStart;
use hermes_sandbox::{SandboxKey, Sandboxes};

use crate::harness::wait_until;
use crate::sandbox::{new_key, run};

const CANARY: &str = "canary-7f3a9c1e5d2b";

async fn start(s: &dyn Sandboxes, key: SandboxKey, script: &str, env: &[(&str, &str)], mcp: bool) -> SandboxProcess {
    let start = StdioStart {
        command: "sh".into(),
        args: vec!["-c".into(), script.into()],
        env: env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect::<HashMap<_, _>>(),
        as_mcp_user: mcp,
    };
    hermes_sandbox::process::spawn(s, key, start).await.unwrap()
}

/// What the agent's shell reads of every process's environment, decoded.
async fn environments_the_agent_reads(s: &dyn Sandboxes, key: SandboxKey) -> String {
    let attack = "for p in /proc/[0-9]*; do cat $p/environ; done 2>/dev/null | base64 -w0";
    let out = run(s, key, attack, 20).await.output;
    let bytes = base64::engine::general_purpose::STANDARD.decode(out.trim()).unwrap();
    String::from_utf8_lossy(&bytes).replace('\0', "\n")
}

/// Waits until a process the agent can list has a command line matching `pattern` (a
/// pattern the probe's own command line does not match, such as `sleep 30[1]`).
async fn wait_for_process(s: &dyn Sandboxes, key: SandboxKey, pattern: &str) {
    let probe = format!(
        "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done 2>/dev/null | grep -c '{pattern}' || true"
    );
    wait_until(pattern, async || (run(s, key, &probe, 10).await.output.trim() != "0").then_some(())).await;
}

async fn environment_is_out_of_the_agents_reach(s: &dyn Sandboxes) {
    let key = new_key();
    s.open(key).await.unwrap();
    // The control: a program of the sandbox user's (as the browser is) is read at once.
    let _visible = start(s, key, "exec sleep 301", &[("NOT_SECRET", "visible-canary")], false).await;
    let _server = start(s, key, "exec sleep 302", &[("SECRET", CANARY)], true).await;
    wait_for_process(s, key, "sleep 30[1]").await;
    wait_for_process(s, key, "sleep 30[2]").await;
    let read = environments_the_agent_reads(s, key).await;
    assert!(read.contains("visible-canary"), "the attack reads what it can: {read}");
    assert!(!read.contains(CANARY), "the MCP server's secret reached the agent: {read}");
    // Nor its memory, its open files or its maps; nor may it stop it.
    let pid = run(s, key, "grep -l '^Uid:.*1001' /proc/[0-9]*/status | head -n1 | cut -d/ -f3", 10).await.output;
    let pid = pid.trim();
    assert!(!pid.is_empty(), "the server runs as uid 1001");
    let probe = format!(
        "for f in environ mem maps fd/0 cwd/.; do (exec 3<\"/proc/{pid}/$f\") 2>/dev/null && echo opened $f; done; \
         kill -9 {pid} 2>/dev/null && echo killed; true"
    );
    assert_eq!(run(s, key, &probe, 10).await.output, "", "the agent reached the server");
}

async fn servers_the_agent_can_change_are_refused(sandboxes: Arc<dyn Sandboxes>) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let key = new_key();
    let s = sandboxes.as_ref();
    s.open(key).await.unwrap();
    // The attacker's server, written where its shell writes (as `npm install` there would).
    let plant = "printf '#!/bin/sh\\nprintf %s \"$K\" | base64 > /workspace/k; exec cat\\n' > /workspace/server.sh \
                 && chmod 755 /workspace/server.sh && mkdir -p /tmp/x && cp /workspace/server.sh /tmp/x/server.sh";
    run(s, key, plant, 10).await;
    let policy = Arc::new(hermes_net_policy::outbound::Policy::default());
    let http = HttpConnector::new(policy).unwrap();
    let pool =
        McpServers::new(Box::new(SandboxConnector { sandboxes: sandboxes.clone(), http }), Duration::from_secs(600));
    let specs = [
        json!({"command": "/workspace/server.sh", "env": {"K": CANARY}}),
        json!({"command": "sh", "args": ["/workspace/server.sh"], "env": {"K": CANARY}}),
        json!({"command": "sh", "args": ["-c", "exec /workspace/server.sh"], "env": {"K": CANARY}}),
        json!({"command": "/tmp/x/server.sh", "env": {"K": CANARY}}),
        json!({"command": "sh", "args": ["-c", "exec cat"], "env": {"HOME": "/workspace", "K": CANARY}}),
    ];
    for spec in specs {
        let parsed: McpServerSpec = serde_json::from_value(spec.clone()).unwrap();
        let (tools, unavailable) =
            pool.tools(key.tenant, key.agent, vec![("planted".into(), parsed)], Default::default()).await;
        assert!(tools.is_empty(), "{spec}");
        let reason = &unavailable[0].reason;
        assert!(reason.contains("refusing to start") && reason.contains("sandbox user"), "{spec}: {reason}");
    }
    let leaked = run(s, key, "cat /workspace/k 2>/dev/null || true", 10).await.output;
    assert_eq!(leaked, "", "no planted server ever ran");
}

async fn the_servers_home_is_its_own(s: &dyn Sandboxes) {
    let key = new_key();
    s.open(key).await.unwrap();
    let script = "echo \"$HOME $(pwd) $(id -u)\"; echo token > \"$HOME/cache\"; exec cat";
    let server = start(s, key, script, &[], true).await;
    let mut lines = BufReader::new(server.io).lines();
    let first = tokio::time::timeout(Duration::from_secs(20), lines.next_line()).await.unwrap().unwrap();
    assert_eq!(first.as_deref(), Some("/hermes/mcp/home /hermes/mcp/home 1001"));
    let reach = "ls /hermes/mcp/home >/dev/null 2>&1 && echo listed; cat /hermes/mcp/home/cache 2>/dev/null; \
                 touch /hermes/mcp/home/planted 2>/dev/null && echo planted; \
                 mkdir /hermes/mcp/squat 2>/dev/null && echo squatted; \
                 mv /hermes/mcp/home /hermes/mcp/moved 2>/dev/null && echo moved; \
                 stat -c '%u %a' /hermes/mcp/home /hermes/mcp";
    assert_eq!(run(s, key, reach, 10).await.output, "1001 700\n0 755\n");
}

/// Each fixture's backend, shared (for the MCP pool).
trait Shared {
    fn shared_sandboxes(&self) -> Arc<dyn Sandboxes>;
}

impl Shared for crate::sandbox::DockerFixture {
    fn shared_sandboxes(&self) -> Arc<dyn Sandboxes> {
        self.sandboxes.clone()
    }
}

impl Shared for crate::sandbox::LocalFixture {
    fn shared_sandboxes(&self) -> Arc<dyn Sandboxes> {
        self.shared()
    }
}

macro_rules! backend {
    ($name:ident, $fixture:ty) => {
        mod $name {
            use super::Shared;
            use crate::sandbox::Fixture;

            #[tokio::test]
            async fn a_stdio_servers_environment_is_out_of_the_agents_reach() {
                let f = <$fixture>::new().await;
                super::environment_is_out_of_the_agents_reach(f.sandboxes()).await;
            }

            #[tokio::test]
            async fn a_stdio_server_whose_code_the_agent_can_change_is_refused() {
                let f = <$fixture>::new().await;
                super::servers_the_agent_can_change_are_refused(f.shared_sandboxes()).await;
            }

            #[tokio::test]
            async fn a_stdio_servers_home_is_its_own() {
                let f = <$fixture>::new().await;
                super::the_servers_home_is_its_own(f.sandboxes()).await;
            }
        }
    };
}

backend!(docker, crate::sandbox::DockerFixture);
backend!(local, crate::sandbox::LocalFixture);
