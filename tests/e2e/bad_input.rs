//! Bad requests get OpenAI-style errors and write nothing.

use serde_json::{Value, json};

use crate::harness::{Roles, TestEnv, ask};

async fn assert_error(resp: reqwest::Response, status: u16, code: &str) {
    assert_eq!(resp.status(), status);
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("application/json"));
    let body: Value = resp.json().await.unwrap();
    let err = &body["error"];
    assert!(err["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
    assert!(err["type"].is_string(), "{body}");
    assert_eq!(err["code"], code, "{body}");
}

#[tokio::test]
async fn bad_requests_get_openai_errors_and_write_nothing() {
    let env =
        TestEnv::start_with(Roles { worker: false, scheduler: false }, |c| c.http.max_body_bytes = 64 * 1024).await;
    let (_, _, key) = env.tenant("acme", "helper").await;
    let url = format!("{}/v1/chat/completions", env.api_url);
    let ok_body = ask("helper", "hi");

    let resp = env.http.post(&url).json(&ok_body).send().await.unwrap();
    assert_error(resp, 401, "invalid_api_key").await;
    let resp = env
        .http
        .post(&url)
        .bearer_auth("hk_000000000000_wrongwrongwrongwrongwrongwrongwr")
        .json(&ok_body)
        .send()
        .await
        .unwrap();
    assert_error(resp, 401, "invalid_api_key").await;
    let resp = env.http.post(&url).header("authorization", "Basic abc").json(&ok_body).send().await.unwrap();
    assert_error(resp, 401, "invalid_api_key").await;

    let resp = env
        .http
        .post(&url)
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .body("{\"model\": \"helper\", \"messages\": [")
        .send()
        .await
        .unwrap();
    assert_error(resp, 400, "invalid_json").await;

    let resp = env.chat(&key, json!({"model": "helper", "messages": []})).await;
    assert_error(resp, 400, "empty_messages").await;

    let resp = env.chat(&key, ask("no-such-agent", "hi")).await;
    assert_error(resp, 404, "model_not_found").await;

    let huge = "x".repeat(100 * 1024);
    let resp = env.chat(&key, ask("helper", huge)).await;
    assert_error(resp, 413, "body_too_large").await;

    let resp = env.chat_with(&key, ok_body.clone(), Some("01a22a1f-005f-722f-9e12-95af4ad8e05e")).await;
    assert_error(resp, 404, "session_not_found").await;

    // Control characters in the session headers: a tab gets our error; CR, LF and NUL never
    // get past the HTTP parser (nor can clients send them), which answers a bare 400.
    let resp = env.http.post(&url).bearer_auth(&key).header("x-hermes-session-key", "team\tone").json(&ok_body).send();
    assert_error(resp.await.unwrap(), 400, "invalid_session_key").await;
    for bad in ["a\0b", "a\rb", "a\nX-Injected: 1"] {
        let addr = env.api_url.trim_start_matches("http://").to_owned();
        let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let body = ok_body.to_string();
        let request = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\n\
             X-Hermes-Session-Id: {bad}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        );
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer).await;
        assert!(answer.starts_with("HTTP/1.1 400") || answer.starts_with("HTTP/1.1 404"), "{bad:?}: {answer}");
    }

    // The Responses and Runs APIs check their input the same way.
    let responses = format!("{}/v1/responses", env.api_url);
    let deep = json!([[[[[[[[[["deep"]]]]]]]]]]);
    for (body, status, code) in [
        (json!({"model": "helper"}), 400, "missing_required_parameter"),
        (
            json!({"input": [{"role": "user", "content": [{"type": "input_text", "text": "x", "x": deep}]}]}),
            400,
            "content_too_deep",
        ),
        (json!({"input": "x".repeat(65_537)}), 413, "body_too_large"),
        (json!({"input": "hi", "previous_response_id": "resp_0123"}), 404, "response_not_found"),
    ] {
        let resp = env.http.post(&responses).bearer_auth(&key).json(&body).send().await.unwrap();
        assert_error(resp, status, code).await;
    }
    let runs = format!("{}/v1/runs", env.api_url);
    let resp = env.http.post(&runs).bearer_auth(&key).json(&json!({"input": "hi", "session_id": "nope"})).send();
    assert_error(resp.await.unwrap(), 404, "session_not_found").await;

    // Text Postgres cannot hold (a NUL, found by schemathesis) is the client's mistake, not a 500.
    let body = json!({"name": "hook\u{0}x", "prompt": "p"});
    let resp =
        env.http.post(format!("{}/v1/webhooks", env.api_url)).bearer_auth(&key).json(&body).send().await.unwrap();
    assert_error(resp, 400, "invalid_value").await;

    let resp = env.http.get(format!("{}/v1/nothing", env.api_url)).bearer_auth(&key).send().await.unwrap();
    assert_error(resp, 404, "not_found").await;
    let resp = env.http.get(&url).bearer_auth(&key).send().await.unwrap();
    assert_error(resp, 405, "method_not_allowed").await;

    for table in ["sessions", "turns", "messages"] {
        assert_eq!(env.count(&format!("SELECT count(*) FROM {table}")).await, 0, "{table} must stay empty");
    }
    assert!(env.llm.requests().is_empty());
    env.stop().await;
}
