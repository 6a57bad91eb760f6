//! Folds Responses API stream events into one assistant message.

use serde_json::Value;

use hermes_core::{ToolCall, ToolCallFunction, Usage};

use crate::accumulate::{MAX_TOOL_CALLS, Streamed};
use crate::wire::StreamFold;
use crate::{ChatResponse, DeltaSink, LlmError};

#[derive(Debug, Default)]
struct Call {
    item_id: String,
    call_id: String,
    name: String,
    arguments: String,
}

/// Accumulates `response.*` events.
#[derive(Debug, Default)]
pub struct ResponsesAccumulator {
    streamed: Streamed,
    /// Encrypted reasoning items, as they are sent back.
    reasoning: Vec<Value>,
    calls: Vec<Call>,
    usage: Usage,
    finish: Option<String>,
}

impl ResponsesAccumulator {
    /// The response's end: its usage and why it stopped.
    fn completed(&mut self, r: &Value) {
        let u = &r["usage"];
        self.usage = Usage {
            prompt_tokens: u["input_tokens"].as_u64().unwrap_or(0),
            completion_tokens: u["output_tokens"].as_u64().unwrap_or(0),
            total_tokens: u["total_tokens"].as_u64().unwrap_or(0),
            cached_tokens: u["input_tokens_details"]["cached_tokens"].as_u64().unwrap_or(0),
            cache_write_tokens: 0,
            reasoning_tokens: u["output_tokens_details"]["reasoning_tokens"].as_u64().unwrap_or(0),
            priority: r["service_tier"].as_str().is_some_and(hermes_core::is_priority_tier),
        };
        self.finish = Some(match r["incomplete_details"]["reason"].as_str() {
            Some("max_output_tokens") => "length".into(),
            Some("content_filter") => "content_filter".into(),
            _ if !self.calls.is_empty() => "tool_calls".into(),
            _ => "stop".into(),
        });
        self.streamed.done = true;
    }

    /// Keeps an encrypted reasoning item to send back, without its id: with `store: false`
    /// the provider cannot look it up.
    fn keep_reasoning(&mut self, item: &Value) -> Result<(), LlmError> {
        if let Some(sealed) = item["encrypted_content"].as_str().filter(|c| !c.is_empty()) {
            self.streamed.add_bytes(sealed.len())?;
            let summary = item.get("summary").filter(|s| s.is_array()).cloned().unwrap_or(Value::Array(vec![]));
            self.reasoning
                .push(serde_json::json!({"type": "reasoning", "encrypted_content": sealed, "summary": summary}));
        }
        Ok(())
    }
}

impl StreamFold for ResponsesAccumulator {
    const END: &'static str = "response.completed";

    /// Feeds one event's `data`.
    fn push(&mut self, data: &str, sink: &mut dyn DeltaSink) -> Result<(), LlmError> {
        // Some servers end the events with chat completions' marker.
        if data.trim() == "[DONE]" {
            return Ok(());
        }
        let event: Value =
            serde_json::from_str(data).map_err(|e| LlmError::malformed(format!("bad stream event: {e}")))?;
        match event["type"].as_str().unwrap_or_default() {
            "response.output_text.delta" => {
                let d = event["delta"].as_str().unwrap_or_default();
                self.streamed.text(d, sink)?;
            }
            "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => {
                let d = event["delta"].as_str().unwrap_or_default();
                self.streamed.reasoning(d, sink)?;
            }
            "response.output_item.added" if event["item"]["type"] == "function_call" => {
                if self.calls.len() >= MAX_TOOL_CALLS {
                    return Err(LlmError::malformed("too many tool calls"));
                }
                let item = &event["item"];
                self.calls.push(Call {
                    item_id: item["id"].as_str().unwrap_or_default().to_owned(),
                    call_id: item["call_id"].as_str().unwrap_or_default().to_owned(),
                    name: item["name"].as_str().unwrap_or_default().to_owned(),
                    arguments: item["arguments"].as_str().unwrap_or_default().to_owned(),
                });
            }
            "response.function_call_arguments.delta" => {
                let d = event["delta"].as_str().unwrap_or_default().to_owned();
                self.streamed.add_bytes(d.len())?;
                let id = event["item_id"].as_str().unwrap_or_default();
                let index = self.calls.iter().position(|c| c.item_id == id).or_else(|| {
                    // Without an item id, the arguments belong to the latest call.
                    if id.is_empty() { self.calls.len().checked_sub(1) } else { None }
                });
                if let Some(c) = index.and_then(|i| self.calls.get_mut(i)) {
                    c.arguments.push_str(&d);
                }
            }
            "response.output_item.done" if event["item"]["type"] == "reasoning" => {
                self.keep_reasoning(&event["item"])?
            }
            "response.output_item.done" if event["item"]["type"] == "function_call" => {
                // The final item carries the complete arguments.
                let item = &event["item"];
                let id = item["id"].as_str().unwrap_or_default();
                if let Some(c) = self.calls.iter_mut().find(|c| c.item_id == id)
                    && let Some(args) = item["arguments"].as_str()
                {
                    c.arguments = args.to_owned();
                }
            }
            "response.completed" | "response.incomplete" => self.completed(&event["response"]),
            "response.failed" => {
                let err = &event["response"]["error"];
                return Err(LlmError::from_stream_error(err));
            }
            "error" => return Err(LlmError::from_stream_error(&event)),
            _ => {}
        }
        Ok(())
    }

    fn streamed(&self) -> &Streamed {
        &self.streamed
    }

    fn take_replay(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.reasoning)
    }

    fn finish(self) -> ChatResponse {
        let tool_calls: Vec<ToolCall> = self
            .calls
            .into_iter()
            .map(|c| ToolCall {
                id: if c.call_id.is_empty() { c.item_id } else { c.call_id },
                kind: "function".into(),
                function: ToolCallFunction {
                    name: c.name,
                    arguments: if c.arguments.is_empty() { "{}".into() } else { c.arguments },
                },
            })
            .collect();
        self.streamed.answer(tool_calls, self.finish, self.usage)
    }
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
