//! Showing a chat answer as it is written (channels with `streaming`; Telegram and Slack): the pod that
//! took the message in follows the turn's events and keeps one preview message up to date,
//! edited at most every 0.8 s, with a cursor and the tool at work, and it stops after three
//! flood-control refusals. The answer itself still comes through the outbox, which takes the
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
}

fn render(text: &str, tool: Option<&str>) -> String {
    let count = text.chars().count();
    let tail: String = text.chars().skip(count.saturating_sub(PREVIEW_CHARS)).collect();
    let mut out = if count > PREVIEW_CHARS { format!("…{tail}") } else { tail };
    out.push_str(CURSOR);
    if let Some(tool) = tool {
        out.push_str(&format!("\n\n🔧 {tool}"));
    }
    out
}

impl Preview {
    /// Follows the turn until it ends (or the outbox takes over).
    pub async fn run(self, mut sub: EventSubscription) {
        match self.store.stream_begin(self.tenant, self.turn, &self.chat).await {
            Ok(true) => {}
            _ => return,
        }
        let deadline = Instant::now() + self.limit;
        let (mut text, mut tool) = (String::new(), None::<String>);
        let (mut shown, mut message, mut last_edit, mut strikes) = (String::new(), None::<String>, Instant::now(), 0);
        let mut tick = tokio::time::interval(Duration::from_millis(200));
        let ended_normally = loop {
            tokio::select! {
                event = sub.next() => match event.map(|e| e.kind) {
                    Some(TurnEventKind::Delta { text: t }) => text.push_str(&t),
                    Some(TurnEventKind::ToolStarted { tool: name, preview, .. }) if !name.starts_with('_') => {
                        tool = Some(format!("{name}: {}", preview.chars().take(60).collect::<String>()));
                    }
                    Some(TurnEventKind::ToolCompleted { .. }) => tool = None,
                    Some(TurnEventKind::Finished { outcome }) => break outcome.error_code.as_deref() != Some("cancelled"),
                    Some(TurnEventKind::Waiting { .. }) | None => break false,
                    Some(_) => {}
                },
                _ = tick.tick() => {
                    if Instant::now() > deadline {
                        break true;
                    }
                    let view = render(&text, tool.as_deref());
                    let due = last_edit.elapsed() >= EDIT_EVERY && view != shown;
                    let worth = message.is_some() || text.chars().count() >= FIRST_CHARS || tool.is_some();
                    if !due || !worth || strikes >= MAX_FLOOD_STRIKES {
                        continue;
                    }
                    if self.store.stream_finalized(self.tenant, self.turn).await.unwrap_or(true) {
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
        if !ended_normally && let Ok(Some((chat, id))) = self.store.stream_finalize(self.tenant, self.turn).await {
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
                if self.store.stream_message(self.tenant, self.turn, &id).await.unwrap_or(false) {
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
