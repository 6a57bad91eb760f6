use super::*;
use crate::NoDeltas;

struct Collect(String);
impl DeltaSink for Collect {
    fn text(&mut self, t: &str) {
        self.0.push_str(t);
    }
    fn reasoning(&mut self, _: &str) {}
}

#[test]
fn an_anthropic_stream_folds_into_text_reasoning_tool_calls_and_usage() {
    let events = [
        r#"{"type":"message_start","message":{"usage":{"input_tokens":10,"cache_read_input_tokens":90,"cache_creation_input_tokens":25,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"let me see"}}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Listing "}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"files."}}"#,
        r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"terminal","input":{}}}"#,
        r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"command\":"}}"#,
        r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"\"ls\"}"}}"#,
        r#"{"type":"content_block_stop","index":2}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}}"#,
        r#"{"type":"message_stop"}"#,
    ];
    let mut acc = AnthropicAccumulator::default();
    let mut sink = Collect(String::new());
    for e in events {
        acc.push(e, &mut sink).unwrap();
    }
    assert!(acc.is_done() && acc.has_emitted());
    let r = acc.finish();
    assert_eq!(sink.0, "Listing files.");
    assert_eq!(r.message.text(), "Listing files.");
    assert_eq!(r.message.reasoning.as_deref(), Some("let me see"));
    assert_eq!(r.message.tool_calls[0].id, "toolu_1");
    assert_eq!(r.message.tool_calls[0].function.arguments, r#"{"command":"ls"}"#);
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    let u = r.usage;
    assert_eq!((u.prompt_tokens, u.cached_tokens, u.cache_write_tokens, u.completion_tokens), (125, 90, 25, 30));
}

#[test]
fn stop_reasons_map_and_errors_are_classified() {
    let mut acc = AnthropicAccumulator::default();
    acc.push(r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"}}"#, &mut NoDeltas).unwrap();
    assert_eq!(acc.finish().finish_reason.as_deref(), Some("length"));
    let err = AnthropicAccumulator::default()
        .push(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#, &mut NoDeltas)
        .unwrap_err();
    assert_eq!(err.class, crate::ErrorClass::Overloaded);
}

#[test]
fn signed_and_redacted_thinking_are_kept_in_order_to_be_sent_back() {
    let events = [
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"first "}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"thought"}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"c2VhbGVk"}}"#,
        r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"terminal","input":{}}}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}}"#,
        r#"{"type":"message_stop"}"#,
    ];
    let mut acc = AnthropicAccumulator::default();
    for e in events {
        acc.push(e, &mut NoDeltas).unwrap();
    }
    let kept = acc.take_replay();
    assert_eq!(
        kept,
        [
            serde_json::json!({"type": "thinking", "thinking": "first thought", "signature": "EqQB"}),
            serde_json::json!({"type": "redacted_thinking", "data": "c2VhbGVk"}),
        ]
    );
    let r = acc.finish();
    assert_eq!(r.message.reasoning.as_deref(), Some("first thought"));
    assert_eq!(r.message.tool_calls[0].id, "toolu_1", "the calls are still there");
}

#[test]
fn fast_mode_counts_where_anthropic_says_it_served_the_call() {
    let fold = |speed: &str| {
        let mut acc = AnthropicAccumulator::default();
        let start = format!(
            r#"{{"type":"message_start","message":{{"usage":{{"input_tokens":10,"output_tokens":1{speed}}}}}}}"#
        );
        for e in [
            start.as_str(),
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}"#,
        ] {
            acc.push(e, &mut Collect(String::new())).unwrap();
        }
        acc.finish().usage.priority
    };
    assert!(fold(r#","speed":"fast""#));
    assert!(!fold(r#","speed":"standard""#) && !fold(""), "standard, or not said: the standard price");
}
