//! Files sent to the bot become part of the message the agent reads: images as image parts
//! (up to 20 MB, scaled down to the embed budget by `hermes_images::fit`), text files inline (up to 64 KB of UTF-8), voice notes and audio files as their
//! transcript (`voice.rs`), any other file (up to 20 MB) as a file part that the worker keeps
//! in the workspace's inbox (`services/worker/src/inbox.rs`). Anything larger is named in the
//! message so the agent can say it cannot read it. Telegram (`getFile`) and
//! Slack (`url_private_download`, with the bot token) files are read, a WeCom app's images
//! (`media/get`) and a WeCom AI bot's media, decrypted with the key that came with it; Telegram gives bots files of up to 20 MB
//! at all.

use base64::Engine;

use hermes_core::media::mime_for;
use hermes_core::message::FileData;
use hermes_core::{ChannelMode, ChatMessage, Content, ContentPart, Platform, Role};
use hermes_store::Channel;

use crate::Gateway;
use crate::incoming::IncomingFile;
use crate::voice::Unheard;
use crate::voice_spend::Billed;

const MAX_IMAGE_BYTES: u64 = 20 * 1024 * 1024;
const MAX_TEXT_BYTES: u64 = 64 * 1024;
/// Any other file (a PDF, an office document, an archive), by platform: what its bots may
/// download (Telegram's `getFile`, WeCom's media API); Slack's is larger than anyone should
/// hand an agent, so 100 MB. The operator's `gateway.max_file_mb` caps all of them.
fn platform_document_limit(platform: hermes_core::Platform) -> u64 {
    const MB: u64 = 1024 * 1024;
    match platform {
        hermes_core::Platform::Slack => 100 * MB,
        hermes_core::Platform::Telegram | hermes_core::Platform::Wecom => 20 * MB,
    }
}

fn is_text(mime: &str) -> bool {
    mime.starts_with("text/") || matches!(mime, "application/json" | "application/xml" | "application/x-yaml")
}

/// An image part for `bytes`, within the embed budget; decoding a stranger's file runs off the
/// async threads.
async fn image_part(bytes: Vec<u8>) -> Result<ContentPart, String> {
    let fitted = tokio::task::spawn_blocking(move || hermes_images::fit(&bytes, hermes_images::EMBED_TARGET_BYTES))
        .await
        .map_err(|_| "the image could not be read".to_owned())?
        .map_err(|e| e.to_string())?;
    let data = base64::engine::general_purpose::STANDARD.encode(fitted.bytes);
    let url = format!("data:{};base64,{data}", fitted.mime);
    Ok(ContentPart::ImageUrl { image_url: hermes_core::message::ImageUrl { url, detail: None } })
}

impl Gateway {
    /// A plain download of at most `limit` bytes from a URL a platform payload named: a public
    /// address (or the channel's own, operator-set host), never one inside the cluster.
    async fn fetch_limited(&self, channel: &Channel, url: &str, limit: u64) -> Result<Vec<u8>, String> {
        let parsed = reqwest::Url::parse(url).map_err(|_| "the file's URL is not a URL".to_owned())?;
        let host_port = |u: &reqwest::Url| (u.host_str().map(str::to_owned), u.port_or_known_default());
        let own = reqwest::Url::parse(&channel.api_base).is_ok_and(|base| host_port(&base) == host_port(&parsed));
        if let Some(why) = self.outbound.refuse(&parsed).filter(|_| !own) {
            tracing::warn!(channel.id = %channel.id, %why, "a file URL was refused");
            return Err(format!("the file's address is refused: {why}"));
        }
        let resp = self
            .http
            .get(url)
            .timeout(std::time::Duration::from_secs(60))
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|e| e.without_url().to_string())?;
        hermes_chat::body::bytes(resp, limit).await.map_err(|e| e.to_string())
    }

    /// A file's bytes from the channel's platform, at most `limit`.
    async fn download(&self, channel: &Channel, file: &IncomingFile, limit: u64) -> Result<Vec<u8>, String> {
        let id = file.file_id.as_str();
        match (channel.platform, channel.mode) {
            (Platform::Telegram, _) => self.telegram(channel)?.download(id, limit).await.map_err(|e| e.to_string()),
            (Platform::Slack, _) => self.slack(channel)?.download(id, limit).await.map_err(|e| e.to_string()),
            (Platform::Wecom, ChannelMode::Webhook) => {
                self.wecom(channel)?.download_media(id, limit).await.map_err(|e| e.to_string())
            }
            (Platform::Wecom, ChannelMode::Websocket) => {
                let key = file.key.as_deref().ok_or("the file came without its key")?;
                // The encrypted file is up to 32 bytes longer than the file.
                let sealed = self.fetch_limited(channel, id, limit + 32).await?;
                hermes_chat::wecom_bot::decrypt_media(key, sealed).map_err(|e| e.to_string())
            }
            (platform, mode) => Err(format!("files from {platform} ({mode}) are not read yet")),
        }
    }

    /// The message for `text` with its files, as the agent will read it, and the media calls
    /// reading them took (transcriptions), to be metered with the turn.
    pub(crate) async fn with_files(
        &self,
        channel: &Channel,
        text: String,
        files: &[IncomingFile],
    ) -> (ChatMessage, Vec<Billed>) {
        let mut billed = Vec::new();
        if files.is_empty() {
            return (ChatMessage::user(text), billed);
        }
        // A voice note alone becomes a plain message of its transcript, as upstream's does.
        let voice_only = text.is_empty() && files.len() == 1 && files.iter().all(|f| f.mime.starts_with("audio/"));
        let mut parts = Vec::new();
        if !text.is_empty() {
            parts.push(ContentPart::Text { text });
        }
        for file in files {
            if file.mime.starts_with("audio/") {
                let (note, call) = self.listen(channel, file).await;
                parts.push(ContentPart::Text { text: note });
                billed.extend(call);
                continue;
            }
            parts.push(self.part_for(channel, file).await);
        }
        if let ([ContentPart::Text { text }], true) = (parts.as_slice(), voice_only) {
            return (ChatMessage::user(text.clone()), billed);
        }
        let mut message = ChatMessage::user(String::new());
        message.role = Role::User;
        message.content = Some(Content::Parts(parts));
        (message, billed)
    }

    /// A file other than audio as the agent gets it: an image part, a small text file inline,
    /// any other file whole as a file part (the worker keeps it in the workspace's inbox), or
    /// a note saying why not.
    async fn part_for(&self, channel: &Channel, file: &IncomingFile) -> ContentPart {
        let name = file.name.clone().unwrap_or_else(|| "photo".into());
        let (image, text) = (file.mime.starts_with("image/"), is_text(&file.mime));
        let limit = match (image, text) {
            (true, _) => MAX_IMAGE_BYTES,
            (_, true) => MAX_TEXT_BYTES,
            _ => platform_document_limit(channel.platform)
                .min(self.config.gateway.max_file_mb.saturating_mul(1024 * 1024)),
        };
        let unreadable =
            |why: &str| ContentPart::Text { text: format!("[The user sent {name} ({}), {why}.]", file.mime) };
        if file.size.is_some_and(|n| n > limit) {
            return unreadable("which is too large to read");
        }
        let bytes = match self.download(channel, file, limit).await {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::warn!(error = %e, "cannot download a file from the chat platform");
                return unreadable("which I could not download");
            }
        };
        if image {
            return image_part(bytes)
                .await
                .unwrap_or_else(|why| unreadable(&format!("which I could not read as an image ({why})")));
        }
        if text {
            return match String::from_utf8(bytes) {
                Ok(content) => ContentPart::Text { text: format!("File {name}:\n```\n{content}\n```") },
                Err(_) => unreadable("which is not UTF-8 text"),
            };
        }
        // Platforms often say only "octet-stream": the name tells more.
        let mime = if file.mime == "application/octet-stream" { mime_for(&name) } else { file.mime.as_str() };
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        ContentPart::File {
            file: FileData { filename: Some(name), file_data: Some(format!("data:{mime};base64,{data}")) },
        }
    }

    /// A voice note or audio file as the agent reads it: its transcript, or why there is none;
    /// and the transcription call, when the service answered (it billed the audio), with the
    /// reservation it made under the team's spending caps.
    async fn listen(&self, channel: &Channel, file: &IncomingFile) -> (String, Option<Billed>) {
        let (heard, billed) = match &self.transcriber {
            None => (Err(Unheard::NoService), None),
            Some(transcriber) if file.size.is_some_and(|n| n > transcriber.max_bytes) => (Err(Unheard::TooLarge), None),
            Some(transcriber) => match self.download(channel, file, transcriber.max_bytes).await {
                Ok(audio) => self.transcribe(channel, transcriber, file, audio).await,
                Err(e) => (Err(Unheard::Failed(format!("the recording could not be downloaded: {e}"))), None),
            },
        };
        if let Err(why) = &heard {
            tracing::warn!(channel.id = %channel.id, reason = ?why, "a voice note was not transcribed");
        }
        (crate::voice::note(&heard), billed)
    }

    /// Sends a downloaded recording to the service, once the spending caps let it.
    async fn transcribe(
        &self,
        channel: &Channel,
        transcriber: &crate::voice::Transcriber,
        file: &IncomingFile,
        audio: Vec<u8>,
    ) -> (Result<String, Unheard>, Option<Billed>) {
        let reservation = match crate::voice_spend::reserve(&self.store, channel, transcriber, &audio).await {
            Ok(reservation) => reservation,
            Err(capped) => return (Err(capped), None),
        };
        let name = file.name.clone().unwrap_or_else(|| audio_name(&file.mime));
        let key = self.team_key(channel.tenant_id, transcriber.host()).await;
        let started = std::time::Instant::now();
        let done = transcriber.transcribe(&self.http, audio, &name, &file.mime, key.as_deref()).await;
        match done.billed_ms {
            Some(ms) => (done.heard, Some(Billed { call: transcriber.call(ms, started.elapsed()), reservation })),
            None => {
                crate::voice_spend::release(&self.store, channel.tenant_id, reservation).await;
                (done.heard, None)
            }
        }
    }
}

impl Gateway {
    /// The team's own key for `host` (the transcription service): the first, by pool name and
    /// priority, allowed to go there; `None` leaves the operator's.
    async fn team_key(&self, tenant: hermes_core::TenantId, host: Option<String>) -> Option<String> {
        let (host, secrets) = (host?, self.secrets.as_ref()?);
        let pools = match self.store.tenancy().credential_pools(tenant).await {
            Ok(pools) => pools,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the team's keys; the installation's transcribes");
                return None;
            }
        };
        let mut names: Vec<&String> = pools.keys().collect();
        names.sort();
        let key = names.into_iter().flat_map(|name| pools[name].0.iter()).find(|c| c.allows(&host))?;
        key.open(tenant, secrets).inspect_err(|e| tracing::warn!(error = %e, "cannot open the team's key")).ok()
    }
}

/// A file name for a recording the platform did not name (services read the type from it).
fn audio_name(mime: &str) -> String {
    let ext = match mime.split(';').next().unwrap_or_default() {
        "audio/ogg" | "audio/opus" => "ogg",
        "audio/mpeg" | "audio/mp3" => "mp3",
        "audio/mp4" | "audio/m4a" | "audio/x-m4a" | "audio/aac" => "m4a",
        "audio/wav" | "audio/x-wav" => "wav",
        "audio/webm" => "webm",
        "audio/amr" => "amr",
        _ => "ogg",
    };
    format!("voice.{ext}")
}
