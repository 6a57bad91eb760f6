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
    /// The team's spending caps do not let the service be called (why).
    Capped(String),
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
        Err(Unheard::Capped(why)) => format!(
            "[The user sent a voice message, but I may not have it transcribed: {why}. Tell them, and ask them to type \
             their message instead.]"
        ),
        Err(Unheard::Failed(why)) => format!(
            "[The user sent a voice message but I had trouble transcribing it~ ({why}). Let them know, and ask them to \
             type it or try again.]"
        ),
    }
}

/// What a transcription service answered: what was heard (or why nothing was), and the
/// audio it billed, in milliseconds (`None`: the service failed, so billed nothing).
#[derive(Debug)]
pub(crate) struct Transcribed {
    pub heard: Result<String, Unheard>,
    pub billed_ms: Option<u64>,
}

impl Transcribed {
    fn failed(why: Unheard) -> Self {
        Self { heard: Err(why), billed_ms: None }
    }
}

/// The audio's length in milliseconds as the service billed it: `duration` of a verbose
/// answer, or OpenAI's `usage: {"type": "duration", "seconds": N}`.
pub(crate) fn said_ms(answer: &serde_json::Value) -> Option<u64> {
    let said = answer["duration"]
        .as_f64()
        .or_else(|| (answer["usage"]["type"] == "duration").then(|| answer["usage"]["seconds"].as_f64()).flatten());
    said.filter(|s| s.is_finite() && *s >= 0.0).map(|seconds| (seconds * 1000.0).round() as u64)
}

/// A recording's length in milliseconds when the service does not say: read from an Ogg
/// recording's last page (Opus or Vorbis, exact), else estimated from its size at 16 kbit/s
/// (a voice note's usual rate).
pub(crate) fn recording_ms(audio: &[u8]) -> u64 {
    ogg_ms(audio).unwrap_or(audio.len() as u64 / 2)
}

/// An Ogg stream's length from its last page's granule position and its codec's rate.
fn ogg_ms(audio: &[u8]) -> Option<u64> {
    if !audio.starts_with(b"OggS") {
        return None;
    }
    let find = |needle: &[u8]| audio.windows(needle.len()).position(|w| w == needle);
    let (rate, skip) = if let Some(at) = find(b"OpusHead") {
        // Opus always counts at 48 kHz, less the encoder's pre-skip.
        let pre_skip = audio.get(at + 10..at + 12).map_or(0, |b| u64::from(u16::from_le_bytes([b[0], b[1]])));
        (48_000, pre_skip)
    } else {
        let at = find(b"\x01vorbis")?;
        let rate = audio.get(at + 12..at + 16).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))?;
        (u64::from(rate), 0)
    };
    let last = audio.windows(4).rposition(|w| w == b"OggS")?;
    let granule = audio.get(last + 6..last + 14).map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))?;
    (rate > 0 && granule != u64::MAX).then(|| granule.saturating_sub(skip) * 1000 / rate)
}

/// Sends recordings to the transcription service.
pub(crate) struct Transcriber {
    pub endpoint: SttEndpoint,
    pub language: Option<String>,
    pub max_bytes: u64,
}

impl Transcriber {
    /// The service's host (a team's key must be allowed for it).
    pub fn host(&self) -> Option<String> {
        reqwest::Url::parse(&self.endpoint.base_url).ok().and_then(|u| u.host_str().map(str::to_owned))
    }

    /// The usage record of a transcription that billed `audio_ms`.
    pub fn call(&self, audio_ms: u64, took: std::time::Duration) -> hermes_store::MediaCall {
        hermes_store::MediaCall {
            purpose: hermes_core::CallPurpose::Transcription,
            provider: self.host().unwrap_or_default(),
            model: self.endpoint.model.clone(),
            units: hermes_store::MediaUnits { audio_ms, ..Default::default() },
            latency_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
        }
    }

    /// The text spoken in `audio` (named `file_name`, of type `mime`), and what it billed;
    /// with the team's own `key` for the service when it has one, else the operator's.
    pub async fn transcribe(
        &self,
        http: &reqwest::Client,
        audio: Vec<u8>,
        file_name: &str,
        mime: &str,
        key: Option<&str>,
    ) -> Transcribed {
        let own = recording_ms(&audio);
        let asked = match upload(audio, file_name, mime) {
            Ok(recording) => self.ask(http, recording, key).await,
            Err(why) => Err(why),
        };
        match asked {
            Ok((text, answer)) => {
                let billed = said_ms(&answer).unwrap_or(own);
                let heard = if is_hallucination(&text) { Err(Unheard::Silent) } else { Ok(text) };
                Transcribed { heard, billed_ms: Some(billed) }
            }
            Err(why) => Transcribed::failed(why),
        }
    }

    /// The service's transcript of `recording` (an [`upload`]) and its whole answer.
    async fn ask(
        &self,
        http: &reqwest::Client,
        recording: reqwest::multipart::Part,
        key: Option<&str>,
    ) -> Result<(String, serde_json::Value), Unheard> {
        let mut form = reqwest::multipart::Form::new()
            .part("file", recording)
            .text("model", self.endpoint.model.clone())
            .text("response_format", "json");
        if let Some(language) = &self.language {
            form = form.text("language", language.clone());
        }
        let mut request = http.post(format!("{}/audio/transcriptions", self.endpoint.base_url)).multipart(form);
        if let Some(key) = key.or(self.endpoint.api_key.as_deref()) {
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
        Ok((text, answer))
    }
}

/// `audio` as the upload's file part, named `file_name`, of type `mime`.
fn upload(audio: Vec<u8>, file_name: &str, mime: &str) -> Result<reqwest::multipart::Part, Unheard> {
    reqwest::multipart::Part::bytes(audio)
        .file_name(file_name.to_owned())
        .mime_str(mime)
        .map_err(|_| Unheard::Failed(format!("the recording's type {mime} is not a media type")))
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

    /// An Ogg page: header with `granule`, one segment of `packet`.
    fn page(granule: u64, packet: &[u8]) -> Vec<u8> {
        let mut page = b"OggS\0\0".to_vec();
        page.extend(granule.to_le_bytes());
        page.extend([0; 12]);
        page.push(1);
        page.push(u8::try_from(packet.len()).unwrap());
        page.extend(packet);
        page
    }

    #[test]
    fn the_billed_length_is_the_services_word_else_the_recordings_own() {
        assert_eq!(said_ms(&serde_json::json!({"text": "hi", "duration": 3.25})), Some(3250));
        assert_eq!(said_ms(&serde_json::json!({"usage": {"type": "duration", "seconds": 7}})), Some(7000));
        assert_eq!(said_ms(&serde_json::json!({"usage": {"type": "tokens", "input_tokens": 70}})), None);
        // Opus: 48 kHz granules less the pre-skip (312 here): 96,312 granules are 2 s.
        let mut head = b"OpusHead\x01\x01".to_vec();
        head.extend(312u16.to_le_bytes());
        let opus = [page(0, &head), page(96_312, b"audio")].concat();
        assert_eq!(recording_ms(&opus), 2000);
        // Vorbis at 16 kHz: 40,000 granules are 2.5 s.
        let mut ident = b"\x01vorbis\0\0\0\0\x01".to_vec();
        ident.extend(16_000u32.to_le_bytes());
        let vorbis = [page(0, &ident), page(40_000, b"audio")].concat();
        assert_eq!(recording_ms(&vorbis), 2500);
        assert_eq!(recording_ms(&[0u8; 8_000]), 4000, "anything else: 16 kbit/s");
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
