//! Image generation (`[image_gen]`): the `image_generate` tool's service, the operator's.
//! Upstream's FAL.ai backend (its `FAL_KEY` and `FAL_IMAGE_MODEL` fill the same fields) or an
//! OpenAI-compatible `/images/generations` endpoint. The provider is the one selector, as
//! upstream's: a chosen provider without its key is an error, never a silent switch.

use serde::{Deserialize, Serialize};

/// Upstream's default FAL model.
pub const FAL_DEFAULT_MODEL: &str = "fal-ai/flux-2/klein/9b";
/// Upstream's OpenAI image model (its quality tiers are one model at three `quality`s).
pub const OPENAI_DEFAULT_MODEL: &str = "gpt-image-2";

/// Where images are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageGenProvider {
    /// FAL.ai's synchronous API (`fal_base_url`/`<model>`, `Authorization: Key ...`).
    Fal,
    /// An OpenAI-compatible `/images/generations` endpoint (base64 images).
    Openai,
}

impl ImageGenProvider {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fal => "fal",
            Self::Openai => "openai",
        }
    }
}

/// `[image_gen]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ImageGenConfig {
    /// Unset: FAL when `fal_key` is set, else OpenAI when `openai_api_key` is.
    pub provider: Option<ImageGenProvider>,
    /// Unset: upstream's default for the provider.
    pub model: Option<String>,
    /// FAL's key (upstream's `FAL_KEY`).
    pub fal_key: Option<String>,
    pub fal_base_url: String,
    pub openai_base_url: String,
    pub openai_api_key: Option<String>,
    /// OpenAI's `quality` (upstream fixes `medium` for predictable bills).
    pub openai_quality: String,
    /// A generation's whole time, download included.
    pub timeout_seconds: u64,
}

impl Default for ImageGenConfig {
    fn default() -> Self {
        Self {
            provider: None,
            model: None,
            fal_key: None,
            fal_base_url: "https://fal.run".into(),
            openai_base_url: "https://api.openai.com/v1".into(),
            openai_api_key: None,
            openai_quality: "medium".into(),
            timeout_seconds: 120,
        }
    }
}

/// The service `image_generate` calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageGenEndpoint {
    pub provider: ImageGenProvider,
    pub base_url: String,
    pub api_key: String,
    pub model: String,
}

fn set(v: &Option<String>) -> Option<String> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
}

impl ImageGenConfig {
    /// The service in use, or why there is none (said to the model, which tells the user).
    pub fn endpoint(&self) -> Result<ImageGenEndpoint, String> {
        let provider = match self.provider {
            Some(p) => p,
            None if set(&self.fal_key).is_some() => ImageGenProvider::Fal,
            None if set(&self.openai_api_key).is_some() => ImageGenProvider::Openai,
            None => {
                return Err("image generation is not set up on this installation: the operator sets FAL_KEY \
                            (FAL.ai) or image_gen.openai_api_key (an OpenAI-compatible images API)"
                    .into());
            }
        };
        let (base, key, default_model) = match provider {
            ImageGenProvider::Fal => (&self.fal_base_url, set(&self.fal_key), FAL_DEFAULT_MODEL),
            ImageGenProvider::Openai => (&self.openai_base_url, set(&self.openai_api_key), OPENAI_DEFAULT_MODEL),
        };
        let api_key =
            key.ok_or_else(|| format!("image_gen.provider is {} but its key is not set", provider.as_str()))?;
        let model = set(&self.model).unwrap_or_else(|| default_model.to_owned());
        Ok(ImageGenEndpoint { provider, base_url: base.trim_end_matches('/').to_owned(), api_key, model })
    }

    /// The keys this section holds, which a dump masks.
    pub(crate) fn keys_mut(&mut self) -> [&mut Option<String>; 2] {
        [&mut self.fal_key, &mut self.openai_api_key]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fal_then_openai_and_a_chosen_provider_without_its_key_is_an_error() {
        assert!(ImageGenConfig::default().endpoint().unwrap_err().contains("FAL_KEY"));
        let openai = ImageGenConfig { openai_api_key: Some("sk-img".into()), ..ImageGenConfig::default() };
        let endpoint = openai.endpoint().unwrap();
        assert_eq!((endpoint.provider, endpoint.model.as_str()), (ImageGenProvider::Openai, OPENAI_DEFAULT_MODEL));
        let fal = ImageGenConfig { fal_key: Some("fal-key".into()), ..openai.clone() };
        assert_eq!(fal.endpoint().unwrap().model, FAL_DEFAULT_MODEL, "FAL first, as upstream");
        let chosen = ImageGenConfig { provider: Some(ImageGenProvider::Fal), ..openai };
        assert_eq!(
            chosen.endpoint().unwrap_err(),
            "image_gen.provider is fal but its key is not set",
            "no silent switch"
        );
    }
}
