//! Text to speech (`[tts]`): the `text_to_speech` tool's and voice replies' service, the
//! operator's. Upstream's three that reach over HTTP: Edge TTS (Microsoft's free read-aloud
//! service, no key, upstream's default), OpenAI's `/audio/speech` (or any compatible server)
//! and ElevenLabs. Upstream's `ELEVENLABS_API_KEY` fills the ElevenLabs key and its
//! `VOICE_TOOLS_OPENAI_KEY` (read into `stt.openai_api_key`) serves OpenAI speech too.

use serde::{Deserialize, Serialize};

/// Edge's read-aloud endpoint (its public client token is part of the URL, as the browser's).
pub const EDGE_DEFAULT_URL: &str = "wss://speech.platform.bing.com/consumer/speech/synthesize/readaloud/edge/v1?TrustedClientToken=6A5AA1D4EAFF4E9FB37E23D68491D6F4";

/// Who speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TtsProvider {
    /// Microsoft Edge's read-aloud service over its WebSocket (no key).
    Edge,
    /// An OpenAI-compatible `/audio/speech` (Opus in OGG: a Telegram voice bubble).
    Openai,
    /// ElevenLabs' `/v1/text-to-speech/{voice_id}`.
    Elevenlabs,
}

impl TtsProvider {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Edge => "edge",
            Self::Openai => "openai",
            Self::Elevenlabs => "elevenlabs",
        }
    }
}

/// `[tts]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct TtsConfig {
    /// `false`: no `text_to_speech` and no voice replies.
    pub enabled: bool,
    pub provider: TtsProvider,
    /// Longer text is cut before the call (never a failed call for length); unset: the
    /// provider's limit (Edge 5,000, OpenAI 4,096, ElevenLabs by model).
    pub max_text_length: Option<usize>,
    /// 0.25–4.0 (Edge turns it into a rate, OpenAI sends it).
    pub speed: f32,
    pub edge_url: String,
    pub edge_voice: String,
    /// Edge's output format; the default MP3 reaches Telegram as an audio file, an Opus
    /// format (`ogg-24khz-16bit-mono-opus`) as a voice bubble.
    pub edge_format: String,
    pub openai_base_url: String,
    /// Unset: upstream's `VOICE_TOOLS_OPENAI_KEY` (`stt.openai_api_key`).
    pub openai_api_key: Option<String>,
    pub openai_model: String,
    pub openai_voice: String,
    pub elevenlabs_base_url: String,
    /// Upstream's `ELEVENLABS_API_KEY`.
    pub elevenlabs_api_key: Option<String>,
    pub elevenlabs_voice_id: String,
    pub elevenlabs_model_id: String,
    /// One synthesis, whole.
    pub timeout_seconds: u64,
}

impl Default for TtsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            provider: TtsProvider::Edge,
            max_text_length: None,
            speed: 1.0,
            edge_url: EDGE_DEFAULT_URL.into(),
            edge_voice: "en-US-AriaNeural".into(),
            edge_format: "audio-24khz-48kbitrate-mono-mp3".into(),
            openai_base_url: "https://api.openai.com/v1".into(),
            openai_api_key: None,
            openai_model: "gpt-4o-mini-tts".into(),
            openai_voice: "alloy".into(),
            elevenlabs_base_url: "https://api.elevenlabs.io".into(),
            elevenlabs_api_key: None,
            elevenlabs_voice_id: "pNInz6obpgDQGcFmaJgB".into(),
            elevenlabs_model_id: "eleven_multilingual_v2".into(),
            timeout_seconds: 120,
        }
    }
}

impl TtsConfig {
    /// The most characters one call takes: the operator's positive setting, else upstream's
    /// default for the provider (and, for ElevenLabs, the model).
    pub fn text_limit(&self) -> usize {
        if let Some(n) = self.max_text_length.filter(|n| *n > 0) {
            return n;
        }
        match self.provider {
            TtsProvider::Edge => 5_000,
            TtsProvider::Openai => 4_096,
            TtsProvider::Elevenlabs => match self.elevenlabs_model_id.as_str() {
                "eleven_flash_v2_5" => 40_000,
                "eleven_flash_v2" => 30_000,
                "eleven_v3" | "eleven_ttv_v3" => 5_000,
                _ => 10_000,
            },
        }
    }

    /// Why the chosen provider cannot be called (`None`: it can). `voice_openai_key` is
    /// `stt.openai_api_key`, upstream's shared voice key.
    pub fn unusable(&self, voice_openai_key: Option<&str>) -> Option<String> {
        if !self.enabled {
            return Some("text to speech is turned off on this installation".into());
        }
        let has = |k: Option<&str>| k.is_some_and(|k| !k.trim().is_empty());
        match self.provider {
            TtsProvider::Edge => None,
            TtsProvider::Openai if has(self.openai_api_key.as_deref()) || has(voice_openai_key) => None,
            TtsProvider::Openai => {
                Some("tts.provider is openai but no key is set (tts.openai_api_key or VOICE_TOOLS_OPENAI_KEY)".into())
            }
            TtsProvider::Elevenlabs if has(self.elevenlabs_api_key.as_deref()) => None,
            TtsProvider::Elevenlabs => Some("tts.provider is elevenlabs but ELEVENLABS_API_KEY is not set".into()),
        }
    }

    /// The keys this section holds, which a dump masks.
    pub(crate) fn keys_mut(&mut self) -> [&mut Option<String>; 2] {
        [&mut self.openai_api_key, &mut self.elevenlabs_api_key]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_follow_upstream_and_bad_settings_never_disable_the_cut() {
        let edge = TtsConfig::default();
        assert_eq!(edge.text_limit(), 5_000);
        assert_eq!(TtsConfig { max_text_length: Some(0), ..edge.clone() }.text_limit(), 5_000);
        assert_eq!(TtsConfig { max_text_length: Some(800), ..edge.clone() }.text_limit(), 800);
        let flash = TtsConfig {
            provider: TtsProvider::Elevenlabs,
            elevenlabs_model_id: "eleven_flash_v2_5".into(),
            ..edge.clone()
        };
        assert_eq!(flash.text_limit(), 40_000);
        assert_eq!(TtsConfig { provider: TtsProvider::Openai, ..edge }.text_limit(), 4_096);
    }

    #[test]
    fn a_provider_without_its_key_says_which_key() {
        let openai = TtsConfig { provider: TtsProvider::Openai, ..TtsConfig::default() };
        assert!(openai.unusable(None).unwrap().contains("VOICE_TOOLS_OPENAI_KEY"));
        assert_eq!(openai.unusable(Some("sk-voice")), None, "upstream's shared voice key serves speech too");
        assert_eq!(TtsConfig::default().unusable(None), None, "Edge needs no key");
    }
}
