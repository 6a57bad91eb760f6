//! Folds OpenAI `chat.completion.chunk`s into one assistant message.

use serde::Deserialize;
use serde_json::Value;

use hermes_core::{ChatMessage, Content, Role, ToolCall, ToolCallFunction, Usage};

use crate::{ChatResponse, DeltaSink, LlmError};

#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
    /// The tier that served the call (OpenAI repeats it in every chunk); read leniently, as
    /// some compatible servers send other shapes.
    #[serde(default)]
    service_tier: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Option<ChunkDelta>,
    /// Some servers send a whole `message` instead of deltas.
    #[serde(default)]
    message: Option<ChunkDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct ChunkDelta {
    #[serde(default)]
    content: Option<String>,
    /// `reasoning_content` (DeepSeek, vLLM) or `reasoning` (OpenRouter).
    #[serde(default, alias = "reasoning_content")]
    reasoning: Option<String>,
    /// OpenRouter's reasoning to send back (signed or encrypted), in fragments.
    #[serde(default)]
    reasoning_details: Vec<Value>,
    #[serde(default)]
    tool_calls: Vec<ToolCallDelta>,
}

#[derive(Debug, Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    total_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Debug, Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: u64,
}

#[derive(Debug, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: u64,
    /// Reported by gateways that proxy caching providers (OpenRouter, LiteLLM).
    #[serde(default)]
    cache_write_tokens: u64,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Self {
        Usage {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            total_tokens: if u.total_tokens > 0 { u.total_tokens } else { u.prompt_tokens + u.completion_tokens },
            cached_tokens: u.prompt_tokens_details.as_ref().map_or(0, |d| d.cached_tokens),
            cache_write_tokens: u.prompt_tokens_details.as_ref().map_or(0, |d| d.cache_write_tokens),
            reasoning_tokens: u.completion_tokens_details.as_ref().map_or(0, |d| d.reasoning_tokens),
            priority: false,
        }
    }
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Accumulates a streamed answer.
/// Most tool calls one response may carry; a provider sending more (or an absurd index) is
/// broken, and growing a vector to its index would let it exhaust memory.
pub const MAX_TOOL_CALLS: usize = 128;
/// Most text (content, reasoning and tool arguments together) one response may carry.
pub const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;

#[derive(Debug, Default)]
pub struct StreamAccumulator {
    /// The text and reasoning so far, and the bytes counted against the cap.
    streamed: Streamed,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    usage: Usage,
    details: crate::reasoning_details::ReasoningDetails,
    /// Whether the provider said its priority tier served the call.
    priority: bool,
}

impl StreamAccumulator {
    /// Feeds one SSE `data:` payload.
    pub fn push(&mut self, data: &str, sink: &mut dyn DeltaSink) -> Result<(), LlmError> {
        let chunk: Chunk =
            serde_json::from_str(data).map_err(|e| LlmError::malformed(format!("bad stream chunk: {e}")))?;
        if let Some(err) = chunk.error {
            return Err(LlmError::from_stream_error(&err));
        }
        if let Some(usage) = chunk.usage {
            self.usage = usage.into();
        }
        if let Some(tier) = chunk.service_tier {
            self.priority = tier.as_str().is_some_and(hermes_core::is_priority_tier);
        }
        for choice in chunk.choices {
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
            }
            let Some(delta) = choice.delta.or(choice.message) else {
                continue;
            };
            if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                self.streamed.text(&text, sink)?;
            }
            if let Some(text) = delta.reasoning.filter(|t| !t.is_empty()) {
                self.streamed.reasoning(&text, sink)?;
            }
            for fragment in delta.reasoning_details {
                self.streamed.add_bytes(crate::reasoning_details::ReasoningDetails::bytes_of(&fragment))?;
                self.details.push(fragment)?;
            }
            for call in delta.tool_calls {
                // Without an index, a new id starts a new call; otherwise it continues the last.
                let index = match call.index {
                    Some(i) => i,
                    None => match (&call.id, self.calls.last()) {
                        (Some(id), Some(last)) if !last.id.is_empty() && last.id != *id => self.calls.len(),
                        (_, Some(_)) => self.calls.len() - 1,
                        (_, None) => 0,
                    },
                };
                if index >= MAX_TOOL_CALLS {
                    return Err(LlmError::malformed(format!("tool call index {index} is out of range")));
                }
                while self.calls.len() <= index {
                    self.calls.push(PartialCall::default());
                }
                if let Some(id) = call.id.filter(|id| !id.is_empty()) {
                    self.calls[index].id = id;
                }
                if let Some(f) = call.function {
                    if let Some(name) = f.name.filter(|n| !n.is_empty()) {
                        // Some servers resend the whole name in every delta: it is set, not appended.
                        self.calls[index].name = name;
                    }
                    if let Some(args) = f.arguments {
                        self.streamed.add_bytes(args.len())?;
                        self.calls[index].arguments.push_str(&args);
                    }
                }
            }
        }
        Ok(())
    }

    /// OpenRouter's reasoning details, whole, to send back on the next call (taken once).
    pub(crate) fn take_details(&mut self) -> Vec<Value> {
        self.details.take()
    }

    /// Whether any text or reasoning has been streamed to the sink.
    pub fn has_emitted(&self) -> bool {
        self.streamed.emitted
    }

    /// What has been streamed so far.
    pub(crate) fn streamed(&self) -> &Streamed {
        &self.streamed
    }

    /// Whether a finish reason arrived (some servers close the stream after it without `[DONE]`).
    pub fn has_finish_reason(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// The finished response.
    pub fn finish(self) -> ChatResponse {
        let tool_calls: Vec<ToolCall> = self
            .calls
            .into_iter()
            .enumerate()
            .filter(|(_, c)| !c.name.is_empty())
            .map(|(i, c)| ToolCall {
                // Ids must be unique in the whole turn, not just this response.
                id: if c.id.is_empty() { format!("call_{}_{i}", uuid::Uuid::now_v7().simple()) } else { c.id },
                kind: "function".into(),
                function: ToolCallFunction {
                    name: c.name,
                    arguments: if c.arguments.trim().is_empty() { "{}".into() } else { c.arguments },
                },
            })
            .collect();
        let usage = Usage { priority: self.priority, ..self.usage };
        self.streamed.answer(tool_calls, self.finish_reason, usage)
    }
}

/// What every transport's accumulator gathers besides its tool calls: the text and reasoning
/// streamed to the sink, the bytes so far (capped), and whether the stream ended.
#[derive(Debug, Default)]
pub(crate) struct Streamed {
    text: String,
    reasoning: String,
    /// Whether anything reached the sink (after that, a retry would duplicate output).
    pub emitted: bool,
    pub done: bool,
    bytes: usize,
}

impl Streamed {
    /// Counts `n` more bytes; a response over [`MAX_RESPONSE_BYTES`] is a protocol error.
    pub fn add_bytes(&mut self, n: usize) -> Result<(), LlmError> {
        self.bytes += n;
        if self.bytes > MAX_RESPONSE_BYTES {
            return Err(LlmError::malformed(format!("response is larger than {MAX_RESPONSE_BYTES} bytes")));
        }
        Ok(())
    }

    /// Streams answer text to the sink and keeps it.
    pub fn text(&mut self, text: &str, sink: &mut dyn DeltaSink) -> Result<(), LlmError> {
        self.emit(text)?;
        sink.text(text);
        self.text.push_str(text);
        Ok(())
    }

    /// Streams reasoning to the sink and keeps it.
    pub fn reasoning(&mut self, text: &str, sink: &mut dyn DeltaSink) -> Result<(), LlmError> {
        self.emit(text)?;
        sink.reasoning(text);
        self.reasoning.push_str(text);
        Ok(())
    }

    /// Counts `text` against the cap, and marks the stream as having reached the sink.
    fn emit(&mut self, text: &str) -> Result<(), LlmError> {
        self.add_bytes(text.len())?;
        self.emitted = true;
        Ok(())
    }

    /// The answer with these tool calls, as every transport returns it: no content beside
    /// tool calls when there was no text, reasoning kept apart.
    pub fn answer(self, tool_calls: Vec<ToolCall>, finish_reason: Option<String>, usage: Usage) -> ChatResponse {
        let content =
            if self.text.is_empty() && !tool_calls.is_empty() { None } else { Some(Content::Text(self.text)) };
        ChatResponse {
            message: ChatMessage {
                role: Role::Assistant,
                content,
                tool_calls,
                tool_call_id: None,
                name: None,
                reasoning: (!self.reasoning.is_empty()).then_some(self.reasoning),
                replay: None,
            },
            finish_reason,
            usage,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoDeltas;

    #[test]
    fn openrouter_reasoning_details_are_gathered_whole_from_their_fragments() {
        let mut acc = StreamAccumulator::default();
        for chunk in [
            r#"{"choices":[{"delta":{"reasoning":"hm","reasoning_details":[{"type":"reasoning.text","text":"hm","index":0}]}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_details":[{"type":"reasoning.text","text":"m","index":0,"signature":"EqQB"}]}}]}"#,
            r#"{"choices":[{"delta":{"content":"ok"},"finish_reason":"stop"}]}"#,
        ] {
            acc.push(chunk, &mut NoDeltas).unwrap();
        }
        assert_eq!(
            acc.take_details(),
            [serde_json::json!({"type": "reasoning.text", "text": "hmm", "index": 0, "signature": "EqQB"})]
        );
        assert_eq!(acc.finish().message.reasoning.as_deref(), Some("hm"));
    }

    #[test]
    fn the_tier_that_served_the_call_is_what_the_provider_said() {
        let fold = |tier: &str| {
            let mut acc = StreamAccumulator::default();
            let chunk = format!(
                r#"{{"service_tier":"{tier}","choices":[{{"delta":{{"content":"ok"}},"finish_reason":"stop"}}]}}"#
            );
            acc.push(&chunk, &mut NoDeltas).unwrap();
            acc.push(r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#, &mut NoDeltas).unwrap();
            acc.finish().usage
        };
        assert!(fold("priority").priority && fold("fast").priority, "OpenAI's two names for it");
        assert!(!fold("default").priority, "asked for priority, served at the default tier: standard price");
        assert_eq!(fold("priority").prompt_tokens, 3, "a later usage chunk keeps the tier");
        let mut odd = StreamAccumulator::default();
        odd.push(r#"{"service_tier":{"name":"x"},"choices":[{"delta":{"content":"ok"}}]}"#, &mut NoDeltas).unwrap();
        assert!(!odd.finish().usage.priority, "another shape is no reason to fail the call");
    }

    struct Collect(String, String);
    impl DeltaSink for Collect {
        fn text(&mut self, t: &str) {
            self.0.push_str(t);
        }
        fn reasoning(&mut self, t: &str) {
            self.1.push_str(t);
        }
    }

    #[test]
    fn folds_text_reasoning_tool_calls_and_usage() {
        let mut acc = StreamAccumulator::default();
        let mut sink = Collect(String::new(), String::new());
        for data in [
            r#"{"choices":[{"delta":{"role":"assistant","reasoning_content":"think "}}]}"#,
            r#"{"choices":[{"delta":{"content":"Hel"}}]}"#,
            r#"{"choices":[{"delta":{"content":"lo"}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"terminal","arguments":"{\"comm"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"and\":\"ls\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":4}}}"#,
        ] {
            acc.push(data, &mut sink).unwrap();
        }
        assert!(acc.has_emitted());
        let resp = acc.finish();
        assert_eq!(sink.0, "Hello");
        assert_eq!(sink.1, "think ");
        assert_eq!(resp.message.text(), "Hello");
        assert_eq!(resp.message.reasoning.as_deref(), Some("think "));
        assert_eq!(resp.message.tool_calls[0].function.arguments, r#"{"command":"ls"}"#);
        assert_eq!(resp.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(resp.usage.total_tokens, 15);
        assert_eq!(resp.usage.cached_tokens, 4);
    }

    #[test]
    fn tool_calls_without_index_split_on_new_ids_and_repeated_names_are_not_doubled() {
        let mut acc = StreamAccumulator::default();
        for data in [
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"terminal","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"terminal","arguments":"{\"x\""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"terminal","arguments":":1}"}}]}}]}"#,
        ] {
            acc.push(data, &mut NoDeltas).unwrap();
        }
        let calls = acc.finish().message.tool_calls;
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1].id, "b");
        assert_eq!(calls[1].function.name, "terminal");
        assert_eq!(calls[1].function.arguments, r#"{"x":1}"#);
    }

    #[test]
    fn absurd_indexes_and_oversized_answers_are_protocol_errors_not_allocations() {
        let mut acc = StreamAccumulator::default();
        let err = acc
            .push(
                r#"{"choices":[{"delta":{"tool_calls":[{"index":4000000000,"function":{"name":"x"}}]}}]}"#,
                &mut NoDeltas,
            )
            .unwrap_err();
        assert_eq!(err.class, crate::ErrorClass::Malformed);
        let mut acc = StreamAccumulator::default();
        let big = "x".repeat(1024 * 1024);
        let chunk = serde_json::json!({"choices":[{"delta":{"content": big}}]}).to_string();
        let mut result = Ok(());
        for _ in 0..9 {
            result = acc.push(&chunk, &mut NoDeltas);
            if result.is_err() {
                break;
            }
        }
        assert_eq!(result.unwrap_err().class, crate::ErrorClass::Malformed);
    }

    #[test]
    fn missing_ids_get_ids_unique_across_responses() {
        let one = || {
            let mut acc = StreamAccumulator::default();
            acc.push(
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"t","arguments":"{}"}}]}}]}"#,
                &mut NoDeltas,
            )
            .unwrap();
            acc.finish().message.tool_calls[0].id.clone()
        };
        assert_ne!(one(), one());
    }

    #[test]
    fn an_error_inside_the_stream_is_classified_and_garbage_is_a_protocol_error() {
        let mut acc = StreamAccumulator::default();
        let err = acc.push(r#"{"error":{"message":"overloaded","code":503}}"#, &mut NoDeltas).unwrap_err();
        assert!(err.is_retryable(), "{err}");
        let err = acc
            .push(r#"{"error":{"message":"too long","code":"context_length_exceeded"}}"#, &mut NoDeltas)
            .unwrap_err();
        assert_eq!(err.class, crate::ErrorClass::ContextOverflow, "{err}");
        let err = acc.push("not json", &mut NoDeltas).unwrap_err();
        assert_eq!(err.class, crate::ErrorClass::Malformed);
    }
}
