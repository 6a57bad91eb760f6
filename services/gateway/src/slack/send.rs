//! Delivering one outbox reply to a Slack conversation (see [`crate::outbox`]): parts of at
//! most 39,000 characters in Slack's `mrkdwn`, in the thread the message came from, with
//! Block Kit buttons under a question.

use serde_json::{Value, json};

use hermes_chat::slack::{MAX_MESSAGE_CHARS, mrkdwn};
use hermes_store::{Channel, OutboxItem};

use crate::Gateway;
use crate::outbox::{Failure, render};

impl Gateway {
    pub(crate) async fn deliver_slack(&self, channel: &Channel, item: &OutboxItem) -> Result<(), Failure> {
        let api = self.slack(channel).map_err(Failure::Permanent)?;
        let (text, buttons) = render(&item.payload);
        let parts = hermes_chat::split::split(&text, MAX_MESSAGE_CHARS);
        let dest = &item.destination;
        let chat = dest["chat_id"].as_str().unwrap_or_default();
        let preview = self.take_preview(item).await?;
        let last = parts.len().saturating_sub(1);
        self.send_parts(item, &parts, |i, part| {
            let body = mrkdwn(part);
            let mut params = json!({ "channel": chat, "text": body });
            if let Some(thread) = dest["thread"].as_str() {
                params["thread_ts"] = json!(thread);
            }
            if i == last && !buttons.is_empty() {
                let elements: Vec<Value> = buttons
                    .iter()
                    .flatten()
                    .map(|(label, data)| {
                        json!({ "type": "button", "text": { "type": "plain_text", "text": label },
                                "value": data, "action_id": data })
                    })
                    .collect();
                params["blocks"] = json!([
                    { "type": "section", "text": { "type": "mrkdwn", "text": body } },
                    { "type": "actions", "elements": elements },
                ]);
            }
            let api = &api;
            async move { api.post_message(&params).await.map_err(Failure::from) }
        })
        .await?;
        if let Some((chat, ts)) = preview {
            crate::stream::PreviewApi::Slack { api, thread: None }.delete(&chat, &ts).await;
        }
        Ok(())
    }
}
