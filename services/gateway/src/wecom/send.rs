//! Delivering one outbox reply to a WeCom user (see [`crate::outbox`]): plain text in parts of
//! at most 2,048 characters through an app's message API, or Markdown in parts of at most 4,000
//! on an AI bot's socket. WeCom has no message editing and no buttons for app messages, so
//! questions list the commands that answer them.

use hermes_chat::wecom::{MAX_MESSAGE_CHARS, WecomApi, WecomError};
use hermes_chat::wecom_bot::BotError;
use hermes_store::{Channel, OutboxItem};
use serde_json::json;

use crate::Gateway;
use crate::outbox::{Failure, render};

impl Gateway {
    pub(crate) async fn deliver_wecom(&self, channel: &Channel, item: &OutboxItem) -> Result<(), Failure> {
        let api = self.wecom(channel).map_err(Failure::Permanent)?;
        let (text, _) = render(&item.payload);
        let text = self.without_files(item, text).await?;
        let parts = hermes_chat::split::split(&text, MAX_MESSAGE_CHARS);
        let to = item.destination["chat_id"].as_str().unwrap_or_default();
        let api = &api;
        self.send_parts(item, &parts, |_, part| {
            let part = part.to_owned();
            async move { api.send_text(to, &part).await.map_err(Failure::from) }
        })
        .await
    }

    /// Sends a reply on an AI bot's socket: the first part answers the person's message under
    /// its `req_id` (a finished stream); later parts, and replies to no message, are pushed
    /// to the chat. A socket that is reconnecting means waiting a little.
    pub(crate) async fn deliver_wecom_bot(&self, channel: &Channel, item: &OutboxItem) -> Result<(), Failure> {
        let link = self.bot_links.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&channel.id).cloned();
        let Some(link) = link else {
            return Err(Failure::Wait(std::time::Duration::from_secs(2), "the bot's socket is reconnecting".into()));
        };
        let (text, _) = render(&item.payload);
        let text = self.without_files(item, text).await?;
        let parts = hermes_chat::split::split(&text, hermes_chat::wecom_bot::MAX_MESSAGE_CHARS);
        let chat = item.destination["chat_id"].as_str().unwrap_or_default();
        let answering = item.destination["reply_token"].as_str();
        let link = &link;
        self.send_parts(item, &parts, |i, part| {
            let part = part.to_owned();
            async move {
                if i == 0
                    && let Some(req) = answering
                {
                    let stream =
                        json!({ "id": uuid::Uuid::now_v7().simple().to_string(), "finish": true, "content": part });
                    let body = json!({ "msgtype": "stream", "stream": stream });
                    match link.request("aibot_respond_msg", req, body).await {
                        Ok(()) => return Ok(req.to_owned()),
                        // Too late to answer the message itself (or answered already): push it.
                        Err(BotError::Refused { code, message }) => {
                            tracing::debug!(code, message, "cannot answer under the message's req_id; pushing");
                        }
                        Err(e) => return Err(Failure::Passing(e.to_string())),
                    }
                }
                let id = hermes_chat::wecom_bot::req_id("aibot_send_msg");
                let body = json!({ "chatid": chat, "msgtype": "markdown", "markdown": { "content": part } });
                match link.request("aibot_send_msg", &id, body).await {
                    Ok(()) => Ok(id),
                    Err(e @ BotError::Refused { .. }) => Err(Failure::Permanent(e.to_string())),
                    Err(e) => Err(Failure::Passing(e.to_string())),
                }
            }
        })
        .await
    }

    /// WeCom gets no files from the agent yet: the answer says which it made.
    async fn without_files(&self, item: &OutboxItem, text: String) -> Result<String, Failure> {
        let (mut text, files) = self.attachments(item, text).await?;
        for file in files {
            text.push_str(&format!("\n(I made {}, but I cannot send files on WeCom yet.)", file.name));
        }
        Ok(text)
    }

    /// The message API of a WeCom channel; one client per channel, so its token is reused.
    pub fn wecom(&self, channel: &Channel) -> Result<WecomApi, String> {
        let mut clients = self.wecom_clients.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(api) = clients.get(&channel.id) {
            return Ok(api.clone());
        }
        let creds = channel.credentials(self.secrets.as_ref()).map_err(|e| e.to_string())?;
        let text = |k: &str| creds[k].as_str().unwrap_or_default().to_owned();
        let agent = creds["agent_id"].as_i64().ok_or("the channel has no agent id")?;
        let api = WecomApi::new(self.http.clone(), &channel.api_base, &text("corp_id"), &text("secret"), agent);
        clients.insert(channel.id, api.clone());
        Ok(api)
    }
}

impl From<WecomError> for Failure {
    fn from(e: WecomError) -> Self {
        if e.is_rate_limit() {
            Failure::Wait(std::time::Duration::from_secs(60), e.to_string())
        } else if e.is_permanent() {
            Failure::Blocked(e.to_string())
        } else {
            Failure::Passing(e.to_string())
        }
    }
}
