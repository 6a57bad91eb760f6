//! Voice notes to text (`[stt]`): an OpenAI-compatible `/audio/transcriptions` endpoint, the
//! operator's. Upstream Hermes's variables fill it: `GROQ_API_KEY` (Groq's Whisper) or
//! `VOICE_TOOLS_OPENAI_KEY` (OpenAI's); `base_url` names any other server, such as a
//! self-hosted Whisper inside the cluster (a key is optional there).

use serde::{Deserialize, Serialize};

const GROQ: &str = "https://api.groq.com/openai/v1";
const OPENAI: &str = "https://api.openai.com/v1";

/// `[stt]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SttConfig {
    /// `false`: voice notes are not transcribed; the agent is told one came.
    pub enabled: bool,
    /// An OpenAI-compatible API base (`.../v1`) that serves `/audio/transcriptions`.
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    /// Groq's key (upstream's `GROQ_API_KEY`), used when `base_url` is unset.
    pub groq_api_key: Option<String>,
    /// OpenAI's key for voice (upstream's `VOICE_TOOLS_OPENAI_KEY`), used after Groq's.
    pub openai_api_key: Option<String>,
    /// The model; unset: `whisper-large-v3-turbo` on Groq, `whisper-1` elsewhere.
    pub model: Option<String>,
    /// An ISO-639-1 hint (`en`, `zh`); unset: the service detects it.
    pub language: Option<String>,
    /// Larger recordings are not sent (OpenAI's limit is 25 MB).
    pub max_bytes: u64,
}

impl Default for SttConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            base_url: None,
            api_key: None,
            groq_api_key: None,
            openai_api_key: None,
            model: None,
            language: None,
            max_bytes: 25 * 1024 * 1024,
        }
    }
}

/// Where transcriptions go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SttEndpoint {
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
}

fn set(v: &Option<String>) -> Option<String> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
}

impl SttConfig {
    /// The endpoint in use: `base_url`, else Groq with its key, else OpenAI with its key;
    /// `None` when transcription is off or nothing is configured.
    pub fn endpoint(&self) -> Option<SttEndpoint> {
        if !self.enabled {
            return None;
        }
        let (base_url, api_key, default_model) = if let Some(base) = set(&self.base_url) {
            (base, set(&self.api_key), "whisper-1")
        } else if let Some(key) = set(&self.groq_api_key) {
            (GROQ.to_owned(), Some(key), "whisper-large-v3-turbo")
        } else {
            (OPENAI.to_owned(), Some(set(&self.openai_api_key)?), "whisper-1")
        };
        let model = set(&self.model).unwrap_or_else(|| default_model.to_owned());
        Some(SttEndpoint { base_url: base_url.trim_end_matches('/').to_owned(), api_key, model })
    }

    /// The keys this section holds, which a dump masks.
    pub(crate) fn keys_mut(&mut self) -> [&mut Option<String>; 3] {
        [&mut self.api_key, &mut self.groq_api_key, &mut self.openai_api_key]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_is_the_operators_server_then_groq_then_openai() {
        assert_eq!(SttConfig::default().endpoint(), None, "nothing configured");
        let openai = SttConfig { openai_api_key: Some("sk-voice".into()), ..SttConfig::default() };
        assert_eq!(openai.endpoint().unwrap().base_url, OPENAI);
        assert_eq!(openai.endpoint().unwrap().model, "whisper-1");
        let groq = SttConfig { groq_api_key: Some("gsk".into()), ..openai.clone() };
        assert_eq!(groq.endpoint().unwrap().model, "whisper-large-v3-turbo", "Groq before OpenAI");
        let own = SttConfig { base_url: Some("http://whisper.ai:8000/v1/".into()), ..groq.clone() };
        let endpoint = own.endpoint().unwrap();
        assert_eq!((endpoint.base_url.as_str(), endpoint.api_key), ("http://whisper.ai:8000/v1", None));
        assert_eq!(SttConfig { enabled: false, ..own }.endpoint(), None);
    }
}
