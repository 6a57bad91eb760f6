//! Text to image, as upstream's `image_generate`: one prompt, one of three aspect ratios, one
//! image. FAL.ai's synchronous API (`POST {base}/{model}`, `Authorization: Key ...`, the image
//! returned as a URL, downloaded at once since FAL's URLs expire) or an OpenAI-compatible
//! `POST {base}/images/generations` (base64 images, `quality` fixed by the operator so bills
//! stay predictable, as upstream fixes it).

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use serde::Deserialize;
use serde_json::{Value, json};

use hermes_config::{ImageGenConfig, ImageGenEndpoint, ImageGenProvider};
use hermes_net_policy::outbound::{Policy, ReadError, client_for, read_capped};

use crate::{authority, service_message};

/// The largest image accepted from a service (a 2K PNG is a few MB).
pub const MAX_IMAGE_BYTES: usize = 20 * 1024 * 1024;
/// The largest JSON answer (an OpenAI answer carries the image in base64).
const MAX_ANSWER_BYTES: usize = MAX_IMAGE_BYTES * 4 / 3 + 64 * 1024;
/// The longest prompt sent (OpenAI's image models take 32,000 characters).
const MAX_PROMPT_CHARS: usize = 32_000;

/// The picture's shape (upstream's three).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AspectRatio {
    /// 16:9, 1536×1024.
    #[default]
    Landscape,
    /// 1:1, 1024×1024.
    Square,
    /// 9:16, 1024×1536.
    Portrait,
}

impl AspectRatio {
    /// FAL's `image_size` preset.
    fn fal_size(self) -> &'static str {
        match self {
            Self::Landscape => "landscape_16_9",
            Self::Square => "square_hd",
            Self::Portrait => "portrait_16_9",
        }
    }

    /// OpenAI's `size`.
    fn openai_size(self) -> &'static str {
        match self {
            Self::Landscape => "1536x1024",
            Self::Square => "1024x1024",
            Self::Portrait => "1024x1536",
        }
    }
}

/// One image made.
#[derive(Debug, Clone)]
pub struct GeneratedImage {
    pub bytes: Vec<u8>,
    /// From the bytes (`image/png`, `image/jpeg`, `image/webp`).
    pub mime: &'static str,
    pub provider: ImageGenProvider,
    pub model: String,
    pub elapsed: Duration,
}

impl GeneratedImage {
    /// The file extension for its type.
    pub fn extension(&self) -> &'static str {
        match self.mime {
            "image/jpeg" => "jpg",
            "image/webp" => "webp",
            "image/gif" => "gif",
            _ => "png",
        }
    }
}

/// Why no image came.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageGenError {
    /// No service is set up, or the chosen one lacks its key.
    #[error("{0}")]
    NotConfigured(String),
    /// The request itself was refused (a bad prompt, a content policy); retrying will not help.
    #[error("the image service refused the request (HTTP {status}): {message}")]
    Refused { status: u16, message: String },
    /// The service failed or could not be reached; a retry later may work.
    #[error("the image service failed: {0}")]
    Failed(String),
}

/// The operator's image service and the clients that reach it.
#[derive(Clone)]
pub struct ImageGenerator {
    config: ImageGenConfig,
    endpoint: Result<ImageGenEndpoint, String>,
    quality: String,
    timeout: Duration,
    service: reqwest::Client,
    /// Result files on other hosts: public addresses only.
    downloads: reqwest::Client,
    download_policy: Arc<Policy>,
    service_authority: Option<String>,
}

impl std::fmt::Debug for ImageGenerator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImageGenerator").field("service", &self.service_authority).finish_non_exhaustive()
    }
}

impl ImageGenerator {
    /// The service under `config`; `trusted` are the operator's private hosts
    /// (`outbound.trusted_private_hosts`).
    pub fn new(config: &ImageGenConfig, trusted: &[String]) -> Result<Self, reqwest::Error> {
        let endpoint = config.endpoint();
        let timeout = Duration::from_secs(config.timeout_seconds.max(1));
        let connect = timeout.min(Duration::from_secs(10));
        let service_authority = endpoint.as_ref().ok().and_then(|e| authority(&e.base_url));
        // Both services the operator configured (a tenant's key may choose the other one).
        let mut hosts = trusted.to_vec();
        hosts.extend([&config.fal_base_url, &config.openai_base_url].into_iter().filter_map(|u| authority(u)));
        let service = client_for(Arc::new(Policy::trusting(hosts)), connect, timeout)?;
        let download_policy = Arc::new(Policy::trusting(trusted));
        let downloads = client_for(download_policy.clone(), connect, timeout)?;
        Ok(Self {
            config: config.clone(),
            endpoint,
            quality: config.openai_quality.clone(),
            timeout,
            service,
            downloads,
            download_policy,
            service_authority,
        })
    }

    /// The credential pools a tenant's own keys come from, with the service URL each key must
    /// be allowed for: `fal` and `openai`.
    pub fn key_pools(&self) -> [(&'static str, &str); 2] {
        [("fal", &self.config.fal_base_url), ("openai", &self.config.openai_base_url)]
    }

    /// The same service with a tenant's own keys (`fal`, `openai`; `None` keeps the
    /// operator's) in place of the operator's, chosen by the same rules (FAL first). Base URLs
    /// stay the operator's.
    pub fn with_keys(&self, fal: Option<String>, openai: Option<String>) -> Self {
        let mut config = self.config.clone();
        config.fal_key = fal.or(config.fal_key);
        config.openai_api_key = openai.or(config.openai_api_key);
        let endpoint = config.endpoint();
        let service_authority = endpoint.as_ref().ok().and_then(|e| authority(&e.base_url));
        Self { config, endpoint, service_authority, ..self.clone() }
    }

    /// The provider and model in use, or why there is none.
    pub fn endpoint(&self) -> Result<&ImageGenEndpoint, ImageGenError> {
        self.endpoint.as_ref().map_err(|why| ImageGenError::NotConfigured(why.clone()))
    }

    /// One image of `prompt`.
    pub async fn generate(&self, prompt: &str, aspect: AspectRatio) -> Result<GeneratedImage, ImageGenError> {
        let endpoint = self.endpoint()?;
        let prompt = prompt.trim();
        if prompt.is_empty() {
            return Err(ImageGenError::Refused { status: 400, message: "the prompt is empty".into() });
        }
        let prompt: String = prompt.chars().take(MAX_PROMPT_CHARS).collect();
        let started = Instant::now();
        // reqwest's timeout is per request; this one holds the whole generation, download included.
        let work = async {
            let answer = self.call(self.request(endpoint, &prompt, aspect)).await?;
            self.image_in(endpoint.provider, &answer).await
        };
        let bytes = tokio::time::timeout(self.timeout, work)
            .await
            .map_err(|_| ImageGenError::Failed(format!("no image within {} s", self.timeout.as_secs())))??;
        let mime = hermes_images::sniff(&bytes)
            .ok_or_else(|| ImageGenError::Failed("the service's answer is not an image".into()))?;
        Ok(GeneratedImage {
            bytes,
            mime,
            provider: endpoint.provider,
            model: endpoint.model.clone(),
            elapsed: started.elapsed(),
        })
    }

    /// The provider's request for one image of `prompt`.
    fn request(&self, endpoint: &ImageGenEndpoint, prompt: &str, aspect: AspectRatio) -> reqwest::RequestBuilder {
        match endpoint.provider {
            ImageGenProvider::Fal => {
                let body = json!({
                    "prompt": prompt,
                    "image_size": aspect.fal_size(),
                    "num_images": 1,
                    "output_format": "png",
                });
                let url = format!("{}/{}", endpoint.base_url, endpoint.model);
                self.service.post(url).header("authorization", format!("Key {}", endpoint.api_key)).json(&body)
            }
            ImageGenProvider::Openai => {
                let body = json!({
                    "model": endpoint.model,
                    "prompt": prompt,
                    "size": aspect.openai_size(),
                    "n": 1,
                    "quality": self.quality,
                });
                let url = format!("{}/images/generations", endpoint.base_url);
                self.service.post(url).bearer_auth(&endpoint.api_key).json(&body)
            }
        }
    }

    /// The image the provider's `answer` holds: in the answer itself (OpenAI's base64), or
    /// fetched from the URL it names.
    async fn image_in(&self, provider: ImageGenProvider, answer: &Value) -> Result<Vec<u8>, ImageGenError> {
        let url = match provider {
            ImageGenProvider::Fal => answer["images"][0]["url"].as_str(),
            ImageGenProvider::Openai => {
                let image = &answer["data"][0];
                if let Some(encoded) = image["b64_json"].as_str() {
                    return base64::engine::general_purpose::STANDARD
                        .decode(encoded.trim())
                        .map_err(|_| ImageGenError::Failed("the answer's image is not valid base64".into()));
                }
                image["url"].as_str()
            }
        };
        match url {
            Some(url) => self.image_at(url).await,
            None => Err(ImageGenError::Failed("the answer holds no image".into())),
        }
    }

    /// Sends a request to the service and reads its JSON answer.
    async fn call(&self, request: reqwest::RequestBuilder) -> Result<Value, ImageGenError> {
        let response =
            request.send().await.map_err(|e| ImageGenError::Failed(format!("unreachable: {}", e.without_url())))?;
        let status = response.status();
        let body = read_capped(response, MAX_ANSWER_BYTES).await.map_err(read_failed)?;
        if status.is_client_error() && !matches!(status.as_u16(), 401 | 403 | 408 | 429) {
            return Err(ImageGenError::Refused { status: status.as_u16(), message: service_message(&body) });
        }
        if !status.is_success() {
            return Err(ImageGenError::Failed(format!("HTTP {}: {}", status.as_u16(), service_message(&body))));
        }
        serde_json::from_slice(&body).map_err(|_| ImageGenError::Failed("the answer is not JSON".into()))
    }

    /// Downloads a result file: on the service's own host with its client, elsewhere only
    /// from a public address.
    async fn image_at(&self, url: &str) -> Result<Vec<u8>, ImageGenError> {
        let same_host = authority(url).is_some_and(|a| Some(&a) == self.service_authority.as_ref());
        let client = if same_host {
            &self.service
        } else {
            // Names are checked as they resolve; an address literal is checked here.
            let parsed = reqwest::Url::parse(url)
                .map_err(|_| ImageGenError::Failed("the answer's image URL is not a URL".into()))?;
            if let Some(why) = self.download_policy.refuse(&parsed) {
                return Err(ImageGenError::Failed(format!("the image is not downloaded from there: {why}")));
            }
            &self.downloads
        };
        let response =
            client.get(url).send().await.map_err(|e| {
                ImageGenError::Failed(format!("the image could not be downloaded: {}", e.without_url()))
            })?;
        if !response.status().is_success() {
            return Err(ImageGenError::Failed(format!(
                "the image could not be downloaded: HTTP {}",
                response.status().as_u16()
            )));
        }
        read_capped(response, MAX_IMAGE_BYTES).await.map_err(read_failed)
    }
}

fn read_failed(e: ReadError) -> ImageGenError {
    ImageGenError::Failed(match e {
        ReadError::TooLarge(max) => format!("the answer is larger than {} MB", max / (1024 * 1024)),
        ReadError::Transport(e) => format!("the answer could not be read: {}", e.without_url()),
    })
}
