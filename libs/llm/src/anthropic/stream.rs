//! Folds Anthropic stream events into one assistant message.

use serde_json::Value;

use hermes_core::{ToolCall, ToolCallFunction, Usage};

use crate::accumulate::{MAX_TOOL_CALLS, Streamed};
use crate::wire::StreamFold;
use crate::{ChatResponse, DeltaSink, LlmError};

#[derive(Debug)]
enum Block {
    Text,
    /// Thinking and the signature that lets it be sent back.
    Thinking {
        text: String,
        signature: String,
    },
    /// Thinking the provider encrypted (`data`), sent back as it came.
    Redacted(Value),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    Other,
}

/// Accumulates `message_start` .. `message_stop`.
#[derive(Debug, Default)]
pub struct AnthropicAccumulator {
    blocks: Vec<Block>,
    streamed: Streamed,
    stop_reason: Option<String>,
    usage: Usage,
}

impl AnthropicAccumulator {
    /// `message_start`: the prompt's tokens, cache reads and writes included.
    fn message_start(&mut self, event: &Value) {
        let u = &event["message"]["usage"];
        let input = u["input_tokens"].as_u64().unwrap_or(0);
        let read = u["cache_read_input_tokens"].as_u64().unwrap_or(0);
        let written = u["cache_creation_input_tokens"].as_u64().unwrap_or(0);
        self.usage.prompt_tokens = input + read + written;
        self.usage.cached_tokens = read;
        self.usage.cache_write_tokens = written;
        self.usage.completion_tokens = u["output_tokens"].as_u64().unwrap_or(0);
        self.served_at(u);
    }

    /// The speed Anthropic says served the call (`usage.speed`), when it says.
    fn served_at(&mut self, usage: &Value) {
        if let Some(speed) = usage["speed"].as_str() {
            self.usage.priority = speed == "fast";
        }
    }

    /// `content_block_start`: the block at its index (gaps filled with `Other`).
    fn block_start(&mut self, event: &Value) -> Result<(), LlmError> {
        let index = event["index"].as_u64().unwrap_or(0) as usize;
        if index >= MAX_TOOL_CALLS * 4 {
            return Err(LlmError::malformed(format!("content block index {index} is out of range")));
        }
        let b = &event["content_block"];
        let block = match b["type"].as_str().unwrap_or_default() {
            "text" => Block::Text,
            "thinking" => Block::Thinking { text: String::new(), signature: String::new() },
            "redacted_thinking" => {
                self.streamed.add_bytes(b["data"].as_str().map_or(0, str::len))?;
                Block::Redacted(b.clone())
            }
            "tool_use" => Block::ToolUse {
                id: b["id"].as_str().unwrap_or_default().to_owned(),
                name: b["name"].as_str().unwrap_or_default().to_owned(),
                json: String::new(),
            },
            _ => Block::Other,
        };
        while self.blocks.len() < index {
            self.blocks.push(Block::Other);
        }
        if self.blocks.len() == index {
            self.blocks.push(block);
        } else {
            self.blocks[index] = block;
        }
        Ok(())
    }

    /// `content_block_delta`: text and thinking go to the sink, a tool's JSON to its block.
    fn block_delta(&mut self, event: &Value, sink: &mut dyn DeltaSink) -> Result<(), LlmError> {
        let index = event["index"].as_u64().unwrap_or(0) as usize;
        let delta = &event["delta"];
        match (delta["type"].as_str().unwrap_or_default(), self.blocks.get_mut(index)) {
            ("text_delta", _) => {
                let t = delta["text"].as_str().unwrap_or_default();
                self.streamed.text(t, sink)?;
            }
            ("thinking_delta", block) => {
                let t = delta["thinking"].as_str().unwrap_or_default();
                self.streamed.reasoning(t, sink)?;
                if let Some(Block::Thinking { text, .. }) = block {
                    text.push_str(t);
                }
            }
            ("signature_delta", Some(Block::Thinking { signature, .. })) => {
                let part = delta["signature"].as_str().unwrap_or_default();
                self.streamed.add_bytes(part.len())?;
                signature.push_str(part);
            }
            ("input_json_delta", Some(Block::ToolUse { json, .. })) => {
                let part = delta["partial_json"].as_str().unwrap_or_default();
                self.streamed.add_bytes(part.len())?;
                json.push_str(part);
            }
            _ => {}
        }
        Ok(())
    }

    /// `message_delta`: the stop reason and the output tokens so far.
    fn message_delta(&mut self, event: &Value) {
        if let Some(reason) = event["delta"]["stop_reason"].as_str() {
            self.stop_reason = Some(reason.to_owned());
        }
        self.served_at(&event["usage"]);
        if let Some(out) = event["usage"]["output_tokens"].as_u64() {
            self.usage.completion_tokens = out;
        }
    }
}

/// An `error` event as the error its type's HTTP status would have given.
fn stream_error(event: &Value) -> LlmError {
    let err = &event["error"];
    let status = match err["type"].as_str().unwrap_or_default() {
        "overloaded_error" => 529,
        "rate_limit_error" => 429,
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "invalid_request_error" => 400,
        _ => 500,
    };
    LlmError::from_status(status, &serde_json::json!({ "error": err }).to_string(), None)
}

impl StreamFold for AnthropicAccumulator {
    const END: &'static str = "message_stop";

    /// Feeds one event's `data` (the event name is also in its `type`).
    fn push(&mut self, data: &str, sink: &mut dyn DeltaSink) -> Result<(), LlmError> {
        let event: Value =
            serde_json::from_str(data).map_err(|e| LlmError::malformed(format!("bad stream event: {e}")))?;
        match event["type"].as_str().unwrap_or_default() {
            "message_start" => self.message_start(&event),
            "content_block_start" => self.block_start(&event)?,
            "content_block_delta" => self.block_delta(&event, sink)?,
            "message_delta" => self.message_delta(&event),
            "message_stop" => self.streamed.done = true,
            "error" => return Err(stream_error(&event)),
            _ => {}
        }
        Ok(())
    }

    fn streamed(&self) -> &Streamed {
        &self.streamed
    }

    /// Signed and redacted thinking, in order, to be sent back on the next call.
    fn take_replay(&mut self) -> Vec<Value> {
        let mut items = Vec::new();
        for block in &mut self.blocks {
            match std::mem::replace(block, Block::Other) {
                Block::Thinking { text, signature } if !signature.is_empty() => {
                    items.push(serde_json::json!({"type": "thinking", "thinking": text, "signature": signature}))
                }
                Block::Redacted(b) => items.push(b),
                other => *block = other,
            }
        }
        items
    }

    /// The finished response, with Anthropic's stop reasons in OpenAI's words.
    fn finish(mut self) -> ChatResponse {
        self.usage.total_tokens = self.usage.prompt_tokens + self.usage.completion_tokens;
        let tool_calls: Vec<ToolCall> = self
            .blocks
            .into_iter()
            .filter_map(|b| match b {
                Block::ToolUse { id, name, json } => Some(ToolCall {
                    id,
                    kind: "function".into(),
                    function: ToolCallFunction {
                        name,
                        arguments: if json.trim().is_empty() { "{}".into() } else { json },
                    },
                }),
                _ => None,
            })
            .collect();
        let finish_reason = self.stop_reason.map(|r| {
            match r.as_str() {
                "end_turn" | "stop_sequence" => "stop",
                "max_tokens" => "length",
                "tool_use" => "tool_calls",
                "refusal" => "content_filter",
                other => other,
            }
            .to_owned()
        });
        self.streamed.answer(tool_calls, finish_reason, self.usage)
    }
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
