//! OpenRouter's `reasoning_details` (its one shape for every provider's reasoning: text with a
//! signature, a summary, or encrypted data), gathered from a stream and sent back with the
//! assistant message on the next call, as OpenRouter asks, so a model's signed thinking goes on
//! across tool calls. Fragments of one detail share an `index`: their text pieces are joined
//! and their other fields (the signature, the format) kept as last sent.

use serde_json::{Map, Value};

use crate::LlmError;

/// Most details one response may carry.
pub const MAX_DETAILS: usize = 64;

/// The fields of a detail that arrive in pieces.
const PIECED: [&str; 3] = ["text", "summary", "data"];

#[derive(Debug, Default)]
pub(crate) struct ReasoningDetails {
    details: Vec<Map<String, Value>>,
}

impl ReasoningDetails {
    /// The bytes of text `fragment` carries (counted against the response's cap).
    pub fn bytes_of(fragment: &Value) -> usize {
        fragment.as_object().map_or(0, |f| f.values().filter_map(Value::as_str).map(str::len).sum())
    }

    /// Folds one streamed fragment in.
    pub fn push(&mut self, fragment: Value) -> Result<(), LlmError> {
        let Value::Object(fragment) = fragment else { return Ok(()) };
        let index = fragment.get("index").and_then(Value::as_u64);
        let same = self.details.iter_mut().find(|d| index.is_some() && d.get("index").and_then(Value::as_u64) == index);
        let Some(detail) = same else {
            if self.details.len() >= MAX_DETAILS {
                return Err(LlmError::malformed(format!("more than {MAX_DETAILS} reasoning details")));
            }
            self.details.push(fragment);
            return Ok(());
        };
        for (key, value) in fragment {
            let pieced = PIECED.contains(&key.as_str());
            match (detail.get_mut(&key), value) {
                (Some(Value::String(so_far)), Value::String(piece)) if pieced => so_far.push_str(&piece),
                // A later fragment's null never erases what came (a signature sent earlier).
                (Some(_), Value::Null) => {}
                (_, value) => {
                    detail.insert(key, value);
                }
            }
        }
        Ok(())
    }

    /// The details gathered, whole, in the order they began.
    pub fn take(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.details).into_iter().map(Value::Object).collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn fragments_of_one_detail_are_joined_and_its_signature_kept() {
        let mut details = ReasoningDetails::default();
        for fragment in [
            json!({"type": "reasoning.text", "text": "Let me ", "index": 0, "format": "anthropic-claude-v1"}),
            json!({"type": "reasoning.text", "text": "check.", "index": 0, "signature": null}),
            json!({"type": "reasoning.text", "text": "", "index": 0, "signature": "EqQB"}),
            json!({"type": "reasoning.encrypted", "data": "c2Vh", "index": 1}),
            json!({"type": "reasoning.encrypted", "data": "bGVk", "index": 1}),
        ] {
            details.push(fragment).unwrap();
        }
        assert_eq!(
            details.take(),
            [
                json!({"type": "reasoning.text", "text": "Let me check.", "index": 0,
                       "format": "anthropic-claude-v1", "signature": "EqQB"}),
                json!({"type": "reasoning.encrypted", "data": "c2VhbGVk", "index": 1}),
            ]
        );
        assert!(details.take().is_empty(), "taken once");
    }

    #[test]
    fn a_provider_sending_endless_details_is_refused() {
        let mut details = ReasoningDetails::default();
        for i in 0..MAX_DETAILS {
            details.push(json!({"type": "reasoning.text", "text": "x", "index": i})).unwrap();
        }
        let more = json!({"type": "reasoning.text", "text": "x", "index": MAX_DETAILS});
        assert_eq!(ReasoningDetails::bytes_of(&more), "reasoning.text".len() + 1);
        assert!(details.push(more).is_err());
    }
}
