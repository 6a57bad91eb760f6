//! Showing a chat answer as it is written (channels with `streaming`) and the tools at work
//! (channels with `tool_progress`), on Telegram and Slack: the pod that took the message in
//! follows the turn's events and keeps one preview message up to date, edited at most every
//! 0.8 s, with a cursor and the last tools (the running one marked), and it stops after three
//! flood-control refusals. Without streaming the preview shows only the tools, and only once
//! one runs for a moment. The answer itself still comes through the outbox, which takes the
//! preview over (`chat_streams.finalized`) and removes it once the answer is sent, so the chat
//! ends with exactly the answer whatever pod delivers it. A stopped turn or a question removes
//! the preview here.

use std::time::Duration;

use tokio::time::Instant;

use hermes_core::{TenantId, TurnEventKind, TurnId};
use hermes_queue::EventSubscription;
use hermes_store::Store;

use hermes_chat::slack::SlackApi;

use crate::telegram::TelegramApi;

/// The platform a preview is shown on: message ids are Telegram's numbers or Slack's `ts`.
#[derive(Clone)]
pub enum PreviewApi {
    Telegram(TelegramApi),
    Slack { api: SlackApi, thread: Option<String> },
}

impl PreviewApi {
    /// Sends a new preview; its id, or whether the refusal was flood control.
    async fn send(&self, chat: &str, text: &str) -> Result<String, bool> {
        match self {
            Self::Telegram(api) => api
                .send_message(&serde_json::json!({ "chat_id": chat, "text": text }))
                .await
                .map(|id| id.to_string())
                .map_err(|e| e.retry_after().is_some()),
            Self::Slack { api, thread } => {
                let mut params = serde_json::json!({ "channel": chat, "text": text });
                if let Some(t) = thread {
                    params["thread_ts"] = serde_json::json!(t);
                }
                api.post_message(&params).await.map_err(|e| matches!(e, hermes_chat::slack::SlackError::RateLimited(_)))
            }
        }
    }

    async fn edit(&self, chat: &str, id: &str, text: &str) -> Result<(), bool> {
        match self {
            Self::Telegram(api) => {
                let id = id.parse::<i64>().map_err(|_| false)?;
                api.edit_plain(chat, id, text).await.map_err(|e| e.retry_after().is_some())
            }
            Self::Slack { api, .. } => api
                .update_message(chat, id, text)
                .await
                .map_err(|e| matches!(e, hermes_chat::slack::SlackError::RateLimited(_))),
        }
    }

    /// Removes a preview (best effort: a missing one is fine).
    pub async fn delete(&self, chat: &str, id: &str) {
        let failed = match self {
            Self::Telegram(api) => match id.parse::<i64>() {
                Ok(id) => api.delete_message(chat, id).await.err().map(|e| e.to_string()),
                Err(_) => None,
            },
            Self::Slack { api, .. } => api.delete_message(chat, id).await.err().map(|e| e.to_string()),
        };
        if let Some(e) = failed {
            tracing::debug!(error = %e, "cannot remove a streamed preview");
        }
    }
}

const EDIT_EVERY: Duration = Duration::from_millis(800);
/// Text before the first preview is sent (a short answer needs none).
const FIRST_CHARS: usize = 24;
const CURSOR: &str = " ▉";
/// The preview shows the end of long text, within Telegram's limit.
const PREVIEW_CHARS: usize = 3_500;
const MAX_FLOOD_STRIKES: u32 = 3;

/// Where a preview goes.
pub struct Preview {
    pub store: Store,
    pub api: PreviewApi,
    pub tenant: TenantId,
    pub turn: TurnId,
    pub chat: String,
    pub limit: Duration,
    /// Show the answer's text too (`streaming`), not only the tools.
    pub text: bool,
}

/// Tools shown in the preview at most.
const SHOWN_TOOLS: usize = 5;

/// How a tool line is marked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mark {
    Running,
    Done,
    /// A delegated child's tool (upstream's 🔀 lines): shown, never waited on.
    Child,
}

/// The tools of the turn so far, newest last: the call, its line, and its mark.
#[derive(Default)]
struct ToolLog(Vec<(String, String, Mark)>);

impl ToolLog {
    fn started(&mut self, call: String, line: String) {
        self.0.push((call, line, Mark::Running));
    }

    fn child(&mut self, line: String) {
        self.0.push((String::new(), line, Mark::Child));
    }

    fn finished(&mut self, call: &str) {
        for entry in self.0.iter_mut().filter(|(c, _, mark)| c == call && *mark == Mark::Running) {
            entry.2 = Mark::Done;
        }
    }

    fn running(&self) -> bool {
        self.0.iter().any(|(_, _, mark)| *mark == Mark::Running)
    }

    fn lines(&self) -> String {
        let skip = self.0.len().saturating_sub(SHOWN_TOOLS);
        let sign = |mark: Mark| match mark {
            Mark::Running => "⏳",
            Mark::Done => "✓",
            Mark::Child => "🔀",
        };
        let lines: Vec<String> =
            self.0[skip..].iter().map(|(_, line, mark)| format!("{} {line}", sign(*mark))).collect();
        lines.join("\n")
    }
}

/// A delegated child's tool line: `[2] web_search: rust async` (the task's number when the
/// call handed out several).
fn child_line(position: u32, tasks: u32, tool: &str, preview: &str) -> String {
    let which = if tasks > 1 { format!("[{position}] ") } else { String::new() };
    format!("{which}{tool}: {}", gist(preview))
}

/// What a tool call is about, in a few words: its command, query, path or first text
/// argument (the arguments arrive as JSON).
fn gist(arguments: &str) -> String {
    const KEYS: [&str; 6] = ["command", "query", "path", "url", "code", "name"];
    let parsed: Option<serde_json::Value> = serde_json::from_str(arguments).ok();
    let text = parsed
        .as_ref()
        .and_then(|v| {
            let obj = v.as_object()?;
            KEYS.iter().find_map(|k| obj.get(*k)?.as_str()).or_else(|| obj.values().find_map(|v| v.as_str()))
        })
        .unwrap_or(arguments);
    let line = text.lines().next().unwrap_or_default();
    let mut short: String = line.chars().take(60).collect();
    if line.chars().count() > 60 || text.lines().count() > 1 {
        short.push('…');
    }
    short
}

fn render(text: Option<&str>, tools: &ToolLog) -> String {
    let mut out = String::new();
    if let Some(text) = text {
        let count = text.chars().count();
        let tail: String = text.chars().skip(count.saturating_sub(PREVIEW_CHARS)).collect();
        out = if count > PREVIEW_CHARS { format!("…{tail}") } else { tail };
        out.push_str(CURSOR);
    }
    if !tools.0.is_empty() {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&tools.lines());
    }
    out
}

impl Preview {
    /// Follows the turn until it ends (or the outbox takes over).
    pub async fn run(self, mut sub: EventSubscription) {
        match self.store.chat().stream_begin(self.tenant, self.turn, &self.chat).await {
            Ok(true) => {}
            _ => return,
        }
        let deadline = Instant::now() + self.limit;
        let (mut text, mut tools) = (String::new(), ToolLog::default());
        let (mut shown, mut message, mut last_edit, mut strikes) = (String::new(), None::<String>, Instant::now(), 0);
        let mut tick = tokio::time::interval(Duration::from_millis(200));
        let ended_normally = loop {
            tokio::select! {
                event = sub.next() => match event.map(|e| e.kind) {
                    Some(TurnEventKind::Delta { text: t }) => text.push_str(&t),
                    Some(TurnEventKind::ToolStarted { call_id, tool: name, preview, .. }) if !name.starts_with('_') => {
                        tools.started(call_id, format!("{name}: {}", gist(&preview)));
                    }
                    Some(TurnEventKind::ToolCompleted { call_id, .. }) => tools.finished(&call_id),
                    Some(TurnEventKind::ChildTool { position, tasks, tool, preview }) if !tool.starts_with('_') => {
                        tools.child(child_line(position, tasks, &tool, &preview));
                    }
                    Some(TurnEventKind::Finished { outcome }) => break outcome.error_code != Some(hermes_core::ErrorCode::Cancelled),
                    Some(TurnEventKind::Waiting { .. }) | None => break false,
                    Some(_) => {}
                },
                _ = tick.tick() => {
                    if Instant::now() > deadline {
                        break true;
                    }
                    let view = render(self.text.then_some(text.as_str()), &tools);
                    let due = last_edit.elapsed() >= EDIT_EVERY && view != shown;
                    let worth = message.is_some()
                        || (self.text && text.chars().count() >= FIRST_CHARS)
                        || tools.running();
                    if !due || !worth || strikes >= MAX_FLOOD_STRIKES {
                        continue;
                    }
                    if self.store.chat().stream_finalized(self.tenant, self.turn).await.unwrap_or(true) {
                        break true;
                    }
                    last_edit = Instant::now();
                    match self.show(message.clone(), &view).await {
                        Ok(Some(id)) => {
                            message = Some(id);
                            shown = view;
                        }
                        Ok(None) => break true,
                        Err(flood) => strikes += u32::from(flood),
                    }
                }
            }
        };
        if !ended_normally && let Ok(Some((chat, id))) = self.store.chat().stream_finalize(self.tenant, self.turn).await
        {
            // No answer will replace the preview (a stop, a question): it goes now.
            self.api.delete(&chat, &id).await;
        }
    }

    /// Sends or edits the preview: its id, `None` when the outbox took over meanwhile, or
    /// whether a failure was flood control.
    async fn show(&self, message: Option<String>, view: &str) -> Result<Option<String>, bool> {
        match message {
            Some(id) => self.api.edit(&self.chat, &id, view).await.map(|()| Some(id)),
            None => {
                let id = self.api.send(&self.chat, view).await?;
                if self.store.chat().stream_message(self.tenant, self.turn, &id).await.unwrap_or(false) {
                    Ok(Some(id))
                } else {
                    // The answer was delivered while this preview was on its way.
                    self.api.delete(&self.chat, &id).await;
                    Ok(None)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_lines_say_what_the_call_is_about() {
        assert_eq!(gist(r#"{"command":"sleep 2 && echo built"}"#), "sleep 2 && echo built");
        assert_eq!(gist(r#"{"limit":5,"query":"rust async"}"#), "rust async");
        assert_eq!(gist(r#"{"code":"import os\nprint(1)"}"#), "import os…");
        assert_eq!(gist("not json"), "not json");
        let mut log = ToolLog::default();
        log.started("a".into(), "terminal: ls".into());
        log.started("b".into(), "read_file: x".into());
        log.finished("a");
        assert!(log.running());
        assert_eq!(render(None, &log), "✓ terminal: ls\n⏳ read_file: x");
        log.child(child_line(2, 3, "web_search", r#"{"query":"rust async"}"#));
        log.child(child_line(1, 1, "terminal", r#"{"command":"ls"}"#));
        log.finished("");
        assert_eq!(
            render(None, &log),
            "✓ terminal: ls\n⏳ read_file: x\n🔀 [2] web_search: rust async\n🔀 terminal: ls"
        );
    }
}
