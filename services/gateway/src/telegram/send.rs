//! Delivering one outbox reply to a Telegram chat (see [`crate::outbox`]): its text in parts,
//! then the files the answer hands over (photos inline, anything else as a document).

use serde_json::{Value, json};

use hermes_core::outbox::OutboxPayload;
use hermes_store::{Channel, OutboxItem};

use crate::Gateway;
use crate::interact::Buttons;
use crate::outbox::Failure;
use crate::telegram::{MAX_MESSAGE_UTF16, TelegramApi};

/// How many message ids after the last known one a part in doubt is looked for.
const PROBE_WINDOW: i64 = 8;

impl Gateway {
    pub(crate) async fn deliver_telegram(&self, channel: &Channel, item: &OutboxItem) -> Result<(), Failure> {
        let api = self.telegram(channel).map_err(Failure::Permanent)?;
        let reply = self.outgoing(item, MAX_MESSAGE_UTF16).await?;
        let dest = &item.destination;
        let chat = dest.chat_id.as_str();
        let thread = dest.thread.as_deref().and_then(|t| t.parse::<i64>().ok());
        // Answers are Markdown: sent as Telegram HTML, or as plain text if Telegram refuses it.
        let rich = !matches!(item.payload, OutboxPayload::Interaction { .. });
        // A part left in doubt is looked for after the last message we know in this chat.
        let known: Vec<i64> = item.message_ids.iter().filter_map(|id| id.parse().ok()).collect();
        let anchor = known.last().copied().or(dest.reply_to);
        self.send_uploads(
            item,
            &reply.parts,
            |i, text, file| {
                let reply_to = dest.reply_to.filter(|_| i == 0);
                let params = message_params(chat, text.as_deref(), rich, thread, reply_to, reply.buttons_under(i));
                let api = &api;
                async move {
                    if let Some(out) = file {
                        return api.send_file(chat, thread, &out).await.map(|id| id.to_string()).map_err(Failure::from);
                    }
                    send_text(api, params, text).await
                }
            },
            |_, text| {
                let (api, known) = (&api, &known);
                async move { find_in_doubt(api, chat, anchor?, known, text, rich).await }
            },
        )
        .await?;
        if let Some((chat, id)) = reply.preview {
            crate::stream::PreviewApi::Telegram(api).delete(&chat, &id).await;
        }
        Ok(())
    }
}

/// Looks for a text part left in doubt among the messages after `anchor`, in either of the
/// looks it was sent in (HTML, or plain after Telegram refused the formatting).
async fn find_in_doubt(
    api: &TelegramApi,
    chat: &str,
    anchor: i64,
    known: &[i64],
    text: &str,
    rich: bool,
) -> Option<String> {
    let mut looks = Vec::new();
    if rich {
        looks.push(json!({ "text": hermes_chat::markdown::telegram_html(text), "parse_mode": "HTML" }));
    }
    looks.push(json!({ "text": text }));
    for look in &looks {
        if let Some(id) = api.find_sent(chat, anchor, known, look, PROBE_WINDOW).await {
            return Some(id.to_string());
        }
    }
    None
}

/// The `sendMessage` parameters of one part: its text (as HTML when `rich`), in the thread,
/// replying to `reply_to` and carrying `keyboard`, when given.
fn message_params(
    chat: &str,
    text: Option<&str>,
    rich: bool,
    thread: Option<i64>,
    reply_to: Option<i64>,
    keyboard: Option<&Buttons>,
) -> Value {
    let mut params = match text {
        Some(t) if rich => {
            json!({ "chat_id": chat, "text": hermes_chat::markdown::telegram_html(t), "parse_mode": "HTML" })
        }
        _ => json!({ "chat_id": chat, "text": text.unwrap_or_default() }),
    };
    if let Some(thread) = thread {
        params["message_thread_id"] = json!(thread);
    }
    if let Some(reply_to) = reply_to {
        params["reply_parameters"] = json!({ "message_id": reply_to, "allow_sending_without_reply": true });
    }
    if let Some(buttons) = keyboard {
        let keyboard: Vec<Vec<Value>> = buttons
            .iter()
            .map(|row| row.iter().map(|(label, data)| json!({ "text": label, "callback_data": data })).collect())
            .collect();
        params["reply_markup"] = json!({ "inline_keyboard": keyboard });
    }
    params
}

/// Sends a text part; refused formatting is sent again as plain `text`. The message's id.
async fn send_text(api: &TelegramApi, mut params: Value, text: Option<String>) -> Result<String, Failure> {
    let id = match api.send_message(&params).await {
        Err(e) if e.is_bad_markup() => {
            tracing::info!(error = %e, "Telegram refused the formatting; sending plain text");
            params["text"] = json!(text.unwrap_or_default());
            if let Some(obj) = params.as_object_mut() {
                obj.remove("parse_mode");
            }
            api.send_message(&params).await.map_err(Failure::from)?
        }
        sent => sent.map_err(Failure::from)?,
    };
    Ok(id.to_string())
}
