//! Text to speech: `text_to_speech` and voice replies. Text is made speakable (Markdown,
//! code, links and `MEDIA:` lines out), cut to the provider's limit before the call (so a call
//! never fails for length, as upstream), and spoken by Edge TTS, an OpenAI-compatible
//! `/audio/speech` or ElevenLabs. What comes back is checked to be audio by its bytes; Opus in
//! OGG is what Telegram plays as a voice bubble.

use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use serde_json::json;

use hermes_config::{TtsConfig, TtsProvider};
use hermes_net_policy::outbound::{Policy, client_for, read_capped};

use crate::speech_error::SpeechError;
use crate::{authority, service_message};

/// The largest recording accepted (an hour of 64 kbit/s Opus is ~30 MB; a reply is far less).
const MAX_AUDIO_BYTES: usize = 20 * 1024 * 1024;

/// Speech made.
#[derive(Debug, Clone)]
pub struct Speech {
    pub bytes: Vec<u8>,
    /// `audio/ogg` (Opus), `audio/mpeg` or `audio/wav`, from the bytes.
    pub mime: &'static str,
    pub provider: TtsProvider,
    /// The model its price is looked up by ([`Speaker::model`]).
    pub model: String,
    /// Characters spoken (after the cut): what providers bill.
    pub chars: usize,
    pub elapsed: Duration,
}

impl Speech {
    /// Whether Telegram can show it as a voice bubble (Opus in OGG).
    pub fn is_voice(&self) -> bool {
        self.mime == "audio/ogg"
    }

    pub fn extension(&self) -> &'static str {
        match self.mime {
            "audio/ogg" => "ogg",
            "audio/wav" => "wav",
            _ => "mp3",
        }
    }
}

/// What a recording is, from its first bytes.
pub fn sniff_audio(bytes: &[u8]) -> Option<&'static str> {
    match bytes {
        [b'O', b'g', b'g', b'S', ..] => Some("audio/ogg"),
        [b'I', b'D', b'3', ..] => Some("audio/mpeg"),
        [0xFF, b, ..] if b & 0xE0 == 0xE0 => Some("audio/mpeg"),
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'A', b'V', b'E', ..] => Some("audio/wav"),
        _ => None,
    }
}

static FENCED: LazyLock<Option<regex::Regex>> = LazyLock::new(|| regex::Regex::new(r"(?s)```.*?```").ok());
static LINK: LazyLock<Option<regex::Regex>> = LazyLock::new(|| regex::Regex::new(r"!?\[([^\]]*)\]\([^)]*\)").ok());
static URL: LazyLock<Option<regex::Regex>> = LazyLock::new(|| regex::Regex::new(r"https?://\S+").ok());
static THINK: LazyLock<Option<regex::Regex>> = LazyLock::new(|| regex::Regex::new(r"(?s)<think>.*?</think>").ok());

fn replace(re: &LazyLock<Option<regex::Regex>>, text: &str, with: &str) -> String {
    match re.as_ref() {
        Some(re) => re.replace_all(text, with).into_owned(),
        None => text.to_owned(),
    }
}

/// `text` as it should be spoken: no reasoning, code blocks, `MEDIA:` lines, URLs, Markdown
/// marks or headings; whitespace collapsed.
pub fn speakable(text: &str) -> String {
    let text = replace(&THINK, text, " ");
    let text = replace(&FENCED, &text, " ");
    let text = replace(&LINK, &text, "$1");
    let text = replace(&URL, &text, " ");
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("MEDIA:"))
        .map(|l| l.trim_start().trim_start_matches(['#', '>', '-', '*']).replace(['*', '_', '`', '|', '~'], ""))
        .collect();
    lines.join(" ").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first `limit` characters of `text`, cut after the last sentence end (or word) when one
/// is near.
pub fn cut(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit {
        return text.to_owned();
    }
    let head: String = text.chars().take(limit).collect();
    // A cut that keeps less than three quarters of what fits wastes too much: counted in
    // characters, so CJK text (three bytes a character) is measured as it is read.
    let floor = head.char_indices().nth(limit * 3 / 4).map_or(head.len(), |(i, _)| i);
    let end = head
        .rfind(['.', '!', '?', '。', '！', '？'])
        .map(|i| i + head[i..].chars().next().map_or(1, char::len_utf8))
        .filter(|end| *end >= floor);
    let end = end.or_else(|| head.rfind(' ').filter(|i| *i >= floor)).unwrap_or(head.len());
    head[..end].trim().to_owned()
}

/// The operator's speech service.
#[derive(Clone)]
pub struct Speaker {
    config: TtsConfig,
    openai_key: Option<String>,
    http: reqwest::Client,
}

impl std::fmt::Debug for Speaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Speaker").field("provider", &self.config.provider).finish_non_exhaustive()
    }
}

impl Speaker {
    /// The service under `config`; `voice_openai_key` is upstream's shared voice key
    /// (`stt.openai_api_key`), `trusted` the operator's private hosts.
    pub fn new(config: &TtsConfig, voice_openai_key: Option<&str>, trusted: &[String]) -> Result<Self, reqwest::Error> {
        let timeout = Duration::from_secs(config.timeout_seconds.max(1));
        let mut hosts = trusted.to_vec();
        hosts.extend([&config.openai_base_url, &config.elevenlabs_base_url].into_iter().filter_map(|u| authority(u)));
        let http = client_for(Arc::new(Policy::trusting(hosts)), timeout.min(Duration::from_secs(10)), timeout)?;
        let own = config.openai_api_key.as_deref().filter(|k| !k.trim().is_empty());
        let openai_key = own.or(voice_openai_key.filter(|k| !k.trim().is_empty())).map(str::to_owned);
        Ok(Self { config: config.clone(), openai_key, http })
    }

    /// The credential pools a tenant's own keys come from, with the service URL each key must
    /// be allowed for: `openai` and `elevenlabs` (Edge needs none).
    pub fn key_pools(&self) -> [(&'static str, &str); 2] {
        [("openai", &self.config.openai_base_url), ("elevenlabs", &self.config.elevenlabs_base_url)]
    }

    /// The same service with a tenant's own keys (`None` keeps the operator's). The provider
    /// stays the operator's choice.
    pub fn with_keys(&self, openai: Option<String>, elevenlabs: Option<String>) -> Self {
        let mut speaker = self.clone();
        speaker.openai_key = openai.or(speaker.openai_key);
        speaker.config.elevenlabs_api_key = elevenlabs.or(speaker.config.elevenlabs_api_key);
        speaker
    }

    pub fn provider(&self) -> TtsProvider {
        self.config.provider
    }

    /// The model speech is priced by: the OpenAI or ElevenLabs model, or `edge-tts`.
    pub fn model(&self) -> String {
        match self.config.provider {
            TtsProvider::Edge => "edge-tts".to_owned(),
            TtsProvider::Openai => self.config.openai_model.clone(),
            TtsProvider::Elevenlabs => self.config.elevenlabs_model_id.clone(),
        }
    }

    /// The text [`Self::speak`] would send for `text`: speakable, cut to the provider's limit.
    pub fn script(&self, text: &str) -> String {
        cut(&speakable(text), self.config.text_limit())
    }

    /// Why it cannot speak (`None`: it can).
    pub fn unusable(&self) -> Option<String> {
        self.config.unusable(self.openai_key.as_deref())
    }

    /// `text` spoken (made speakable and cut to the provider's limit first).
    pub async fn speak(&self, text: &str) -> Result<Speech, SpeechError> {
        if let Some(why) = self.unusable() {
            return Err(SpeechError::NotConfigured(why));
        }
        let text = self.script(text);
        if text.is_empty() {
            return Err(SpeechError::Empty);
        }
        let started = Instant::now();
        let timeout = Duration::from_secs(self.config.timeout_seconds.max(1));
        let work = async {
            match self.config.provider {
                TtsProvider::Edge => crate::edge::speak(&self.config, &text).await,
                TtsProvider::Openai => self.openai(&text).await,
                TtsProvider::Elevenlabs => self.elevenlabs(&text).await,
            }
        };
        let bytes = tokio::time::timeout(timeout, work)
            .await
            .map_err(|_| SpeechError::Failed(format!("no audio within {} s", timeout.as_secs())))??;
        let mime = sniff_audio(&bytes).ok_or_else(|| SpeechError::Failed("the answer is not audio".into()))?;
        Ok(Speech {
            bytes,
            mime,
            provider: self.config.provider,
            model: self.model(),
            chars: text.chars().count(),
            elapsed: started.elapsed(),
        })
    }

    async fn openai(&self, text: &str) -> Result<Vec<u8>, SpeechError> {
        let key = self.openai_key.as_deref().unwrap_or_default();
        let body = json!({
            "model": self.config.openai_model,
            "input": text,
            "voice": self.config.openai_voice,
            "response_format": "opus",
            "speed": self.config.speed.clamp(0.25, 4.0),
        });
        let url = format!("{}/audio/speech", self.config.openai_base_url.trim_end_matches('/'));
        self.fetch(self.http.post(url).bearer_auth(key).json(&body)).await
    }

    async fn elevenlabs(&self, text: &str) -> Result<Vec<u8>, SpeechError> {
        let key = self.config.elevenlabs_api_key.as_deref().unwrap_or_default();
        let url = format!(
            "{}/v1/text-to-speech/{}?output_format=opus_48000_64",
            self.config.elevenlabs_base_url.trim_end_matches('/'),
            self.config.elevenlabs_voice_id
        );
        let body = json!({ "text": text, "model_id": self.config.elevenlabs_model_id });
        self.fetch(self.http.post(url).header("xi-api-key", key).json(&body)).await
    }

    async fn fetch(&self, request: reqwest::RequestBuilder) -> Result<Vec<u8>, SpeechError> {
        let response =
            request.send().await.map_err(|e| SpeechError::Failed(format!("unreachable: {}", e.without_url())))?;
        let status = response.status();
        let body = read_capped(response, MAX_AUDIO_BYTES).await.map_err(|e| SpeechError::Failed(e.to_string()))?;
        if !status.is_success() {
            return Err(SpeechError::Failed(format!("HTTP {}: {}", status.as_u16(), service_message(&body))));
        }
        Ok(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_words_are_spoken() {
        let answer = "## Summary\n**Sales** rose _sharply_.\n```sql\nSELECT 1;\n```\nSee [the report](https://x.example/r) \
                      or https://x.example/raw.\nMEDIA:generated/chart.png\n<think>hmm</think>- Done.";
        assert_eq!(speakable(answer), "Summary Sales rose sharply. See the report or Done.");
    }

    #[test]
    fn long_text_is_cut_at_a_sentence_end_near_the_limit() {
        let text = "One two three. Four five six. Seven eight nine ten eleven.";
        assert_eq!(cut(text, 35), "One two three. Four five six.");
        assert_eq!(cut(text, 200), text);
        assert_eq!(cut("一二三四五。六七八九十", 8), "一二三四五。");
    }

    #[test]
    fn audio_is_known_by_its_bytes() {
        assert_eq!(sniff_audio(b"OggS\0\x02rest"), Some("audio/ogg"));
        assert_eq!(sniff_audio(b"ID3\x04rest"), Some("audio/mpeg"));
        assert_eq!(sniff_audio(&[0xFF, 0xF3, 0x44]), Some("audio/mpeg"));
        assert_eq!(sniff_audio(b"<html>"), None);
    }
}
