//! The Responses API: a response is a turn; chaining by id or conversation name continues its
//! session (or branches it), instructions carry forward, `store: false` leaves nothing to read
//! back, and the stream's events come in upstream's order with a gapless `sequence_number`.

use serde_json::{Value, json};

use hermes_testkit::ScriptedReply;

use crate::harness::{Team, TestEnv, sse_events};

async fn respond(env: &TestEnv, key: &str, body: Value) -> (u16, Value) {
    let resp =
        env.http.post(format!("{}/v1/responses", env.api_url)).bearer_auth(key).json(&body).send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

fn output_text(response: &Value) -> String {
    response["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "message")
        .flat_map(|i| i["content"].as_array().unwrap().iter())
        .filter_map(|c| c["text"].as_str())
        .collect()
}

/// The texts of the user and assistant messages the model saw last.
fn seen_by_model(env: &TestEnv) -> Vec<String> {
    let requests = env.llm.requests();
    let last = requests.last().unwrap().messages();
    last.iter()
        .filter(|m| m["role"] == "user" || m["role"] == "assistant")
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn responses_chain_by_id_and_by_conversation_and_branch_from_earlier_ones() {
    let Team { env, key, .. } = Team::acme("helper").await;
    env.llm.push(ScriptedReply::text("Paris."));
    let (status, first) =
        respond(&env, &key, json!({"model": "helper", "input": "Capital of France?", "instructions": "Be terse."}))
            .await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["object"], "response");
    assert_eq!(first["status"], "completed");
    assert_eq!(output_text(&first), "Paris.");
    assert!(first["id"].as_str().unwrap().starts_with("resp_"));
    assert_eq!(first["instructions"], "Be terse.");
    assert!(first["usage"]["total_tokens"].as_u64().unwrap() > 0);
    let first_id = first["id"].as_str().unwrap();

    // Continuing by id: the server has the history, and the instructions carry forward.
    env.llm.push(ScriptedReply::text("About 2.1 million."));
    let (status, second) = respond(&env, &key, json!({"input": "Population?", "previous_response_id": first_id})).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["previous_response_id"], first_id);
    assert_eq!(second["instructions"], "Be terse.");
    assert_eq!(seen_by_model(&env), ["Capital of France?", "Paris.", "Population?"]);
    let sent = env.llm.requests().last().unwrap().messages();
    assert!(sent.iter().any(|m| m["role"] == "system" && m["content"] == "Be terse."));
    assert_eq!(env.count("SELECT count(*) FROM sessions").await, 1);

    // Continuing the first response again branches: a fork without the second exchange.
    env.llm.push(ScriptedReply::text("Euro."));
    let (status, branch) = respond(&env, &key, json!({"input": "Currency?", "previous_response_id": first_id})).await;
    assert_eq!(status, 200, "{branch}");
    assert_eq!(seen_by_model(&env), ["Capital of France?", "Paris.", "Currency?"]);
    assert_eq!(env.count("SELECT count(*) FROM sessions WHERE lineage = 'fork'").await, 1);

    // GET returns the stored object; DELETE forgets it, and it can no longer be continued.
    let (_, got) =
        crate::openapi::call(&env, &key, "get", &format!("/v1/responses/{}", second["id"].as_str().unwrap()), None)
            .await;
    assert_eq!(got["id"], second["id"]);
    assert_eq!(output_text(&got), "About 2.1 million.");
    assert_eq!(got["previous_response_id"], first_id);
    let deleted = env.http.delete(format!("{}/v1/responses/{first_id}", env.api_url)).bearer_auth(&key).send().await;
    let deleted: Value = deleted.unwrap().json().await.unwrap();
    assert_eq!(deleted, json!({"id": first_id, "object": "response", "deleted": true}));
    let (status, gone) = respond(&env, &key, json!({"input": "More?", "previous_response_id": first_id})).await;
    assert_eq!(status, 404, "{gone}");
    assert_eq!(gone["error"]["code"], "response_not_found");
    let again = env.http.get(format!("{}/v1/responses/{first_id}", env.api_url)).bearer_auth(&key).send().await;
    assert_eq!(again.unwrap().status(), 404);

    // A named conversation continues from its latest response.
    env.llm.push(ScriptedReply::text("Noted: blue."));
    env.llm.push(ScriptedReply::text("Blue."));
    let (status, _) = respond(&env, &key, json!({"input": "My colour is blue.", "conversation": "prefs"})).await;
    assert_eq!(status, 200);
    let (status, recalled) = respond(&env, &key, json!({"input": "My colour?", "conversation": "prefs"})).await;
    assert_eq!(status, 200);
    assert_eq!(seen_by_model(&env), ["My colour is blue.", "Noted: blue.", "My colour?"]);
    assert!(recalled["previous_response_id"].as_str().unwrap().starts_with("resp_"));

    // Both ways of chaining at once are refused.
    let (status, both) =
        respond(&env, &key, json!({"input": "x", "conversation": "prefs", "previous_response_id": first_id})).await;
    assert_eq!(status, 400, "{both}");
    env.stop().await;
}

#[tokio::test]
async fn unstored_responses_cannot_be_read_or_continued_and_other_tenants_see_nothing() {
    let (env, [key, other]) = TestEnv::with_two_tenants(["acme", "globex"], "helper").await;
    env.llm.push(ScriptedReply::text("Ephemeral."));
    let (status, eph) = respond(&env, &key, json!({"input": "hi", "store": false})).await;
    assert_eq!(status, 200);
    assert_eq!(eph["store"], false);
    let id = eph["id"].as_str().unwrap();
    let get = env.http.get(format!("{}/v1/responses/{id}", env.api_url)).bearer_auth(&key).send().await.unwrap();
    assert_eq!(get.status(), 404);
    let (status, _) = respond(&env, &key, json!({"input": "more", "previous_response_id": id})).await;
    assert_eq!(status, 404);

    env.llm.push(ScriptedReply::text("Kept."));
    let (_, kept) = respond(&env, &key, json!({"input": "hi"})).await;
    let id = kept["id"].as_str().unwrap();
    let url = format!("{}/v1/responses/{id}", env.api_url);
    assert_eq!(env.http.get(&url).bearer_auth(&other).send().await.unwrap().status(), 404);
    assert_eq!(env.http.delete(&url).bearer_auth(&other).send().await.unwrap().status(), 404);
    let (status, body) = respond(&env, &other, json!({"input": "steal", "previous_response_id": id})).await;
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("response_not_found")));
    assert_eq!(env.http.get(&url).bearer_auth(&key).send().await.unwrap().status(), 200);
    env.stop().await;
}

#[tokio::test]
async fn streamed_responses_send_the_events_in_order_with_tool_calls_and_sequence_numbers() {
    let Team { env, key, .. } = Team::acme("helper").await;
    env.llm.push_all([ScriptedReply::terminal("echo likes tea"), ScriptedReply::text("Saved that you like tea.")]);
    let resp = env
        .http
        .post(format!("{}/v1/responses", env.api_url))
        .bearer_auth(&key)
        .json(&json!({"input": "Remember I like tea", "stream": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let events: Vec<(String, Value)> = sse_events(&resp.text().await.unwrap())
        .into_iter()
        .map(|(name, data)| (name.unwrap(), serde_json::from_str(&data).unwrap()))
        .collect();
    for (n, (name, data)) in events.iter().enumerate() {
        assert_eq!(&data["type"], name);
        assert_eq!(data["sequence_number"], n, "sequence numbers count up without gaps");
    }
    // Collapse the deltas to read the order.
    let mut order: Vec<String> = Vec::new();
    for (name, data) in &events {
        let label = match data["item"]["type"].as_str() {
            Some(kind) => format!("{name}:{kind}"),
            None => name.clone(),
        };
        if order.last() != Some(&label) {
            order.push(label);
        }
    }
    assert_eq!(
        order,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added:function_call",
            "response.output_item.done:function_call",
            "response.output_item.added:function_call_output",
            "response.output_item.done:function_call_output",
            "response.output_item.added:message",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done:message",
            "response.completed",
        ]
    );
    let call = &events.iter().find(|(n, d)| n == "response.output_item.done" && d["item"]["type"] == "function_call");
    let call = &call.unwrap().1["item"];
    assert_eq!(call["name"], "terminal");
    assert!(call["arguments"].as_str().unwrap().contains("likes tea"));
    let result = &events.iter().find(|(_, d)| d["item"]["type"] == "function_call_output").unwrap().1["item"];
    assert_eq!(result["call_id"], call["call_id"]);
    assert!(result["output"].as_str().unwrap().contains("likes tea"), "{result}");
    let deltas: String = events
        .iter()
        .filter(|(n, _)| n == "response.output_text.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, "Saved that you like tea.");
    let done = &events.last().unwrap().1["response"];
    assert_eq!(done["status"], "completed");
    let kinds: Vec<&str> = done["output"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["function_call", "function_call_output", "message"]);
    assert!(done["usage"]["output_tokens"].as_u64().unwrap() > 0);

    // The stored response reads back the same way.
    let (status, got) =
        crate::openapi::call(&env, &key, "get", &format!("/v1/responses/{}", done["id"].as_str().unwrap()), None).await;
    assert_eq!(status, 200);
    assert_eq!(got["output"], done["output"]);
    assert_eq!(got["status"], "completed");
    env.stop().await;
}

#[tokio::test]
async fn reasoning_comes_as_summary_items_streamed_and_whole() {
    let Team { env, key, .. } = Team::acme("helper").await;
    env.llm.push_all([
        ScriptedReply::terminal("echo 42"),
        ScriptedReply::text("It is 42.").with_reasoning("The command printed 42."),
    ]);
    let body = json!({"input": "What does echo 42 print?", "stream": true});
    let resp =
        env.http.post(format!("{}/v1/responses", env.api_url)).bearer_auth(&key).json(&body).send().await.unwrap();
    let events: Vec<(String, Value)> = sse_events(&resp.text().await.unwrap())
        .into_iter()
        .map(|(name, data)| (name.unwrap(), serde_json::from_str(&data).unwrap()))
        .collect();
    let reasoning: Vec<&str> = events
        .iter()
        .filter(|(n, d)| n.starts_with("response.reasoning_summary") || d["item"]["type"] == "reasoning")
        .map(|(n, _)| n.as_str())
        .collect();
    let mut order = reasoning.clone();
    order.dedup();
    assert_eq!(
        order,
        [
            "response.output_item.added",
            "response.reasoning_summary_part.added",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.done",
            "response.reasoning_summary_part.done",
            "response.output_item.done",
        ]
    );
    let said: String = events
        .iter()
        .filter(|(n, _)| n == "response.reasoning_summary_text.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(said, "The command printed 42.");
    let opened = events.iter().position(|(_, d)| d["item"]["type"] == "reasoning").unwrap();
    let answered = events.iter().position(|(_, d)| d["item"]["type"] == "message").unwrap();
    assert!(opened < answered, "the reasoning comes before the answer");
    let done = &events.last().unwrap().1["response"];
    let kinds: Vec<&str> = done["output"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["function_call", "function_call_output", "reasoning", "message"]);
    let item = &done["output"][2];
    assert_eq!(item["summary"], json!([{"type": "summary_text", "text": "The command printed 42."}]));
    let streamed = &events[opened].1["item"]["id"];
    assert_eq!(&item["id"], streamed, "the streamed item is the stored one");
    // Read back later, the response says the same.
    let id = done["id"].as_str().unwrap();
    let again: Value = env
        .http
        .get(format!("{}/v1/responses/{id}", env.api_url))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(again["output"], done["output"]);
    assert!(done["usage"]["output_tokens_details"]["reasoning_tokens"].is_u64());
    env.stop().await;
}
