//! Delivering one outbox reply to a Slack conversation (see [`crate::outbox`]): parts of at
//! most 39,000 characters in Slack's `mrkdwn`, in the thread the message came from, with
//! Block Kit buttons under a question, then the files the answer hands over.

use serde_json::{Value, json};

use hermes_chat::slack::{MAX_MESSAGE_CHARS, mrkdwn};
use hermes_store::{Channel, OutboxItem};

use crate::Gateway;
use crate::interact::Buttons;
use crate::outbox::Failure;

/// What identifies one part of one reply.
fn part_key(item: &OutboxItem, part: usize) -> String {
    format!("{}:{part}", item.id)
}

impl Gateway {
    pub(crate) async fn deliver_slack(&self, channel: &Channel, item: &OutboxItem) -> Result<(), Failure> {
        let api = self.slack(channel).map_err(Failure::Permanent)?;
        let reply = self.outgoing(item, MAX_MESSAGE_CHARS).await?;
        let chat = item.destination.chat_id.as_str();
        let thread = item.destination.thread.as_deref();
        self.send_uploads(
            item,
            &reply.parts,
            |i, text, file| {
                let params = message_params(chat, thread, text.as_deref(), &part_key(item, i), reply.buttons_under(i));
                let api = &api;
                async move {
                    match file {
                        Some(out) => api.upload_file(chat, thread, &out).await.map_err(Failure::from),
                        None => api.post_message(&params).await.map_err(Failure::from),
                    }
                }
            },
            |i, _| {
                let api = &api;
                async move {
                    let (_, since) = item.doubt?;
                    api.find_by_metadata(chat, thread, since.timestamp() - 60, &part_key(item, i)).await
                }
            },
        )
        .await?;
        if let Some((chat, ts)) = reply.preview {
            crate::stream::PreviewApi::Slack { api, thread: None }.delete(&chat, &ts).await;
        }
        Ok(())
    }
}

/// The `chat.postMessage` parameters of one text part: in `thread` when given, with the part's
/// key as metadata (so a part in doubt can be found again) and `buttons` under it.
fn message_params(chat: &str, thread: Option<&str>, text: Option<&str>, key: &str, buttons: Option<&Buttons>) -> Value {
    let body = mrkdwn(text.unwrap_or_default());
    let metadata = json!({ "event_type": "hermes_reply", "event_payload": { "part_key": key } });
    let mut params = json!({ "channel": chat, "text": body, "metadata": metadata });
    if let Some(thread) = thread {
        params["thread_ts"] = json!(thread);
    }
    if let Some(buttons) = buttons {
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
    params
}
