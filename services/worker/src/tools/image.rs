//! `image_generate` (the `image_gen` toolset): one image from a prompt through the operator's
//! service (`hermes_media::ImageGenerator`), kept with the turn at once, because FAL's URLs
//! expire and a chat should get the picture itself. The model is told to hand it over with a
//! `MEDIA:` line; when its answer forgets to, the image is handed over anyway (see
//! [`crate::attachments`]).

use std::sync::Arc;

use serde_json::{Value, json};

use hermes_core::{CallPurpose, ToolsetName};
use hermes_media::{AspectRatio, ImageGenError, ImageGenerator};
use hermes_store::turn_files::TurnFile;
use hermes_store::{MediaUnits, Store};
use hermes_tools::{SimpleTool, ToolCtx, ToolError, ToolSpec, object_schema, required_str};

use crate::attachments::GENERATED_PREFIX;

/// The API's address, for an API turn's links to the files its tools make.
#[derive(Debug, Clone)]
pub(crate) struct FileLinks(pub String);

impl FileLinks {
    /// An API turn's links (a chat's files are sent to it instead).
    pub(crate) fn for_turn(source: hermes_core::SessionSource, config: &hermes_config::HermesConfig) -> Option<Self> {
        (source == hermes_core::SessionSource::Api).then(|| Self(config.api_url()))
    }

    /// Where an API client downloads the file `name` that `turn` kept (with its API key).
    pub(crate) fn url(&self, turn: hermes_core::TurnId, name: &str) -> Option<String> {
        hermes_core::media::file_id(turn, name).map(|id| format!("{}/v1/files/{id}/content", self.0))
    }
}

/// `image_generate` for a turn.
pub(crate) struct ImageGenerateTool {
    pub generator: Arc<ImageGenerator>,
    pub store: Store,
    /// Set in an API turn: the picture is handed over as a link, not a `MEDIA:` line.
    pub links: Option<FileLinks>,
}

/// The file name for a call: stable for the call (a resumed turn replaces, never adds).
fn file_name(call_id: &str, extension: &str) -> String {
    let id: String = call_id.chars().filter(char::is_ascii_alphanumeric).rev().take(16).collect();
    let id: String = id.chars().rev().collect();
    format!("image-{}.{extension}", if id.is_empty() { "0" } else { &id })
}

/// Upstream's failure shape.
fn failure(error: &str) -> String {
    json!({"success": false, "image": null, "error": error}).to_string()
}

impl SimpleTool for ImageGenerateTool {
    const SPEC: ToolSpec = ToolSpec::new(
        "image_generate",
        ToolsetName::ImageGen,
        "Generate an image from a text prompt. Describe the picture in detail (subject, style, composition, \
         lighting, any text to render). Returns the image's file name; put `MEDIA:<image>` on a line of its own \
         in your answer to show it to the user.",
    );

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "prompt": { "type": "string", "description": "The text prompt describing the desired image. Be detailed and descriptive." },
                "aspect_ratio": {
                    "type": "string",
                    "enum": ["landscape", "square", "portrait"],
                    "description": "The aspect ratio of the generated image. 'landscape' is 16:9 wide, 'portrait' is 16:9 tall, 'square' is 1:1.",
                    "default": "landscape"
                }
            }),
            &["prompt"],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let prompt = required_str(&args, "prompt")?;
        let aspect: AspectRatio = match args.get("aspect_ratio").filter(|v| !v.is_null()) {
            Some(v) => serde_json::from_value(v.clone())
                .map_err(|_| ToolError::RespondToModel("aspect_ratio must be landscape, square or portrait".into()))?,
            None => AspectRatio::default(),
        };
        let model = match self.generator.endpoint() {
            Ok(endpoint) => endpoint.model.clone(),
            Err(e) => return Ok(failure(&e.to_string())),
        };
        let one = MediaUnits { images: 1, ..MediaUnits::default() };
        let admitted = match crate::media_meter::admit(&self.store, ctx.into(), CallPurpose::Image, &model, one).await {
            Ok(admitted) => admitted,
            Err(refusal) => return Ok(failure(&refusal)),
        };
        let image = match self.generator.generate(prompt, aspect).await {
            Ok(image) => image,
            Err(e) => {
                admitted.release(&self.store).await;
                if !matches!(e, ImageGenError::NotConfigured(_)) {
                    tracing::warn!(error = %e, "image generation failed");
                }
                return Ok(failure(&e.to_string()));
            }
        };
        admitted.record(&self.store, image.provider.as_str(), one, image.elapsed).await;
        let name = file_name(&ctx.call_id, image.extension());
        let target = format!("{GENERATED_PREFIX}{name}");
        let url = self.links.as_ref().and_then(|links| links.url(ctx.turn_id, &name));
        let file = TurnFile { target: target.clone(), name, mime: image.mime.to_owned(), data: Ok(image.bytes) };
        self.store
            .turns()
            .save_turn_file(ctx.tenant_id, ctx.turn_id, &file)
            .await
            .map_err(|e| ToolError::Unavailable(format!("the image was made but could not be kept: {e}")))?;
        tracing::info!(
            provider = image.provider.as_str(),
            model = %image.model,
            elapsed_ms = image.elapsed.as_millis() as u64,
            "image generated"
        );
        let (image, note) = match url {
            // As upstream's result: the image's URL, for the answer to show in Markdown.
            Some(url) => {
                let note = format!("To show it, put ![a short description]({url}) in your answer.");
                (url, note)
            }
            None => {
                let note = format!("To show it, put MEDIA:{target} on a line of its own in your answer.");
                (target, note)
            }
        };
        Ok(json!({ "success": true, "image": image, "model": model, "note": note }).to_string())
    }
}

/// Registers `image_generate` for a turn (`links`: an API turn's), with the tenant's own
/// keys (its `fal` and `openai` pools) in place of the operator's where it has them.
pub(crate) fn register(
    kit: &crate::tools::Toolkit,
    tenant: hermes_core::TenantId,
    pools: &hermes_store::CredentialPools,
    tools: &mut hermes_tools::ToolRegistry,
    links: Option<FileLinks>,
) {
    let Some(generator) = kit.image_gen.as_ref() else { return };
    let secrets = kit.secrets.as_ref();
    let [fal, openai] =
        generator.key_pools().map(|(pool, url)| crate::keys::service_key(pools, tenant, secrets, pool, url));
    let generator = match (fal, openai) {
        (None, None) => generator.clone(),
        (fal, openai) => Arc::new(generator.with_keys(fal, openai)),
    };
    tools.register(Arc::new(ImageGenerateTool { generator, store: kit.store.clone(), links }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calls_image_keeps_its_name_when_the_call_runs_again() {
        assert_eq!(file_name("call_1", "png"), file_name("call_1", "png"));
        assert_ne!(file_name("call_1", "png"), file_name("call_2", "png"));
        assert_eq!(file_name("call_../../etc", "jpg"), "image-calletc.jpg", "no path in a name");
    }
}
