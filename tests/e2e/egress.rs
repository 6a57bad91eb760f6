//! Sandbox internet access: none unless the agent opted in, and then only public addresses,
//! through the worker's egress proxy (sandboxd relays the sandbox's `HTTP_PROXY` to it).

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use hermes_testkit::ScriptedReply;

use crate::harness::{Roles, TestEnv, answer_text, ask};

/// A tiny web server on every host address, answering one fixed page.
async fn web_server() -> u16 {
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf).await;
                let body = "hello-from-outside\n";
                let reply =
                    format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
                let _ = stream.write_all(reply.as_bytes()).await;
            });
        }
    });
    port
}

/// Runs `command` in the agent's sandbox through a turn; returns what the tool printed.
async fn shell(env: &TestEnv, key: &str, model: &str, command: &str) -> String {
    env.llm.push(ScriptedReply::tool_call("terminal", json!({ "command": command })));
    env.llm.push(ScriptedReply::text("done"));
    let body: Value = env.chat(key, ask(model, "fetch")).await.json().await.unwrap();
    assert_eq!(answer_text(&body), "done");
    let request = env.llm.requests().last().unwrap().messages();
    request.iter().rev().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn sandboxes_reach_only_public_addresses_and_only_when_the_agent_opted_in() {
    // 127.0.0.3 stands in for a public server: no public internet is reachable from the tests.
    let port = web_server().await;
    let env = TestEnv::start_with(Roles::default(), |c| {
        c.sandbox.egress_allow_cidrs = vec!["127.0.0.3/32".into()];
        c.sandbox.egress_ports = vec![80, 443, port];
    })
    .await;
    let (tenant, _, key) = env.tenant("acme", "closed").await;
    let open = env.agent(tenant, "open").await;
    env.store.turns().set_egress(tenant, open.id, true).await.unwrap();
    // What any HTTP client does with HTTP_PROXY (the test image's busybox wget crashes with a
    // proxy set, so the request is written by hand).
    let fetch = |url: &str| {
        format!(
            "printf 'GET {url} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' | {{ p=${{HTTP_PROXY#http://}}; nc -w 5 ${{p%:*}} ${{p##*:}}; }} 2>&1 | tr -d '\\r'"
        )
    };
    let connect = |target: &str| {
        format!("printf 'CONNECT {target} HTTP/1.1\\r\\n\\r\\n' | nc -w 5 127.0.0.1 3128 2>&1 | tr -d '\\r'")
    };
    let page = format!("http://127.0.0.3:{port}/");

    // Without the opt-in, nothing goes out.
    let closed = shell(&env, &key, "closed", &fetch(&page)).await;
    assert!(closed.starts_with("HTTP/1.1 403 Forbidden") && closed.contains("disabled for this agent"), "{closed}");

    // With it, an allowed address answers...
    let reached = shell(&env, &key, "open", &fetch(&page)).await;
    assert!(reached.starts_with("HTTP/1.1 200 OK") && reached.contains("hello-from-outside"), "{reached}");
    // ...and metadata, private and loopback addresses stay unreachable, whatever the name.
    for target in ["http://169.254.169.254/latest/meta-data/", "http://10.1.2.3/", &format!("http://127.0.0.2:{port}/")]
    {
        let refused = shell(&env, &key, "open", &fetch(target)).await;
        assert!(refused.starts_with("HTTP/1.1 403 Forbidden") && refused.contains("metadata"), "{target}: {refused}");
    }
    let tunnel = shell(&env, &key, "open", &connect("169.254.169.254:443")).await;
    assert!(tunnel.starts_with("HTTP/1.1 403 Forbidden"), "{tunnel}");
    let tunnel = shell(&env, &key, "open", &connect(&format!("127.0.0.3:{port}"))).await;
    assert!(tunnel.starts_with("HTTP/1.1 200 Connection established"), "{tunnel}");
    // Only the open ports: no mail relaying from a tenant's code.
    let smtp = shell(&env, &key, "open", &connect("127.0.0.3:25")).await;
    assert!(smtp.starts_with("HTTP/1.1 403 Forbidden") && smtp.contains("port 25 is not open"), "{smtp}");
    // Only the proxy leads out: a direct connection has no route.
    let direct = shell(&env, &key, "open", &format!("echo x | nc -w 3 127.0.0.3 {port} 2>&1; echo code=$?")).await;
    assert!(!direct.contains("hello-from-outside") && !direct.contains("code=0"), "{direct}");
    env.stop().await;
}
