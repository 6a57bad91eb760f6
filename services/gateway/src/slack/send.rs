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
        // A streamed preview stops now and goes once the answer is out.
        let preview = match (item.payload["kind"].as_str(), item.turn_id) {
            (Some("answer"), Some(turn)) => {
                self.store.stream_finalize(item.tenant_id, turn).await.map_err(|e| Failure::Passing(e.to_string()))?
            }
            _ => None,
        };
        let mut ids = item.message_ids.clone();
        let done = usize::try_from(item.sent_parts).unwrap_or(0);
        for (i, part) in parts.iter().enumerate().skip(done) {
            let body = mrkdwn(part);
            let mut params = json!({ "channel": chat, "text": body });
            if let Some(thread) = dest["thread"].as_str() {
                params["thread_ts"] = json!(thread);
            }
            if i + 1 == parts.len() && !buttons.is_empty() {
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
            let ts = api.post_message(&params).await.map_err(Failure::from)?;
            ids.push(ts);
            let sent = i32::try_from(i + 1).unwrap_or(i32::MAX);
            if let Err(e) = self.store.outbox_part_sent(item.id, sent, &ids).await {
                return Err(Failure::Passing(format!("cannot record a sent part: {e}")));
            }
        }
        if let Some((chat, ts)) = preview {
            crate::stream::PreviewApi::Slack { api, thread: None }.delete(&chat, &ts).await;
        }
        Ok(())
    }
}
