//! Delivering one outbox reply to a Telegram chat (see [`crate::outbox`]).

use serde_json::{Value, json};

use hermes_store::{Channel, OutboxItem};

use crate::Gateway;
use crate::outbox::{Failure, render};
use crate::telegram::MAX_MESSAGE_UTF16;

impl Gateway {
    pub(crate) async fn deliver_telegram(&self, channel: &Channel, item: &OutboxItem) -> Result<(), Failure> {
        let api = self.telegram(channel).map_err(Failure::Permanent)?;
        let (text, buttons) = render(&item.payload);
        let parts = hermes_chat::split::split(&text, MAX_MESSAGE_UTF16);
        let dest = &item.destination;
        let chat = dest["chat_id"].as_str().unwrap_or_default();
        // A streamed preview stops now and goes once the answer is out.
        let preview = match (item.payload["kind"].as_str(), item.turn_id) {
            (Some("answer"), Some(turn)) => {
                self.store.stream_finalize(item.tenant_id, turn).await.map_err(|e| Failure::Passing(e.to_string()))?
            }
            _ => None,
        };
        let mut ids = item.message_ids.clone();
        let done = usize::try_from(item.sent_parts).unwrap_or(0);
        // Answers are Markdown: sent as Telegram HTML, or as plain text if Telegram refuses it.
        let rich = item.payload["kind"] != "interaction";
        for (i, part) in parts.iter().enumerate().skip(done) {
            let mut params = if rich {
                json!({ "chat_id": chat, "text": hermes_chat::markdown::telegram_html(part), "parse_mode": "HTML" })
            } else {
                json!({ "chat_id": chat, "text": part })
            };
            if let Some(thread) = dest["thread"].as_str().and_then(|t| t.parse::<i64>().ok()) {
                params["message_thread_id"] = json!(thread);
            }
            if i == 0
                && let Some(reply_to) = dest["reply_to"].as_i64()
            {
                params["reply_parameters"] = json!({ "message_id": reply_to, "allow_sending_without_reply": true });
            }
            if i + 1 == parts.len() && !buttons.is_empty() {
                let keyboard: Vec<Vec<Value>> = buttons
                    .iter()
                    .map(|row| {
                        row.iter().map(|(label, data)| json!({ "text": label, "callback_data": data })).collect()
                    })
                    .collect();
                params["reply_markup"] = json!({ "inline_keyboard": keyboard });
            }
            let id = match api.send_message(&params).await {
                Err(e) if e.is_bad_markup() => {
                    tracing::info!(error = %e, "Telegram refused the formatting; sending plain text");
                    params["text"] = json!(part);
                    if let Some(obj) = params.as_object_mut() {
                        obj.remove("parse_mode");
                    }
                    api.send_message(&params).await.map_err(Failure::from)?
                }
                sent => sent.map_err(Failure::from)?,
            };
            ids.push(id.to_string());
            let sent = i32::try_from(i + 1).unwrap_or(i32::MAX);
            if let Err(e) = self.store.outbox_part_sent(item.id, sent, &ids).await {
                // The part is out but unrecorded: stop here rather than risk more doubles.
                return Err(Failure::Passing(format!("cannot record a sent part: {e}")));
            }
        }
        if let Some((chat, id)) = preview {
            crate::stream::PreviewApi::Telegram(api).delete(&chat, &id).await;
        }
        Ok(())
    }
}
