//! Shapes a transcript into what every provider accepts, before each model call:
//! system messages first; then user and assistant turns alternating; an assistant message
//! with tool calls followed by exactly one result per call, in call order. Broken histories
//! (a turn that died between a tool call and its result, a client that sent an odd history)
//! are repaired here instead of being rejected by the provider on every later turn.

use std::collections::HashSet;

use hermes_core::{ChatMessage, Content, ContentPart, Role};

/// Text of the result that stands in for a tool call that never got one.
pub const MISSING_RESULT: &str = "[no result: this tool call was interrupted before it finished]";

/// Marks where a conversation starts with the assistant (providers require a user first).
const CONTINUED: &str = "(continuing the conversation)";

fn merge_content(into: &mut ChatMessage, from: ChatMessage) {
    let joined = match (into.content.take(), from.content) {
        (None, other) | (other, None) => other,
        (Some(Content::Text(a)), Some(Content::Text(b))) => Some(Content::Text(format!("{a}\n\n{b}"))),
        (Some(a), Some(b)) => {
            let mut parts = to_parts(a);
            parts.extend(to_parts(b));
            Some(Content::Parts(parts))
        }
    };
    into.content = joined;
    // Replayable reasoning of both, in order, where one model wrote both.
    match (&mut into.replay, from.replay) {
        (None, replay) => into.replay = replay,
        (Some(kept), Some(more)) if kept.for_call(more.api, &more.base_url, &more.model).is_some() => {
            kept.items.extend(more.items);
        }
        _ => {}
    }
    if let Some(r) = from.reasoning {
        into.reasoning = Some(match into.reasoning.take() {
            Some(prev) => format!("{prev}\n{r}"),
            None => r,
        });
    }
}

fn to_parts(c: Content) -> Vec<ContentPart> {
    match c {
        Content::Text(text) => vec![ContentPart::Text { text }],
        Content::Parts(parts) => parts,
    }
}

fn is_empty_assistant(m: &ChatMessage) -> bool {
    m.role == Role::Assistant && m.tool_calls.is_empty() && m.text().trim().is_empty()
}

/// Returns the provider-ready form of `messages`.
pub fn normalize(messages: &[ChatMessage]) -> Vec<ChatMessage> {
    let mut out: Vec<ChatMessage> = Vec::with_capacity(messages.len() + 1);
    let mut iter = messages.iter().peekable();
    // Leading system messages stay as they are, in order.
    while let Some(m) = iter.next_if(|m| m.role == Role::System) {
        out.push(m.clone());
    }
    let body_start = out.len();
    let rest: Vec<&ChatMessage> = iter.collect();
    let mut i = 0;
    while i < rest.len() {
        let m = rest[i];
        i += 1;
        match m.role {
            // A stray tool result (no assistant call before it) is dropped.
            Role::Tool => continue,
            Role::Assistant if !m.tool_calls.is_empty() => {
                // Its results are the tool messages right after it; keep one per call, in
                // call order, and stand in for the missing ones.
                let mut results = Vec::new();
                while i < rest.len() && rest[i].role == Role::Tool {
                    results.push(rest[i]);
                    i += 1;
                }
                let mut seen = HashSet::new();
                let mut call_msg = m.clone();
                call_msg.tool_calls.retain(|c| seen.insert(c.id.clone()));
                let block: Vec<ChatMessage> = call_msg
                    .tool_calls
                    .iter()
                    .map(|call| {
                        results
                            .iter()
                            .find(|r| r.tool_call_id.as_deref() == Some(call.id.as_str()))
                            .map(|r| (*r).clone())
                            .unwrap_or_else(|| ChatMessage::tool_result(&call.id, &call.function.name, MISSING_RESULT))
                    })
                    .collect();
                out.push(call_msg);
                out.extend(block);
            }
            _ => {
                let mut msg = m.clone();
                if msg.role == Role::System {
                    // Providers reject system messages mid-conversation: keep the text as a note.
                    msg.role = Role::User;
                }
                if is_empty_assistant(&msg) {
                    continue;
                }
                // Two messages of the same role in a row are merged (a user message after a
                // tool block is fine; an assistant after a tool block is the model going on).
                let in_body = out.len() > body_start;
                match out.last_mut() {
                    Some(prev) if in_body && prev.role == msg.role && prev.tool_calls.is_empty() => {
                        merge_content(prev, msg);
                    }
                    _ => out.push(msg),
                }
            }
        }
    }
    if out.get(body_start).is_some_and(|m| m.role != Role::User) {
        out.insert(body_start, ChatMessage::user(CONTINUED));
    }
    out
}

#[cfg(test)]
#[path = "normalize_tests.rs"]
mod tests;
