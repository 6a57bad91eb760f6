//! Delivering one outbox reply to a WeCom user through an app's message API (see
//! [`crate::outbox`]): plain text in parts of at most 2,048 characters, then the files the answer
//! hands over (uploaded as temporary media). WeCom has no message editing and no buttons for app
//! messages, so questions list the commands that answer them. AI bots: [`super::bot_send`].

use hermes_chat::OutFile;
use hermes_chat::wecom::{MAX_MESSAGE_CHARS, WecomApi, WecomError};
use hermes_store::{Channel, OutboxItem};

use crate::Gateway;
use crate::attachments::Part;
use crate::outbox::Failure;

impl Gateway {
    pub(crate) async fn deliver_wecom(&self, channel: &Channel, item: &OutboxItem) -> Result<(), Failure> {
        let api = self.wecom(channel).map_err(Failure::Permanent)?;
        // App messages have no buttons: a question lists the commands that answer it.
        let (parts, _) = self.reply_parts(item, MAX_MESSAGE_CHARS).await?;
        let to = item.destination.chat_id.as_str();
        let api = &api;
        self.send_parts(item, &parts, |_, part| async move {
            match part {
                Part::Text(text) => api.send_text(to, text).await.map_err(Failure::from),
                Part::File(file) => match &file.data {
                    Ok(data) => {
                        // WeCom shows JPG and PNG images of up to 10 MB; anything else is a file.
                        let image = matches!(file.mime.as_str(), "image/png" | "image/jpeg") && data.len() <= 10 << 20;
                        let kind = if image { "image" } else { "file" };
                        let out = OutFile { name: &file.name, mime: &file.mime, data };
                        let media = api.upload_media(kind, &out).await.map_err(Failure::from)?;
                        api.send_media(to, kind, &media).await.map_err(Failure::from)
                    }
                    Err(_) => api.send_text(to, &Part::note(file).unwrap_or_default()).await.map_err(Failure::from),
                },
            }
        })
        .await
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
