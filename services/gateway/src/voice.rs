//! Voice notes and audio files from chats become text the agent reads: they are sent to the
//! operator's OpenAI-compatible `/audio/transcriptions` endpoint (OpenAI, Groq, a self-hosted
//! Whisper), and the transcript joins the message as upstream Hermes words it. Whisper invents
//! words on silence ("Thank you."), so those transcripts count as nothing heard. Whatever goes
//! wrong, the agent is told a voice note came and why it could not be heard, so the chat always
//! gets an answer.

use std::sync::LazyLock;

use hermes_config::SttEndpoint;

/// Phrases Whisper produces from silence (upstream's list).
const HALLUCINATIONS: [&str; 20] = [
    "thank you",
    "thanks for watching",
    "subscribe to my channel",
    "like and subscribe",
    "please subscribe",
    "thank you for watching",
    "bye",
    "you",
    "the end",
    "продолжение следует",
    "продолжение следует...",
    "sous-titres",
    "sous-titres réalisés par la communauté d'amara.org",
    "sottotitoli creati dalla comunità amara.org",
    "untertitel von stephanie geiges",
    "amara.org",
    "www.mooji.org",
    "ご視聴ありがとうございました",
    "字幕由amara.org社区提供",
    "请不吝点赞 订阅 转发 打赏支持明镜与点点栏目",
];

/// The same few words over and over ("Thank you. Thank you. you").
static REPEATED: LazyLock<Option<regex::Regex>> =
    LazyLock::new(|| regex::Regex::new(r"(?i)^(?:thank you|thanks|bye|you|ok|okay|the end|\.|\s|,|!)+$").ok());

/// Whether `transcript` is what Whisper says about silence.
pub(crate) fn is_hallucination(transcript: &str) -> bool {
    let cleaned = transcript.trim().to_lowercase();
    if cleaned.is_empty() {
        return true;
    }
    let bare = cleaned.trim_end_matches(['.', '!', '。']);
    HALLUCINATIONS.contains(&bare)
        || HALLUCINATIONS.contains(&cleaned.as_str())
        || REPEATED.as_ref().is_some_and(|re| re.is_match(&cleaned))
}

/// Why a recording could not be heard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unheard {
    /// No transcription service is configured.
    NoService,
    /// Nothing but silence (or Whisper's inventions on silence).
    Silent,
    /// The recording is larger than the service takes.
    TooLarge,
    /// The download or the service failed.
    Failed(String),
}

/// What the agent reads for a recording: the transcript in upstream's words, or a note that
/// it could not be heard (the agent then tells the user).
pub(crate) fn note(heard: &Result<String, Unheard>) -> String {
    match heard {
        Ok(transcript) => format!("[The user sent a voice message~ Here's what they said: \"{transcript}\"]"),
        Err(Unheard::NoService) => {
            "[The user sent a voice message but I can't listen to it right now: no speech-to-text \
            service is configured. Tell them, and ask them to type their message instead.]"
                .into()
        }
        Err(Unheard::Silent) => {
            "[The user sent a voice message, but it was silent or I could not make out any words. Tell them, and ask \
             them to say it again or type it.]"
                .into()
        }
        Err(Unheard::TooLarge) => {
            "[The user sent a voice message that is too long for me to listen to. Tell them, and \
            ask for a shorter one or for text.]"
                .into()
        }
        Err(Unheard::Failed(why)) => format!(
            "[The user sent a voice message but I had trouble transcribing it~ ({why}). Let them know, and ask them to \
             type it or try again.]"
        ),
    }
}

/// Sends recordings to the transcription service.
pub(crate) struct Transcriber {
    pub endpoint: SttEndpoint,
    pub language: Option<String>,
    pub max_bytes: u64,
}

impl Transcriber {
    /// The text spoken in `audio` (named `file_name`, of type `mime`).
    pub async fn transcribe(
        &self,
        http: &reqwest::Client,
        audio: Vec<u8>,
        file_name: &str,
        mime: &str,
    ) -> Result<String, Unheard> {
        let part = reqwest::multipart::Part::bytes(audio)
            .file_name(file_name.to_owned())
            .mime_str(mime)
            .map_err(|_| Unheard::Failed(format!("the recording's type {mime} is not a media type")))?;
        let mut form = reqwest::multipart::Form::new()
            .part("file", part)
            .text("model", self.endpoint.model.clone())
            .text("response_format", "json");
        if let Some(language) = &self.language {
            form = form.text("language", language.clone());
        }
        let mut request = http.post(format!("{}/audio/transcriptions", self.endpoint.base_url)).multipart(form);
        if let Some(key) = &self.endpoint.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.timeout(std::time::Duration::from_secs(90)).send().await.map_err(|e| {
            Unheard::Failed(format!("the speech-to-text service could not be reached: {}", e.without_url()))
        })?;
        let status = response.status();
        if !status.is_success() {
            return Err(Unheard::Failed(format!("the speech-to-text service answered HTTP {}", status.as_u16())));
        }
        let body = hermes_chat::body::bytes(response, 1024 * 1024).await.map_err(|e| Unheard::Failed(e.to_string()))?;
        let answer: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|_| Unheard::Failed("the speech-to-text service did not answer JSON".into()))?;
        let text = answer["text"].as_str().unwrap_or_default().trim().to_owned();
        if is_hallucination(&text) {
            return Err(Unheard::Silent);
        }
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whispers_inventions_on_silence_count_as_nothing_heard() {
        for silent in [
            "",
            "  ",
            "Thank you.",
            "thanks for watching!",
            "Thank you. Thank you. you",
            "ご視聴ありがとうございました",
            "Bye.",
        ] {
            assert!(is_hallucination(silent), "{silent:?}");
        }
        for real in ["Thank you for the report, send it to Ann.", "Book the room for Tuesday", "明天的会议几点"]
        {
            assert!(!is_hallucination(real), "{real:?}");
        }
    }

    #[test]
    fn the_agent_is_told_what_was_said_or_why_nothing_was() {
        assert_eq!(
            note(&Ok("book the room".into())),
            "[The user sent a voice message~ Here's what they said: \"book the room\"]"
        );
        assert!(note(&Err(Unheard::NoService)).contains("no speech-to-text service is configured"));
        assert!(note(&Err(Unheard::Failed("HTTP 500".into()))).contains("(HTTP 500)"));
    }
}
