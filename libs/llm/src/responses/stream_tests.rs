use std::sync::Arc;

use hermes_core::{ChatMessage, ToolCall, ToolCallFunction};
use serde_json::json;

use super::*;
use crate::responses::build_request;
use crate::{ChatRequest, NoDeltas};

#[test]
fn a_responses_stream_folds_into_text_reasoning_calls_and_usage() {
    let events = [
        r#"{"type":"response.created","response":{"id":"resp_1","status":"in_progress"}}"#,
        r#"{"type":"response.reasoning_summary_text.delta","delta":"thinking"}"#,
        r#"{"type":"response.output_text.delta","delta":"Let me "}"#,
        r#"{"type":"response.output_text.delta","delta":"check."}"#,
        r#"{"type":"response.output_item.added","item":{"type":"function_call","id":"fc_1","call_id":"call_9","name":"terminal","arguments":""}}"#,
        r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","delta":"{\"command\":"}"#,
        r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","delta":"\"ls\"}"}"#,
        r#"{"type":"response.output_item.done","item":{"type":"function_call","id":"fc_1","call_id":"call_9","name":"terminal","arguments":"{\"command\":\"ls\"}"}}"#,
        r#"{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":50,"output_tokens":10,"total_tokens":60,"input_tokens_details":{"cached_tokens":40}}}}"#,
    ];
    let mut acc = ResponsesAccumulator::default();
    for e in events {
        acc.push(e, &mut NoDeltas).unwrap();
    }
    assert!(acc.is_done());
    let r = acc.finish();
    assert_eq!(r.message.text(), "Let me check.");
    assert_eq!(r.message.reasoning.as_deref(), Some("thinking"));
    assert_eq!(r.message.tool_calls[0].id, "call_9");
    assert_eq!(r.message.tool_calls[0].function.arguments, r#"{"command":"ls"}"#);
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!((r.usage.prompt_tokens, r.usage.cached_tokens, r.usage.total_tokens), (50, 40, 60));
}

#[test]
fn incomplete_and_failed_responses_map_to_length_and_classified_errors() {
    let mut acc = ResponsesAccumulator::default();
    acc.push(
        r#"{"type":"response.incomplete","response":{"incomplete_details":{"reason":"max_output_tokens"},"usage":{}}}"#,
        &mut NoDeltas,
    )
    .unwrap();
    assert_eq!(acc.finish().finish_reason.as_deref(), Some("length"));
    let err = ResponsesAccumulator::default()
        .push(
            r#"{"type":"response.failed","response":{"error":{"code":"rate_limit_exceeded","message":"slow down"}}}"#,
            &mut NoDeltas,
        )
        .unwrap_err();
    assert_eq!(err.class, crate::ErrorClass::RateLimit);
}

#[test]
fn messages_become_input_items_with_instructions_and_call_outputs() {
    let call = ToolCall {
        id: "call_1".into(),
        kind: "function".into(),
        function: ToolCallFunction { name: "terminal".into(), arguments: "{}".into() },
    };
    let request = ChatRequest {
        model: "x".into(),
        messages: vec![
            ChatMessage::system("be brief"),
            ChatMessage::user("hi"),
            ChatMessage { tool_calls: vec![call], content: None, ..ChatMessage::assistant("") },
            ChatMessage::tool_result("call_1", "terminal", "ok"),
        ],
        tools: Arc::from([Arc::new(
            json!({"type": "function", "function": {"name": "terminal", "description": "d", "parameters": {"type": "object"}}}),
        )]),
        max_tokens: Some(100),
        settings: Default::default(),
    };
    let endpoint = crate::Endpoint {
        provider: "openai".into(),
        base_url: "https://api.openai.com/v1".into(),
        model: "gpt-5".into(),
        api_mode: hermes_core::ApiMode::Responses,
        routing: Default::default(),
    };
    let body = build_request(&endpoint, &request);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]), "gpt-5 reasons unasked");
    assert_eq!(body["instructions"], "be brief");
    assert_eq!(body["store"], false);
    assert_eq!(body["max_output_tokens"], 100);
    let input = body["input"].as_array().unwrap();
    assert_eq!(input[0], json!({"role": "user", "content": [{"type": "input_text", "text": "hi"}]}));
    assert_eq!(input[1], json!({"type": "function_call", "call_id": "call_1", "name": "terminal", "arguments": "{}"}));
    assert_eq!(input[2], json!({"type": "function_call_output", "call_id": "call_1", "output": "ok"}));
    assert_eq!(
        body["tools"][0],
        json!({"type": "function", "name": "terminal", "description": "d", "parameters": {"type": "object"}})
    );
}

#[test]
fn encrypted_reasoning_is_kept_and_sent_back_only_to_the_model_and_endpoint_that_wrote_it() {
    let events = [
        r#"{"type":"response.output_item.done","item":{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Checked."}],"encrypted_content":"gAAAA-sealed"}}"#,
        r#"{"type":"response.output_item.added","item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"terminal","arguments":""}}"#,
        r#"{"type":"response.output_item.done","item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"terminal","arguments":"{}"}}"#,
        r#"{"type":"response.completed","response":{"usage":{"input_tokens":50,"output_tokens":40,"total_tokens":90,"output_tokens_details":{"reasoning_tokens":32}}}}"#,
    ];
    let mut acc = ResponsesAccumulator::default();
    for e in events {
        acc.push(e, &mut NoDeltas).unwrap();
    }
    let items = acc.take_replay();
    let item = json!({"type": "reasoning", "encrypted_content": "gAAAA-sealed", "summary": [{"type": "summary_text", "text": "Checked."}]});
    assert_eq!(items, std::slice::from_ref(&item), "sent back without its id (nothing is stored at the provider)");
    let answer = acc.finish();
    assert_eq!(answer.usage.reasoning_tokens, 32);

    let at = |base_url: &str, model: &str| crate::Endpoint {
        provider: "openai".into(),
        base_url: base_url.into(),
        model: model.into(),
        api_mode: hermes_core::ApiMode::Responses,
        routing: Default::default(),
    };
    let written = at("https://api.openai.com/v1", "o3");
    let message = ChatMessage {
        replay: Some(hermes_core::ReasoningReplay {
            api: written.api_mode,
            base_url: written.base_url.clone(),
            model: written.model.clone(),
            items,
        }),
        ..answer.message
    };
    let request = ChatRequest {
        model: "o3".into(),
        messages: vec![ChatMessage::user("go"), message, ChatMessage::tool_result("call_1", "terminal", "ok")],
        tools: Arc::from([]),
        max_tokens: None,
        settings: Default::default(),
    };
    let input = |endpoint: &crate::Endpoint| build_request(endpoint, &request)["input"].clone();
    let same = input(&written);
    assert_eq!(same[1], item, "reasoning first, before the call it led to");
    assert_eq!(same[2]["type"], "function_call");
    for other in [at("https://api.openai.com/v1", "o4-mini"), at("https://gateway.example/v1", "o3")] {
        assert!(input(&other).as_array().unwrap().iter().all(|i| i["type"] != "reasoning"), "sealed to its writer");
    }
}

#[test]
fn the_responses_tier_is_read_from_the_completed_response() {
    let mut acc = ResponsesAccumulator::default();
    let done = r#"{"type":"response.completed","response":{"status":"completed","service_tier":"priority","usage":{"input_tokens":5,"output_tokens":1}}}"#;
    acc.push(done, &mut NoDeltas).unwrap();
    assert!(acc.finish().usage.priority);
}
