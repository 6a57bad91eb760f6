//! Chat messages in OpenAI form, the one message shape used everywhere inside Hermes Cloud
//! (storage, agent loop, providers convert at their edge).

use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    /// The wire name (`"user"`, ...), also the stored value.
    pub fn as_str(&self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    /// Parses a stored or client-given role; OpenAI's `developer` role is a system message.
    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "system" | "developer" => Some(Role::System),
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            "tool" => Some(Role::Tool),
            _ => None,
        }
    }
}

/// Message content: plain text or a list of typed parts (text, images).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

impl Content {
    /// `self` followed by `next`, as one message: text joined by a newline, or every part of
    /// both (a picture or a file sent right after words keeps its part).
    pub fn followed_by(self, next: Content) -> Content {
        match (self, next) {
            (Content::Text(a), Content::Text(b)) => Content::Text(format!("{a}\n{b}")),
            (a, b) => {
                let mut parts = a.into_parts();
                parts.extend(b.into_parts());
                Content::Parts(parts)
            }
        }
    }

    fn into_parts(self) -> Vec<ContentPart> {
        match self {
            Content::Text(text) => vec![ContentPart::Text { text }],
            Content::Parts(parts) => parts,
        }
    }

    /// The text of the content, parts joined by newlines; images are left out.
    pub fn text(&self) -> String {
        match self {
            Content::Text(t) => t.clone(),
            Content::Parts(parts) => parts
                .iter()
                .filter_map(|p| match p {
                    ContentPart::Text { text } => Some(text.as_str()),
                    ContentPart::ImageUrl { .. } | ContentPart::File { .. } => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

/// One part of a multi-part message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    Text {
        text: String,
    },
    ImageUrl {
        image_url: ImageUrl,
    },
    /// A file someone sent, in OpenAI's `file` part shape. The worker keeps it in the
    /// sandbox's inbox and puts a note in its place before the turn begins, so neither the
    /// stored conversation nor a model provider ever gets its bytes.
    File {
        file: FileData,
    },
}

/// A file part's name and bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileData {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// The bytes as a `data:<mime>;base64,...` URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_data: Option<String>,
}

impl FileData {
    /// The file named, without its bytes, for where a part cannot carry a file.
    pub fn mention(&self) -> String {
        format!("[The user sent a file: {}]", self.filename.as_deref().unwrap_or("unnamed"))
    }
}

/// An image given by URL (http(s) or `data:`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageUrl {
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// A tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub function: ToolCallFunction,
}

fn function_type() -> String {
    "function".to_owned()
}

/// The function part of a tool call; `arguments` is the model's JSON text, unparsed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallFunction {
    pub name: String,
    pub arguments: String,
}

/// A chat message in OpenAI form, plus the model's `reasoning` kept apart from the answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    #[serde(default)]
    pub content: Option<Content>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Reasoning/thinking text the model returned; never part of `content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Reasoning the provider wants back verbatim on later calls (stored apart,
    /// `messages.reasoning_replay`); never read from or shown to clients.
    #[serde(skip)]
    pub replay: Option<ReasoningReplay>,
}

/// Reasoning a provider asks to be sent back as it was: Anthropic's signed `thinking` and
/// `redacted_thinking` blocks, the Responses API's `reasoning` items with their
/// `encrypted_content`. Opaque to us, and replayed only to the endpoint, API and model that
/// wrote it (signatures and encryption are sealed to them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReasoningReplay {
    pub api: crate::ApiMode,
    /// The base URL that answered.
    pub base_url: String,
    pub model: String,
    /// The provider's blocks or items, in order, exactly as it sent them.
    pub items: Vec<serde_json::Value>,
}

impl ReasoningReplay {
    /// The items, if they were written by `model` speaking `api` at `base_url`.
    pub fn for_call(&self, api: crate::ApiMode, base_url: &str, model: &str) -> Option<&[serde_json::Value]> {
        (self.api == api && self.base_url == base_url && self.model == model).then_some(self.items.as_slice())
    }
}

impl ChatMessage {
    fn plain(role: Role, text: impl Into<String>) -> Self {
        Self {
            role,
            content: Some(Content::Text(text.into())),
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
            reasoning: None,
            replay: None,
        }
    }

    /// The replayable reasoning of this message for a call of `model` speaking `api` at
    /// `base_url`.
    pub fn replay_for(&self, api: crate::ApiMode, base_url: &str, model: &str) -> &[serde_json::Value] {
        self.replay.as_ref().and_then(|r| r.for_call(api, base_url, model)).unwrap_or_default()
    }

    pub fn system(text: impl Into<String>) -> Self {
        Self::plain(Role::System, text)
    }

    pub fn user(text: impl Into<String>) -> Self {
        Self::plain(Role::User, text)
    }

    pub fn assistant(text: impl Into<String>) -> Self {
        Self::plain(Role::Assistant, text)
    }

    /// The result of the tool call `call_id`.
    pub fn tool_result(call_id: impl Into<String>, name: impl Into<String>, text: impl Into<String>) -> Self {
        Self { tool_call_id: Some(call_id.into()), name: Some(name.into()), ..Self::plain(Role::Tool, text) }
    }

    /// The text content, empty when there is none.
    pub fn text(&self) -> String {
        self.content.as_ref().map(Content::text).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_followed_by_another_keeps_every_part_of_both() {
        let text = |t: &str| Content::Text(t.into());
        assert_eq!(text("one").followed_by(text("two")), text("one\ntwo"));
        let file = ContentPart::File {
            file: FileData {
                filename: Some("plan.pdf".into()),
                file_data: Some("data:application/pdf;base64,JVBERi0=".into()),
            },
        };
        let joined = text("here is the plan").followed_by(Content::Parts(vec![file.clone()]));
        assert_eq!(joined, Content::Parts(vec![ContentPart::Text { text: "here is the plan".into() }, file]));
    }

    #[test]
    fn parses_openai_messages_with_parts_and_tool_calls() {
        let raw = r#"[
            {"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA"}}]},
            {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"terminal","arguments":"{\"command\":\"ls\"}"}}]},
            {"role":"tool","tool_call_id":"c1","content":"a.txt"}
        ]"#;
        let msgs: Vec<ChatMessage> = serde_json::from_str(raw).unwrap();
        assert_eq!(msgs[0].text(), "look");
        assert_eq!(msgs[1].tool_calls[0].function.name, "terminal");
        assert_eq!(msgs[2].tool_call_id.as_deref(), Some("c1"));
        // Reasoning and empty tool_calls are not serialised back.
        let out = serde_json::to_value(&msgs[2]).unwrap();
        assert!(out.get("tool_calls").is_none());
        assert!(out.get("reasoning").is_none());
    }
}
