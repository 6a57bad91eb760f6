use std::sync::Arc;

use hermes_core::{ChatMessage, Content, ContentPart, ToolCall, ToolCallFunction};
use serde_json::json;

use super::*;
use crate::ChatRequest;

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        kind: "function".into(),
        function: ToolCallFunction { name: "terminal".into(), arguments: r#"{"command":"ls"}"#.into() },
    }
}

#[test]
fn messages_become_alternating_blocks_with_tool_results_as_user_blocks_and_cache_breakpoints() {
    let image = Content::Parts(vec![
        ContentPart::Text { text: "what is this?".into() },
        ContentPart::ImageUrl {
            image_url: hermes_core::message::ImageUrl { url: "data:image/png;base64,AAAA".into(), detail: None },
        },
    ]);
    let request = ChatRequest {
        model: "x".into(),
        messages: vec![
            ChatMessage::system("stable prompt"),
            ChatMessage::system("request note"),
            ChatMessage { content: Some(image), ..ChatMessage::user("") },
            ChatMessage {
                tool_calls: vec![call("t1")],
                content: None,
                reasoning: Some("hmm".into()),
                ..ChatMessage::assistant("")
            },
            ChatMessage::tool_result("t1", "terminal", "a.txt"),
            ChatMessage::user("and then?"),
        ],
        tools: Arc::from([Arc::new(
            json!({"type": "function", "function": {"name": "terminal", "description": "run", "parameters": {"type": "object"}}}),
        )]),
        max_tokens: None,
        settings: Default::default(),
    };
    let endpoint = crate::Endpoint {
        provider: "anthropic".into(),
        base_url: "https://api.anthropic.com/v1".into(),
        model: "claude-sonnet-4-5".into(),
        api_mode: hermes_core::ApiMode::AnthropicMessages,
        routing: Default::default(),
    };
    let (body, betas) = build_request(&endpoint, &request, CacheTtl::OneHour);
    assert!(betas.is_empty(), "no thinking asked");
    assert_eq!(body["model"], "claude-sonnet-4-5");
    assert_eq!(body["max_tokens"], 8192);
    assert_eq!(body["stream"], true);
    assert_eq!(body["system"][0]["text"], "stable prompt");
    assert_eq!(body["system"][1]["cache_control"], json!({"type": "ephemeral", "ttl": "1h"}));
    let msgs = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user"], "strict alternation");
    assert_eq!(msgs[0]["content"][1]["source"], json!({"type": "base64", "media_type": "image/png", "data": "AAAA"}));
    assert_eq!(msgs[1]["content"][0]["type"], "tool_use", "reasoning is not replayed");
    assert_eq!(msgs[1]["content"][0]["input"], json!({"command": "ls"}));
    assert_eq!(msgs[2]["content"][0], json!({"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"}));
    assert_eq!(msgs[2]["content"][1]["text"], "and then?");
    // The last block of each of the last three messages carries a breakpoint (system_and_3).
    for m in msgs {
        let last = m["content"].as_array().unwrap().last().unwrap();
        assert!(last.get("cache_control").is_some(), "{m}");
    }
    assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
}

#[test]
fn thinking_is_left_off_for_a_tool_loop_whose_assistant_message_lost_its_signed_thinking() {
    use hermes_core::{ApiMode, ModelSettings, ReasoningEffort, ReasoningReplay};
    let endpoint = crate::Endpoint {
        provider: "anthropic".into(),
        base_url: "https://api.anthropic.com/v1".into(),
        model: "claude-sonnet-4-5".into(),
        api_mode: ApiMode::AnthropicMessages,
        routing: Default::default(),
    };
    let signed = json!({"type": "thinking", "thinking": "hmm", "signature": "EqQB"});
    let asked = |replay: Option<ReasoningReplay>| ChatRequest {
        model: "x".into(),
        messages: vec![
            ChatMessage::user("go"),
            ChatMessage { tool_calls: vec![call("t1")], content: None, replay, ..ChatMessage::assistant("") },
            ChatMessage::tool_result("t1", "terminal", "ok"),
        ],
        tools: Arc::from([]),
        max_tokens: None,
        settings: ModelSettings { reasoning_effort: Some(ReasoningEffort::Low), ..Default::default() },
    };
    let replay = |model: &str| ReasoningReplay {
        api: ApiMode::AnthropicMessages,
        base_url: endpoint.base_url.clone(),
        model: model.into(),
        items: vec![signed.clone()],
    };
    let (body, _) = build_request(&endpoint, &asked(Some(replay("claude-sonnet-4-5"))), CacheTtl::FiveMinutes);
    assert_eq!(body["thinking"]["budget_tokens"], 4000);
    assert_eq!(body["messages"][1]["content"][0], signed, "signed thinking first");
    // Written by a fallback model, or never signed: Anthropic would refuse the call with thinking on.
    for lost in [Some(replay("claude-opus-4-1")), None] {
        let (body, betas) = build_request(&endpoint, &asked(lost), CacheTtl::FiveMinutes);
        assert!(body.get("thinking").is_none() && betas.is_empty(), "{body}");
        assert_eq!(body["messages"][1]["content"][0]["type"], "tool_use");
    }
}
