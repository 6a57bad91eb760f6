//! Delivering one outbox reply on a WeCom AI bot's socket (see [`crate::outbox`]): Markdown in
//! parts of at most 4,000 characters. The first part answers the person's message under its
//! `req_id` (a finished stream, which also carries the answer's images, at most ten JPG or PNG
//! of up to 10 MB); later parts, and replies to no message, are pushed to the chat. Other files
//! are named in the text (sending them over the socket is not built).

use base64::Engine;
use md5::{Digest, Md5};
use serde_json::{Value, json};

use hermes_chat::wecom_bot::{BotError, MAX_MESSAGE_CHARS, req_id};
use hermes_store::turn_files::TurnFile;
use hermes_store::{Channel, OutboxItem};

use crate::Gateway;
use crate::attachments::Part;
use crate::outbox::{Failure, render_reply};

const MAX_IMAGES: usize = 10;

/// An image as a stream's `msg_item`, if WeCom takes it that way.
fn image_item(file: &TurnFile) -> Option<Value> {
    let data = file.data.as_ref().ok()?;
    if !matches!(file.mime.as_str(), "image/png" | "image/jpeg") || data.len() > 10 << 20 {
        return None;
    }
    let md5: String = Md5::digest(data).iter().map(|b| format!("{b:02x}")).collect();
    let base64 = base64::engine::general_purpose::STANDARD.encode(data);
    Some(json!({ "msgtype": "image", "image": { "base64": base64, "md5": md5 } }))
}

impl Gateway {
    /// A socket that is reconnecting means waiting a little.
    pub(crate) async fn deliver_wecom_bot(&self, channel: &Channel, item: &OutboxItem) -> Result<(), Failure> {
        let link = self.bot_links.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&channel.id).cloned();
        let Some(link) = link else {
            return Err(Failure::Wait(std::time::Duration::from_secs(2), "the bot's socket is reconnecting".into()));
        };
        let (text, _) = render_reply(item);
        let (mut text, files) = self.attachments(item, text).await?;
        let answering = item.destination.reply_token.as_deref();
        let mut images = Vec::new();
        for file in &files {
            match image_item(file) {
                Some(image) if answering.is_some() && images.len() < MAX_IMAGES => images.push(image),
                _ => {
                    let note = Part::note(file)
                        .unwrap_or_else(|| format!("(I made {}, but I cannot send it on WeCom.)", file.name));
                    text = format!("{text}\n{note}").trim().to_owned();
                }
            }
        }
        let parts = hermes_chat::split::split(&text, MAX_MESSAGE_CHARS);
        let chat = item.destination.chat_id.as_str();
        let (link, images) = (&link, &images);
        self.send_parts(item, &parts, |i, part| {
            let part = part.to_owned();
            async move {
                if i == 0
                    && let Some(req) = answering
                {
                    let mut stream =
                        json!({ "id": uuid::Uuid::now_v7().simple().to_string(), "finish": true, "content": part });
                    if !images.is_empty() {
                        stream["msg_item"] = json!(images);
                    }
                    let body = json!({ "msgtype": "stream", "stream": stream });
                    match link.request("aibot_respond_msg", req, body).await {
                        Ok(()) => return Ok(req.to_owned()),
                        // Too late to answer the message itself (or answered already): push it.
                        Err(BotError::Refused { code, message }) => {
                            tracing::info!(code, message, "cannot answer under the message's req_id; pushing");
                        }
                        Err(e) => return Err(Failure::Passing(e.to_string())),
                    }
                }
                let id = req_id("aibot_send_msg");
                let mut content = part;
                if i == 0 && !images.is_empty() {
                    content.push_str(&format!("\n({} image(s) could not be attached.)", images.len()));
                }
                let body = json!({ "chatid": chat, "msgtype": "markdown", "markdown": { "content": content } });
                match link.request("aibot_send_msg", &id, body).await {
                    Ok(()) => Ok(id),
                    Err(e @ BotError::Refused { .. }) => Err(Failure::Permanent(e.to_string())),
                    Err(e) => Err(Failure::Passing(e.to_string())),
                }
            }
        })
        .await
    }
}
