//! Scripted answers.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

/// One scripted answer to one `/chat/completions` request.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ScriptedReply {
    /// Plain text.
    Text {
        text: String,
        #[serde(default)]
        reasoning: Option<String>,
        #[serde(default)]
        finish_reason: Option<String>,
        #[serde(default)]
        latency_ms: u64,
    },
    /// Tool calls: `(name, arguments)` pairs; ids are `call_<n>`.
    ToolCalls {
        calls: Vec<(String, Value)>,
        #[serde(default)]
        latency_ms: u64,
    },
    /// An HTTP error with an OpenAI-style body.
    Error {
        status: u16,
        #[serde(default)]
        message: String,
        #[serde(default)]
        latency_ms: u64,
    },
}

impl ScriptedReply {
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into(), reasoning: None, finish_reason: None, latency_ms: 0 }
    }

    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        Self::ToolCalls { calls: vec![(name.into(), arguments)], latency_ms: 0 }
    }

    /// A call to the terminal tool running `command`.
    pub fn terminal(command: impl Into<String>) -> Self {
        Self::tool_call("terminal", serde_json::json!({ "command": command.into() }))
    }

    pub fn error(status: u16) -> Self {
        Self::Error { status, message: format!("scripted error {status}"), latency_ms: 0 }
    }

    /// Waits this long before answering.
    pub fn after(mut self, latency: Duration) -> Self {
        let ms = u64::try_from(latency.as_millis()).unwrap_or(u64::MAX);
        match &mut self {
            Self::Text { latency_ms, .. } | Self::ToolCalls { latency_ms, .. } | Self::Error { latency_ms, .. } => {
                *latency_ms = ms
            }
        }
        self
    }

    /// Adds reasoning text (streamed as `reasoning_content`).
    pub fn with_reasoning(mut self, text: impl Into<String>) -> Self {
        if let Self::Text { reasoning, .. } = &mut self {
            *reasoning = Some(text.into());
        }
        self
    }

    pub(crate) fn latency(&self) -> Duration {
        match self {
            Self::Text { latency_ms, .. } | Self::ToolCalls { latency_ms, .. } | Self::Error { latency_ms, .. } => {
                Duration::from_millis(*latency_ms)
            }
        }
    }
}
