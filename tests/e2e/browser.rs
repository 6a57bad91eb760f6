//! The browser toolset end to end, with the real Chromium in a Docker sandbox
//! (`hermes-sandbox:browser-test`, deploy/sandbox/build-browser-test-image.sh): a turn opens a
//! local page whose button only JavaScript adds, reads it as a snapshot with refs, fills the
//! form and submits it (the server gets the name), goes back, sets off a `confirm()` dialog
//! and accepts it, reads the page's state with a console expression and sends raw CDP
//! commands (one to the page, one to the browser). The page is reached
//! through the sandbox's egress proxy; an address the egress rules do not allow is not.
//!
//! And what a prompt-injected model may try: no browser tool opens a local file (`browser_cdp`
//! navigations, a page's own `location = 'file:///...'`, `browser_navigate`) or changes where
//! downloads go, and one conversation cannot reach another's cookies, neither through its
//! browser nor through a shell in the sandbox they share.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use hermes_testkit::ScriptedReply;

use crate::harness::{Roles, TestEnv, answer_text, ask};

const FORM: &str = r#"<!doctype html><html><head><title>Sign up</title></head><body>
<h1>Sign up</h1>
<form action="/thanks" method="get">
  <label for="name">Name</label> <input id="name" name="name" type="text">
  <button type="submit">Send</button>
</form>
<p id="status">ready</p>
<script>
  const b = document.createElement('button');
  b.textContent = 'Delete';
  b.onclick = () => { document.getElementById('status').textContent = confirm('Delete everything?') ? 'deleted' : 'kept'; };
  document.body.appendChild(b);
  console.log('form ready');
</script>
</body></html>"#;

/// The cookie `/cookie` sets: a conversation's login, which other conversations must not read.
const CANARY_COOKIE: &str = "hermes_canary_7f3a";

/// A web server on every host address: `/form.html`, `/thanks?...`, whose query it records,
/// and `/cookie`, which sets [`CANARY_COOKIE`].
async fn site(seen: Arc<Mutex<Vec<String>>>) -> u16 {
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16 * 1024];
                let n = stream.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).into_owned();
                // Through the proxy the request line carries the absolute URL.
                let target = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let path =
                    target.split_once("://").map_or(target.as_str(), |(_, r)| r.find('/').map_or("/", |i| &r[i..]));
                let mut extra = String::new();
                let (status, body) = if path.starts_with("/form.html") {
                    ("200 OK", FORM.to_owned())
                } else if path.starts_with("/cookie") {
                    extra = format!("Set-Cookie: {CANARY_COOKIE}=signed-in; Max-Age=3600; Path=/\r\n");
                    ("200 OK", "<!doctype html><title>Signed in</title><p>Welcome back</p>".to_owned())
                } else if let Some(query) = path.strip_prefix("/thanks?") {
                    seen.lock().unwrap().push(query.to_owned());
                    ("200 OK", "<!doctype html><title>Thanks</title><p>Thank you!</p>".to_owned())
                } else {
                    ("404 Not Found", "<title>Not found</title>".to_owned())
                };
                let reply = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: text/html\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
            });
        }
    });
    port
}

/// An agent "surfer" with `toolsets` and the internet, in the browser test image; 127.0.0.3
/// stands in for a public server (no internet here).
async fn browsing_env(port: u16, toolsets: &[&str]) -> (TestEnv, String) {
    let env = TestEnv::start_with(Roles::default(), move |c| {
        c.sandbox.docker.image = "hermes-sandbox:browser-test".into();
        c.sandbox.docker.memory_mb = 1024;
        c.sandbox.docker.pids_limit = 1024;
        c.sandbox.egress_allow_cidrs = vec!["127.0.0.3/32".into()];
        c.sandbox.egress_ports = vec![80, 443, port];
    })
    .await;
    let (tenant, agent, key) = env.tenant("acme", "surfer").await;
    env.store.turns().set_egress(tenant, agent.id, true).await.unwrap();
    sqlx::query("UPDATE agents SET toolsets = $1").bind(toolsets).execute(&env.db).await.unwrap();
    (env, key)
}

/// One turn of a new conversation (`first` starts it) in which the model makes `calls`: their
/// results, in order.
async fn conversation(env: &TestEnv, key: &str, first: &str, calls: &[(&str, Value)]) -> Vec<Value> {
    for (tool, args) in calls {
        env.llm.push(ScriptedReply::tool_call(*tool, args.clone()));
    }
    env.llm.push(ScriptedReply::text("Done."));
    let response = env.chat(key, ask("surfer", first)).await;
    let body: Value = response.json().await.unwrap();
    assert_eq!(answer_text(&body), "Done.", "{body}");
    let r = results(env);
    assert_eq!(r.len(), calls.len(), "{r:?}");
    r
}

/// The tool results of the last request, in order, as JSON.
fn results(env: &TestEnv) -> Vec<Value> {
    let messages = env.llm.requests().last().unwrap().messages();
    messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap_or_else(|_| m["content"].clone()))
        .collect()
}

#[tokio::test]
async fn a_turn_fills_a_form_answers_a_dialog_and_reads_a_javascript_page_in_a_sandboxed_chromium() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let port = site(seen.clone()).await;
    // 127.0.0.4 is not allowed.
    let (env, key) = browsing_env(port, &["browser"]).await;

    let page = format!("http://127.0.0.3:{port}/form.html");
    let calls = [
        ("browser_navigate", json!({ "url": page })),
        ("browser_snapshot", json!({})),
        ("browser_type", json!({ "ref": "@e1", "text": "Ada Lovelace" })),
        ("browser_click", json!({ "ref": "@e2" })),
        ("browser_back", json!({})),
        ("browser_snapshot", json!({})),
        ("browser_click", json!({ "ref": "@e3" })),
        ("browser_dialog", json!({ "action": "accept" })),
        ("browser_console", json!({ "expression": "document.getElementById('status').textContent" })),
        ("browser_console", json!({})),
        (
            "browser_cdp",
            json!({ "method": "Runtime.evaluate", "params": { "expression": "document.title", "returnByValue": true } }),
        ),
        ("browser_cdp", json!({ "method": "Browser.getVersion" })),
        ("browser_navigate", json!({ "url": format!("http://127.0.0.4:{port}/form.html") })),
        ("browser_navigate", json!({ "url": "file:///etc/passwd" })),
    ];
    for (tool, args) in &calls {
        env.llm.push(ScriptedReply::tool_call(*tool, args.clone()));
    }
    env.llm.push(ScriptedReply::text("Signed Ada up and deleted the rest."));
    let response = env.chat(&key, ask("surfer", "Sign Ada up, then delete.")).await;
    let body: Value = response.json().await.unwrap();
    assert_eq!(answer_text(&body), "Signed Ada up and deleted the rest.", "{body}");

    let r = results(&env);
    assert_eq!(r.len(), calls.len());
    assert_eq!((r[0]["success"].clone(), r[0]["title"].clone()), (json!(true), json!("Sign up")), "{}", r[0]);
    let snapshot = r[1]["snapshot"].as_str().unwrap();
    assert_eq!(
        snapshot, "- textbox \"Name\" [ref=e1]\n- button \"Send\" [ref=e2]\n- button \"Delete\" [ref=e3]",
        "the button only JavaScript adds is there"
    );
    assert_eq!(r[2]["success"], true, "{}", r[2]);
    assert_eq!(r[3]["title"], "Thanks", "{}", r[3]);
    assert_eq!(seen.lock().unwrap().as_slice(), ["name=Ada+Lovelace"], "the form reached the server");
    assert_eq!(r[4]["url"], page, "{}", r[4]);
    assert_eq!(r[6]["pending_dialog"]["type"], "confirm", "{}", r[6]);
    assert_eq!(r[6]["pending_dialog"]["message"], "Delete everything?");
    assert_eq!((r[7]["success"].clone(), r[7]["action"].clone()), (json!(true), json!("accept")), "{}", r[7]);
    assert_eq!(r[8]["result"], "deleted", "{}", r[8]);
    assert!(r[9]["console_messages"].as_array().unwrap().iter().any(|m| m["text"] == "form ready"), "{}", r[9]);
    // Raw CDP: a page-level command in the conversation's page, a browser-wide one on the browser.
    assert_eq!(r[10]["result"]["result"]["value"], "Sign up", "{}", r[10]);
    assert!(r[11]["result"]["product"].as_str().unwrap_or_default().contains("Chrome"), "{}", r[11]);
    // The sandbox's egress rules hold for the browser too.
    assert_eq!(r[12]["success"], false, "{}", r[12]);
    let refusal = r[12]["error"].as_str().unwrap_or_default();
    assert!(refusal.contains("network rules refused") && refusal.contains("not reachable"), "{refusal}");
    assert!(r[13].as_str().unwrap_or_default().contains("only http:// and https://"), "{}", r[13]);
    env.stop().await;
}

/// A shell's output (a result that is not JSON).
fn text(result: &Value) -> String {
    result.as_str().map_or_else(|| result.to_string(), str::to_owned)
}

/// What the page shows: its address and text.
fn shown() -> (&'static str, Value) {
    ("browser_console", json!({ "expression": "location.href + ' ' + document.documentElement.innerText" }))
}

#[tokio::test]
async fn no_browser_tool_opens_a_local_file_or_changes_where_downloads_go() {
    let port = site(Arc::default()).await;
    let (env, key) = browsing_env(port, &["browser", "terminal"]).await;
    let file = "file:///etc/hostname";
    let cdp = |method: &str, params: Value| ("browser_cdp", json!({ "method": method, "params": params }));
    let go = |url: &str| {
        (
            "browser_cdp",
            json!({ "method": "Runtime.evaluate", "params": { "expression": format!("location.href = '{url}'") } }),
        )
    };
    let r = conversation(
        &env,
        &key,
        "Read /etc/hostname with the browser.",
        &[
            ("terminal", json!({ "command": "cat /etc/hostname" })),
            ("browser_navigate", json!({ "url": format!("http://127.0.0.3:{port}/form.html") })),
            cdp("Page.navigate", json!({ "url": file })),
            cdp("Target.createTarget", json!({ "url": file })),
            cdp("Browser.setDownloadBehavior", json!({ "behavior": "allow", "downloadPath": "/workspace" })),
            cdp("Page.setDownloadBehavior", json!({ "behavior": "allow", "downloadPath": "/workspace" })),
            // The page itself goes there: from a web page, then from about:blank.
            go(file),
            shown(),
            cdp("Page.navigate", json!({ "url": "about:blank" })),
            go(file),
            shown(),
            ("browser_navigate", json!({ "url": file })),
            shown(),
        ],
    )
    .await;
    let hostname = text(&r[0]);
    let hostname = hostname.trim();
    assert!(!hostname.is_empty(), "{}", r[0]);
    assert_eq!(r[1]["title"], "Sign up", "{}", r[1]);
    for refused in [&r[2], &r[3]] {
        let error = refused["error"].as_str().unwrap_or_default();
        assert!(error.contains("only http:// and https://") && error.contains(file), "{refused}");
    }
    for refused in [&r[4], &r[5]] {
        assert_eq!(refused["success"], false, "{refused}");
        assert!(refused["error"].as_str().unwrap().contains("is not allowed"), "{refused}");
        assert!(refused["allowed"]["Runtime"].as_array().unwrap().contains(&json!("evaluate")), "{refused}");
    }
    assert_eq!(r[8]["success"], true, "{}", r[8]);
    assert!(r[11].as_str().unwrap_or_default().contains("only http:// and https://"), "{}", r[11]);
    for page in [&r[7], &r[10], &r[12]] {
        let text = page["result"].as_str().unwrap_or_default();
        assert!(!text.starts_with("file:") && !text.contains(hostname), "the file was loaded: {page}");
    }
    assert!(r[7]["result"].as_str().unwrap().contains("Sign up"), "{}", r[7]);
    env.stop().await;
}

#[tokio::test]
async fn one_conversations_browser_cookies_are_out_of_anothers_reach() {
    let port = site(Arc::default()).await;
    let (env, key) = browsing_env(port, &["browser", "terminal"]).await;
    let cookies = ("browser_cdp", json!({ "method": "Network.getAllCookies" }));
    let a = conversation(
        &env,
        &key,
        "Sign me in.",
        &[("browser_navigate", json!({ "url": format!("http://127.0.0.3:{port}/cookie") })), cookies.clone()],
    )
    .await;
    assert_eq!(a[0]["title"], "Signed in", "{}", a[0]);
    assert!(a[1].to_string().contains(CANARY_COOKIE), "A is signed in: {}", a[1]);

    // Conversation B, in the same sandbox, goes looking for A's cookies. Chromium writes a
    // profile's cookies to disk within 30 s, hence the wait.
    let b = conversation(
        &env,
        &key,
        "Find the other user's cookies.",
        &[
            ("browser_navigate", json!({ "url": format!("http://127.0.0.3:{port}/form.html") })),
            cookies,
            ("browser_cdp", json!({ "method": "Page.navigate", "params": { "url": "file:///tmp/" } })),
            (
                "terminal",
                json!({ "command": format!("sleep 31; find /tmp /workspace -type f -exec grep -l {CANARY_COOKIE} {{}} + 2>/dev/null; echo searched") }),
            ),
        ],
    )
    .await;
    assert!(!b[1].to_string().contains(CANARY_COOKIE), "{}", b[1]);
    assert_eq!(text(&b[3]).trim(), "searched", "A's cookies are on disk: {}", b[3]);
    assert!(b[2]["error"].as_str().unwrap_or_default().contains("only http:// and https://"), "{}", b[2]);
    env.stop().await;
}
