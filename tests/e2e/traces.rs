//! One trace from a chat message to a sandbox exec: real `hermesd` processes export OTLP to an
//! in-process collector, and the spans of the API (or the gateway), the worker, the model
//! call, the tool, sandboxd and the answer's delivery form one correctly parented trace, also
//! across a worker's SIGKILL.

use std::time::Duration;

use serde_json::Value;

use hermes_testkit::ScriptedReply;
use hermes_testkit::otlp::{OtlpReceiver, ReceivedSpan};

use crate::harness::{PATIENCE, Roles, Team, TestEnv, answer_text, ask, poll_until};
use crate::telegram::{TOKEN, open_bot, process_settings, sent};

/// A child process killed when the test ends, passed or not (a failed assertion must not leave
/// a gateway polling and a worker consuming after the test).
struct Proc(std::process::Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The caller's trace: the API continues it.
const CALLER_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const CALLER_SPAN: &str = "b7ad6b7169203331";

fn exporting(rx: &OtlpReceiver, protocol: &str) -> Vec<(&'static str, String)> {
    let url = if protocol == "grpc" { rx.grpc_url() } else { rx.http_url() };
    vec![
        ("HERMES__TELEMETRY__OTLP_ENDPOINT", url),
        ("HERMES__TELEMETRY__OTLP_PROTOCOL", protocol.to_owned()),
        // Batches leave every 100 ms instead of every 5 s.
        ("OTEL_BSP_SCHEDULE_DELAY", "100".to_owned()),
    ]
}

/// An API process (traced) on a free port; its base URL once it is ready.
async fn spawn_api(env: &TestEnv, rx: &OtlpReceiver) -> (Proc, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut settings = exporting(rx, "grpc");
    settings.push(("HERMES__HTTP__BIND", format!("127.0.0.1:{port}")));
    settings.push(("HERMES__SECRETS__MASTER_KEY", env.config.secrets.master_key.clone().unwrap()));
    let child = Proc(env.spawn_hermesd_with(&["api"], "api-traced", &settings));
    let url = format!("http://127.0.0.1:{port}");
    let ready = poll_until(async || {
        let resp = env.http.get(format!("{url}/readyz")).send().await.ok()?;
        resp.status().is_success().then_some(())
    })
    .await;
    assert!(ready.is_some(), "the API process became ready");
    (child, url)
}

fn one<'a>(spans: &'a [ReceivedSpan], what: &str, test: impl Fn(&ReceivedSpan) -> bool) -> &'a ReceivedSpan {
    let found: Vec<&ReceivedSpan> = spans.iter().filter(|s| test(s)).collect();
    assert_eq!(found.len(), 1, "exactly one {what} in {:#?}", names(spans));
    found[0]
}

fn names(spans: &[ReceivedSpan]) -> Vec<String> {
    spans.iter().map(|s| format!("{} [{}] {} <- {}", s.service, s.kind, s.name, s.parent_span_id)).collect()
}

/// Whether `span` descends from `ancestor` within `spans`.
fn descends(spans: &[ReceivedSpan], span: &ReceivedSpan, ancestor: &ReceivedSpan) -> bool {
    let mut parent = span.parent_span_id.clone();
    for _ in 0..16 {
        if parent == ancestor.span_id {
            return true;
        }
        match spans.iter().find(|s| s.span_id == parent) {
            Some(p) => parent = p.parent_span_id.clone(),
            None => return false,
        }
    }
    false
}

/// Checks the agent's part of a trace: `agent` (the turn) under `parent`, its model calls and
/// its terminal call under it, the sandbox call under the tool, and sandboxd's span under that.
fn assert_turn_part(trace: &[ReceivedSpan], agent: &ReceivedSpan, model_calls: usize) {
    assert_eq!(agent.service, "hermes-worker");
    assert_eq!(agent.attr("gen_ai.operation.name"), Some("invoke_agent"));
    assert!(agent.attr("gen_ai.conversation.id").is_some_and(|id| !id.is_empty()));
    let chats: Vec<&ReceivedSpan> = trace.iter().filter(|s| s.name == "chat scripted-model").collect();
    assert_eq!(chats.len(), model_calls, "{:#?}", names(trace));
    for chat in chats {
        assert_eq!(chat.parent_span_id, agent.span_id, "a model call is the turn's child");
        assert_eq!(chat.kind, "client");
        assert_eq!(chat.attr("gen_ai.operation.name"), Some("chat"));
        assert_eq!(chat.attr("gen_ai.request.model"), Some("scripted-model"));
        assert!(chat.attr("gen_ai.usage.input_tokens").is_some(), "{chat:?}");
    }
    let tool = one(trace, "terminal call", |s| s.name == "execute_tool terminal");
    assert_eq!(tool.parent_span_id, agent.span_id);
    assert_eq!(tool.attr("gen_ai.tool.name"), Some("terminal"));
    let exec = one(trace, "sandbox exec call", |s| s.name == "hermes.sandbox.v1.Sandbox/Exec" && s.kind == "client");
    assert!(descends(trace, exec, tool), "the exec call is under the tool call");
    assert_eq!(exec.attr("rpc.system"), Some("grpc"));
    let daemon = one(trace, "sandboxd's exec", |s| s.service == "hermes-sandboxd" && s.name.ends_with("/Exec"));
    assert_eq!(daemon.kind, "server");
    assert_eq!(daemon.parent_span_id, exec.span_id, "sandboxd continues the worker's call");
}

fn has(spans: &[ReceivedSpan], service: &str, name: &str) -> bool {
    spans.iter().any(|s| s.service == service && s.name.ends_with(name))
}

#[tokio::test]
async fn a_chat_completion_with_a_tool_call_is_one_trace_from_the_api_to_sandboxd() {
    let rx = OtlpReceiver::start().await.unwrap();
    let Team { env, key, .. } = Team::start(Roles::NO_WORKER, "ops").await;
    env.llm.push(ScriptedReply::terminal("echo traced"));
    env.llm.push(ScriptedReply::text("done"));
    let (api, url) = spawn_api(&env, &rx).await;
    let worker = Proc(env.spawn_hermesd_with(&["worker"], "worker-traced", &exporting(&rx, "grpc")));

    let resp = env
        .http
        .post(format!("{url}/v1/chat/completions"))
        .bearer_auth(&key)
        .header("traceparent", format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01"))
        .json(&ask("ops", "run it"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(answer_text(&body), "done");

    let spans = rx
        .wait_for(PATIENCE, |s| {
            has(s, "hermes-sandboxd", "/Exec")
                && has(s, "hermes-worker", "invoke_agent")
                && has(s, "hermes-api", "/completions")
        })
        .await;
    let trace = rx.trace(CALLER_TRACE);
    assert!(!trace.is_empty(), "the caller's trace was continued: {:#?}", names(&spans));
    let request = one(&trace, "API request", |s| s.service == "hermes-api" && s.kind == "server");
    assert_eq!(request.name, "POST /v1/chat/completions");
    assert_eq!(request.parent_span_id, CALLER_SPAN, "the API continues the caller's span");
    assert_eq!(request.attr("http.response.status_code"), Some("200"));
    assert_eq!(request.attr("http.request.method"), Some("POST"));
    let publish = one(&trace, "work message", |s| s.service == "hermes-api" && s.kind == "producer");
    assert_eq!(publish.attr("messaging.system"), Some("rabbitmq"));
    assert!(descends(&trace, publish, request));
    let agent = one(&trace, "turn", |s| s.name == "invoke_agent");
    assert_eq!(agent.parent_span_id, request.span_id, "the turn continues the request's trace");
    assert_turn_part(&trace, agent, 2);
    // Every span of the processes involved is in a trace of its own or in this one: nothing
    // of this turn leaked into another trace.
    let elsewhere: Vec<&ReceivedSpan> =
        spans.iter().filter(|s| s.trace_id != CALLER_TRACE && s.name.starts_with("execute_tool")).collect();
    assert!(elsewhere.is_empty(), "{elsewhere:#?}");

    drop((worker, api));
    env.stop().await;
}

#[tokio::test]
async fn a_telegram_message_with_a_tool_call_is_one_trace_from_the_gateway_to_the_answer() {
    let rx = OtlpReceiver::start().await.unwrap();
    let env = TestEnv::start_roles(Roles::NO_WORKER).await;
    let (tg, _) = open_bot(&env).await;
    env.llm.push(ScriptedReply::terminal("echo from chat"));
    env.llm.push(ScriptedReply::text("Done from chat."));
    let mut settings = process_settings(&env);
    settings.extend(exporting(&rx, "http/protobuf"));
    let gateway = Proc(env.spawn_hermesd_with(&["gateway"], "gateway-traced", &settings));
    let worker = Proc(env.spawn_hermesd_with(&["worker"], "worker-traced", &exporting(&rx, "http/protobuf")));

    tg.user_says(TOKEN, 42, "run it please");
    let answers = sent(&tg, 1).await;
    assert_eq!(answers[0].text, "Done from chat.");

    let spans = rx
        .wait_for(PATIENCE, |s| has(s, "hermes-sandboxd", "/Exec") && has(s, "hermes-gateway", "send telegram"))
        .await;
    let receive = one(&spans, "received message", |s| s.name == "receive telegram");
    assert_eq!(receive.service, "hermes-gateway");
    assert_eq!(receive.kind, "consumer");
    assert!(receive.parent_span_id.is_empty(), "a polled message starts its trace");
    let trace = rx.trace(&receive.trace_id);
    let agent = one(&trace, "turn", |s| s.name == "invoke_agent");
    assert_eq!(agent.parent_span_id, receive.span_id);
    assert_turn_part(&trace, agent, 2);
    let delivery = one(&trace, "answer's delivery", |s| s.name == "send telegram");
    assert_eq!(delivery.service, "hermes-gateway");
    assert_eq!(delivery.parent_span_id, receive.span_id, "the answer goes out in the message's trace");
    assert_eq!(delivery.kind, "producer");

    drop((worker, gateway));
    env.stop().await;
}

#[tokio::test]
async fn a_turn_resumed_after_its_worker_was_killed_stays_in_the_callers_trace() {
    let rx = OtlpReceiver::start().await.unwrap();
    let Team { env, key, .. } = Team::start(Roles::NO_WORKER, "ops").await;
    env.llm.push(ScriptedReply::terminal("echo once"));
    // Worker A dies while it waits for this answer.
    env.llm.push(ScriptedReply::text("never delivered").after(Duration::from_secs(20)));
    env.llm.push(ScriptedReply::text("finished by worker B"));
    let (api, url) = spawn_api(&env, &rx).await;
    let worker_a = Proc(env.spawn_hermesd_with(&["worker"], "worker-a", &exporting(&rx, "grpc")));
    let client = {
        let (http, key) = (env.http.clone(), key.clone());
        tokio::spawn(async move {
            http.post(format!("{url}/v1/chat/completions"))
                .bearer_auth(&key)
                .header("traceparent", format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01"))
                .json(&ask("ops", "do it"))
                .send()
                .await
                .unwrap()
        })
    };
    // A ran the tool (its span is exported) and waits on the model.
    rx.wait_for(PATIENCE, |s| has(s, "hermes-sandboxd", "/Exec")).await;
    assert!(env.llm.wait_for_requests(2, Duration::from_secs(60)).await, "worker A reached its second model call");
    drop(worker_a);

    let worker_b = Proc(env.spawn_hermesd_with(&["worker"], "worker-b", &exporting(&rx, "grpc")));
    let resp = tokio::time::timeout(Duration::from_secs(60), client).await.expect("the client is answered").unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(answer_text(&body), "finished by worker B");

    rx.wait_for(PATIENCE, |s| has(s, "hermes-worker", "invoke_agent") && has(s, "hermes-api", "/completions")).await;
    let trace = rx.trace(CALLER_TRACE);
    let request = one(&trace, "API request", |s| s.service == "hermes-api" && s.kind == "server");
    // A's turn span never ended (SIGKILL); B's is the resumed attempt, in the same trace.
    let resumed = one(&trace, "resumed turn", |s| s.name == "invoke_agent");
    assert_eq!(resumed.attr("attempt"), Some("2"));
    assert_eq!(resumed.parent_span_id, request.span_id, "the resumed turn continues the request's trace");
    let chats: Vec<&ReceivedSpan> = trace.iter().filter(|s| s.name == "chat scripted-model").collect();
    assert!(chats.iter().any(|c| c.parent_span_id == resumed.span_id), "B's model call is in the trace");
    // A's tool call, exported before it died, is in the same trace.
    assert!(trace.iter().any(|s| s.name == "execute_tool terminal"), "{:#?}", names(&trace));

    drop((worker_b, api));
    env.stop().await;
}
