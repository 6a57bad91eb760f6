//! What each setting adds to each provider's request body, exactly: the body of a call with
//! the setting, less the body of the same call without it. The fields a provider has no knob
//! for are not sent.

use std::sync::Arc;

use hermes_core::{ApiMode, ChatMessage, ModelSettings, ReasoningEffort};
use serde_json::{Map, Value, json};

use crate::anthropic::{AnthropicMessages, CacheTtl};
use crate::responses::OpenAiResponses;
use crate::wire::WireApi;
use crate::{ChatRequest, Endpoint, OpenAiChat};

fn endpoint(provider: &str, base_url: &str, model: &str, api_mode: ApiMode) -> Endpoint {
    Endpoint {
        provider: provider.into(),
        base_url: base_url.into(),
        model: model.into(),
        api_mode,
        routing: Default::default(),
    }
}

fn openai(model: &str) -> Endpoint {
    endpoint("openai", "https://api.openai.com/v1", model, ApiMode::ChatCompletions)
}

fn openrouter(model: &str) -> Endpoint {
    endpoint("openrouter", "https://openrouter.ai/api/v1", model, ApiMode::ChatCompletions)
}

fn responses(model: &str) -> Endpoint {
    endpoint("openai", "https://api.openai.com/v1", model, ApiMode::Responses)
}

fn anthropic(model: &str) -> Endpoint {
    endpoint("anthropic", "https://api.anthropic.com/v1", model, ApiMode::AnthropicMessages)
}

/// The JSON body and `anthropic-beta` header `endpoint`'s transport sends for `settings`.
fn sent(endpoint: &Endpoint, settings: ModelSettings) -> (Value, Option<String>) {
    sent_with(endpoint, settings, vec![ChatMessage::system("be brief"), ChatMessage::user("hi")])
}

/// [`sent`] for a conversation of `messages`.
fn sent_with(endpoint: &Endpoint, settings: ModelSettings, messages: Vec<ChatMessage>) -> (Value, Option<String>) {
    let request = ChatRequest {
        model: endpoint.model.clone(),
        messages,
        tools: Arc::from([]),
        max_tokens: settings.max_output_tokens,
        settings,
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let builder = match endpoint.api_mode {
        ApiMode::ChatCompletions => {
            OpenAiChat::new(http, CacheTtl::FiveMinutes, Arc::from(["gateway.example".to_owned()]))
                .request(endpoint, &request)
        }
        ApiMode::Responses => OpenAiResponses::new(http).request(endpoint, &request),
        ApiMode::AnthropicMessages => AnthropicMessages::new(http, CacheTtl::FiveMinutes).request(endpoint, &request),
    };
    let built = builder.build().expect("a request");
    let beta = built.headers().get("anthropic-beta").map(|v| v.to_str().unwrap().to_owned());
    let body = serde_json::from_slice(built.body().and_then(|b| b.as_bytes()).expect("a body")).expect("JSON");
    (body, beta)
}

/// The fields whose values `settings` changes (new or different), and the beta header.
fn diff(endpoint: &Endpoint, settings: ModelSettings) -> (Value, Option<String>) {
    let (plain, _) = sent(endpoint, ModelSettings::default());
    let (with, beta) = sent(endpoint, settings);
    let changed: Map<String, Value> = with
        .as_object()
        .expect("an object")
        .iter()
        .filter(|(k, v)| plain.get(k.as_str()) != Some(v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    (Value::Object(changed), beta)
}

fn effort(e: ReasoningEffort) -> ModelSettings {
    ModelSettings { reasoning_effort: Some(e), ..Default::default() }
}

#[test]
fn each_setting_reaches_each_provider_as_its_own_field() {
    let sampling = ModelSettings { temperature: Some(0.3), top_p: Some(0.9), ..Default::default() };
    let capped = ModelSettings { max_output_tokens: Some(2_000), ..Default::default() };
    let fast = ModelSettings { fast: Some(true), ..Default::default() };
    let budget = ModelSettings { thinking_budget: Some(2_048), ..Default::default() };
    let high = effort(ReasoningEffort::High);
    let none = effort(ReasoningEffort::None);
    let cases: Vec<(Endpoint, ModelSettings, Value, Option<&str>)> = vec![
        // OpenAI chat completions.
        (openai("gpt-4.1"), sampling, json!({"temperature": 0.3, "top_p": 0.9}), None),
        (openai("gpt-4.1"), capped, json!({"max_tokens": 2000}), None),
        (openai("o3"), high, json!({"reasoning_effort": "high"}), None),
        (openai("gpt-5.1"), none, json!({"reasoning_effort": "none"}), None),
        (openai("gpt-5.1"), fast, json!({"service_tier": "priority"}), None),
        (openai("gpt-5-codex"), fast, json!({}), None),
        // OpenAI refuses sampling for its reasoning models, and an effort for the others.
        (openai("o3"), sampling, json!({}), None),
        (openai("gpt-4.1"), high, json!({}), None),
        // Any other server is sent what was asked.
        (
            endpoint("custom:vllm.internal", "http://vllm.internal/v1", "qwen3-32b", ApiMode::ChatCompletions),
            ModelSettings { reasoning_effort: Some(ReasoningEffort::High), ..sampling },
            json!({"temperature": 0.3, "top_p": 0.9, "reasoning_effort": "high"}),
            None,
        ),
        // OpenRouter: one `reasoning` object, a budget or an effort.
        (openrouter("openai/o3"), high, json!({"reasoning": {"effort": "high"}}), None),
        (openrouter("anthropic/claude-sonnet-4.5"), budget, json!({"reasoning": {"max_tokens": 2048}}), None),
        (openrouter("deepseek/deepseek-r1"), none, json!({"reasoning": {"effort": "none"}}), None),
        (openrouter("openai/gpt-5.1"), fast, json!({}), None),
        // The Responses API: summaries and encrypted reasoning asked for with an effort.
        // (o3 reasons unasked, so it is always asked for its encrypted reasoning.)
        (responses("o3"), high, json!({"reasoning": {"effort": "high", "summary": "auto"}}), None),
        (responses("gpt-4.1"), high, json!({}), None),
        (
            endpoint("custom:gateway.example", "https://gateway.example/v1", "gpt-oss-120b", ApiMode::Responses),
            high,
            json!({"reasoning": {"effort": "high", "summary": "auto"}, "include": ["reasoning.encrypted_content"]}),
            None,
        ),
        (responses("gpt-5"), none, json!({"reasoning": {"effort": "none"}, "include": null}), None),
        (responses("gpt-4.1"), sampling, json!({"temperature": 0.3, "top_p": 0.9}), None),
        (responses("gpt-4.1"), capped, json!({"max_output_tokens": 2000}), None),
        (responses("gpt-5.1"), fast, json!({"service_tier": "priority"}), None),
        // Anthropic: a budget below Claude 4.6 (room left for the answer, sampling dropped).
        (
            anthropic("claude-sonnet-4-5"),
            high,
            json!({"thinking": {"type": "enabled", "budget_tokens": 16000}, "max_tokens": 20096}),
            Some("interleaved-thinking-2025-05-14"),
        ),
        (
            anthropic("claude-sonnet-4-5"),
            ModelSettings { temperature: Some(0.3), top_p: Some(0.97), ..budget },
            json!({"thinking": {"type": "enabled", "budget_tokens": 2048}, "top_p": 0.97}),
            Some("interleaved-thinking-2025-05-14"),
        ),
        (anthropic("claude-sonnet-4-5"), sampling, json!({"temperature": 0.3, "top_p": 0.9}), None),
        (
            anthropic("claude-sonnet-4-5"),
            ModelSettings { temperature: Some(1.7), ..Default::default() },
            json!({"temperature": 1.0}),
            None,
        ),
        // Adaptive thinking from Claude 4.6; no sampling after it.
        (
            anthropic("claude-opus-4-6"),
            effort(ReasoningEffort::Xhigh),
            json!({"thinking": {"type": "adaptive", "display": "summarized"}, "output_config": {"effort": "max"}}),
            None,
        ),
        (
            anthropic("claude-opus-4-7"),
            effort(ReasoningEffort::Minimal),
            json!({"thinking": {"type": "adaptive", "display": "summarized"}, "output_config": {"effort": "low"}}),
            None,
        ),
        (anthropic("claude-opus-4-7"), sampling, json!({}), None),
        (anthropic("claude-opus-4-6"), fast, json!({"speed": "fast"}), Some("fast-mode-2026-02-01")),
        (anthropic("claude-opus-4-7"), fast, json!({}), None),
        (anthropic("claude-sonnet-4-5"), none, json!({}), None),
    ];
    for (endpoint, settings, expected, beta) in cases {
        let (got, got_beta) = diff(&endpoint, settings);
        // `null` in an expectation: the field the plain call sends is gone.
        let expected: Map<String, Value> = expected.as_object().cloned().unwrap_or_default();
        let (gone, changed): (Vec<_>, Vec<_>) = expected.into_iter().partition(|(_, v)| v.is_null());
        assert_eq!(
            got,
            Value::Object(changed.into_iter().collect()),
            "{} {:?}: {settings:?}",
            endpoint.model,
            endpoint.api_mode
        );
        let (with, _) = sent(&endpoint, settings);
        for (field, _) in gone {
            assert!(with.get(&field).is_none(), "{field} still sent to {}", endpoint.model);
        }
        assert_eq!(got_beta.as_deref(), beta, "{} {settings:?}", endpoint.model);
    }
}

#[test]
fn claude_through_a_caching_gateway_gets_the_native_breakpoint_layout() {
    use hermes_core::{ToolCall, ToolCallFunction};
    let call = ToolCall {
        id: "c1".into(),
        kind: "function".into(),
        function: ToolCallFunction { name: "terminal".into(), arguments: "{}".into() },
    };
    let request = ChatRequest {
        model: "m".into(),
        messages: vec![
            ChatMessage::system("stable prompt"),
            ChatMessage::system("request note"),
            ChatMessage::user("first"),
            ChatMessage::assistant("answer"),
            ChatMessage::user("run it"),
            ChatMessage { tool_calls: vec![call], content: None, ..ChatMessage::assistant("") },
            ChatMessage::tool_result("c1", "terminal", "ok"),
        ],
        tools: Arc::from([]),
        max_tokens: None,
        settings: ModelSettings::default(),
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let chat = OpenAiChat::new(http, CacheTtl::OneHour, Arc::from(["gateway.example".to_owned()]));
    let body = |endpoint: &Endpoint| -> Value {
        let built = chat.request(endpoint, &request).build().unwrap();
        serde_json::from_slice(built.body().unwrap().as_bytes().unwrap()).unwrap()
    };
    let marker = json!({"type": "ephemeral", "ttl": "1h"});
    let gateway =
        endpoint("custom:gateway.example", "https://gateway.example/v1", "claude-sonnet-4.5", ApiMode::ChatCompletions);
    for claude in [openrouter("anthropic/claude-sonnet-4.5"), gateway] {
        let messages = body(&claude)["messages"].clone();
        assert_eq!(messages[0]["content"], json!([{"type": "text", "text": "stable prompt", "cache_control": marker}]));
        assert_eq!(messages[1]["content"], "request note", "one system breakpoint");
        assert_eq!(messages[2]["content"], "first", "older turns are read through the later breakpoints");
        assert_eq!(messages[3]["content"], "answer");
        assert_eq!(messages[4]["content"], json!([{"type": "text", "text": "run it", "cache_control": marker}]));
        assert_eq!(messages[5]["cache_control"], marker, "a message without text is marked whole");
        assert!(messages[6].get("cache_control").is_none() && messages[6]["content"] == "ok", "tool results are not");
    }
    for other in [openrouter("openai/gpt-5.1"), openai("claude-sonnet-4.5")] {
        assert!(!body(&other).to_string().contains("cache_control"), "{}", other.model);
    }
}

#[test]
fn provider_routing_reaches_openrouter_as_its_provider_object_and_no_one_else() {
    let routing: hermes_core::ProviderRouting = serde_json::from_value(json!({
        "order": ["anthropic", "google-vertex"], "only": ["anthropic", "google-vertex"], "ignore": ["together"],
        "sort": "throughput", "allow_fallbacks": false, "data_collection": "deny", "require_parameters": true
    }))
    .unwrap();
    let routed = |mut at: Endpoint| {
        let (plain, _) = sent(&at, ModelSettings::default());
        at.routing = routing.clone();
        let (with, _) = sent(&at, ModelSettings::default());
        let changed: Map<String, Value> = with
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, v)| plain.get(k.as_str()) != Some(v))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Value::Object(changed)
    };
    assert_eq!(
        routed(openrouter("anthropic/claude-sonnet-4.5")),
        json!({"provider": {
            "order": ["anthropic", "google-vertex"], "only": ["anthropic", "google-vertex"], "ignore": ["together"],
            "sort": "throughput", "allow_fallbacks": false, "data_collection": "deny", "require_parameters": true
        }})
    );
    let gateway =
        endpoint("custom:gateway.example", "https://gateway.example/v1", "claude-sonnet-4-5", ApiMode::ChatCompletions);
    for elsewhere in [openai("gpt-4.1"), gateway, responses("o3"), anthropic("claude-sonnet-4-5")] {
        assert_eq!(routed(elsewhere.clone()), json!({}), "{}", elsewhere.base_url);
    }
    // Side tasks keep only the promise about who may keep prompts.
    let mut side = openrouter("google/gemini-2.5-flash");
    side.routing = routing.for_side_tasks();
    assert_eq!(sent(&side, ModelSettings::default()).0["provider"], json!({"data_collection": "deny"}));
}

#[test]
fn openrouter_reasoning_details_go_back_only_to_the_model_that_wrote_them() {
    let at = openrouter("anthropic/claude-sonnet-4.5");
    let details = vec![json!({"type": "reasoning.text", "text": "hmm", "signature": "EqQB", "index": 0})];
    let mut answered = ChatMessage::assistant("Checking.");
    answered.replay = Some(hermes_core::ReasoningReplay {
        api: ApiMode::ChatCompletions,
        base_url: at.base_url.clone(),
        model: at.model.clone(),
        items: details.clone(),
    });
    let conversation = vec![ChatMessage::user("check it"), answered, ChatMessage::user("and?")];
    let (body, _) = sent_with(&at, ModelSettings::default(), conversation.clone());
    assert_eq!(body["messages"][1]["reasoning_details"], json!(details));
    assert!(body["messages"][1].get("reasoning").is_none(), "our own reasoning text stays with us");
    // Another model (a fallback) cannot verify the signature: it is sent nothing.
    let (body, _) = sent_with(&openrouter("openai/gpt-5.1"), ModelSettings::default(), conversation);
    assert!(body["messages"][1].get("reasoning_details").is_none(), "{body}");
}
