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
        let preview = self.take_preview(item).await?;
        // Answers are Markdown: sent as Telegram HTML, or as plain text if Telegram refuses it.
        let rich = item.payload["kind"] != "interaction";
        let last = parts.len().saturating_sub(1);
        self.send_parts(item, &parts, |i, part| {
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
            if i == last && !buttons.is_empty() {
                let keyboard: Vec<Vec<Value>> = buttons
                    .iter()
                    .map(|row| {
                        row.iter().map(|(label, data)| json!({ "text": label, "callback_data": data })).collect()
                    })
                    .collect();
                params["reply_markup"] = json!({ "inline_keyboard": keyboard });
            }
            let (api, plain) = (&api, part.to_owned());
            async move {
                let id = match api.send_message(&params).await {
                    Err(e) if e.is_bad_markup() => {
                        tracing::info!(error = %e, "Telegram refused the formatting; sending plain text");
                        params["text"] = json!(plain);
                        if let Some(obj) = params.as_object_mut() {
                            obj.remove("parse_mode");
                        }
                        api.send_message(&params).await.map_err(Failure::from)?
                    }
                    sent => sent.map_err(Failure::from)?,
                };
                Ok(id.to_string())
            }
        })
        .await?;
        if let Some((chat, id)) = preview {
            crate::stream::PreviewApi::Telegram(api).delete(&chat, &id).await;
        }
        Ok(())
    }
}
