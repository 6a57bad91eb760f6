//! Delivering one outbox reply to a Slack conversation (see [`crate::outbox`]): parts of at
//! most 39,000 characters in Slack's `mrkdwn`, in the thread the message came from, with
//! Block Kit buttons under a question, then the files the answer hands over.

use serde_json::{Value, json};

use hermes_chat::slack::{MAX_MESSAGE_CHARS, mrkdwn};
use hermes_store::{Channel, OutboxItem};

use crate::Gateway;
use crate::attachments::Part;
use crate::outbox::Failure;

/// What identifies one part of one reply.
fn part_key(item: &OutboxItem, part: usize) -> String {
    format!("{}:{part}", item.id)
}

impl Gateway {
    pub(crate) async fn deliver_slack(&self, channel: &Channel, item: &OutboxItem) -> Result<(), Failure> {
        let api = self.slack(channel).map_err(Failure::Permanent)?;
        let (parts, buttons) = self.reply_parts(item, |t| hermes_chat::split::split(t, MAX_MESSAGE_CHARS)).await?;
        let dest = &item.destination;
        let chat = dest.chat_id.as_str();
        let thread = dest.thread.as_deref();
        let preview = self.take_preview(item).await?;
        let last_text = parts.iter().rposition(|p| matches!(p, Part::Text(_)));
        let all = &parts;
        let recover = |i: usize, _: &Part| {
            let api = &api;
            async move {
                let (Part::Text(_), Some((_, since))) = (&all[i], item.doubt) else { return None };
                let oldest = since.timestamp() - 60;
                api.find_by_metadata(chat, thread, oldest, &part_key(item, i)).await
            }
        };
        self.send_parts_recovering(
            item,
            &parts,
            |i, _| {
                let api = &api;
                // Borrowed from the list, not the argument: the send outlives the call.
                let (text, file) = all[i].to_send();
                let body = mrkdwn(text.as_deref().unwrap_or_default());
                // The part's key rides along, so a part in doubt can be found again.
                let metadata =
                    json!({ "event_type": "hermes_reply", "event_payload": { "part_key": part_key(item, i) } });
                let mut params = json!({ "channel": chat, "text": body, "metadata": metadata });
                if let Some(thread) = thread {
                    params["thread_ts"] = json!(thread);
                }
                if Some(i) == last_text && !buttons.is_empty() {
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
                async move {
                    match file {
                        Some(out) => api.upload_file(chat, thread, &out).await.map_err(Failure::from),
                        None => api.post_message(&params).await.map_err(Failure::from),
                    }
                }
            },
            recover,
        )
        .await?;
        if let Some((chat, ts)) = preview {
            crate::stream::PreviewApi::Slack { api, thread: None }.delete(&chat, &ts).await;
        }
        Ok(())
    }
}
