//! Seeing images. `vision_analyze` (the `vision` toolset) loads an image from a URL (through
//! the web toolset's public-address guard), the agent's workspace or a `data:` URL, scales it
//! to the embed budget and has the agent's vision model describe it and answer the question,
//! as upstream's auxiliary path does. For an agent whose model reads only text (or whose
//! `image_input_mode` is `text`), the pictures people send are described the same way before
//! the turn's input is stored, so a resumed turn does not look again and the description is
//! paid once, metered as an auxiliary call like every other.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};

use hermes_core::message::ImageUrl;
use hermes_core::{ChatMessage, Content, ContentPart, ToolsetName};
use hermes_llm::{ChatModel, ChatRequest, NoDeltas};
use hermes_sandbox::proto::ReadBytesRequest;
use hermes_sandbox::{SandboxKey, Sandboxes, status_error};
use hermes_tools::{SimpleTool, ToolCtx, ToolError, ToolSpec, object_schema, required_str};

use crate::models::Models;

/// The largest image loaded (upstream reads up to 50 MB; a chat platform sends at most 20).
const MAX_IMAGE_BYTES: usize = 20 * 1024 * 1024;
/// How long the vision model may take (upstream's `auxiliary.vision.timeout`).
const VISION_TIMEOUT: Duration = Duration::from_secs(120);
/// The most a description may run to (upstream's `max_tokens`).
const VISION_MAX_TOKENS: u32 = 2000;
/// How often a delegated child may load the same image (upstream's default for children;
/// the main agent is not capped).
pub(crate) const CHILD_LOADS_PER_IMAGE: u32 = 3;

/// Upstream's prompt for pictures a user sends to a model that reads only text.
const DESCRIBE_PROMPT: &str = "Describe everything visible in this image in thorough detail. Include any text, \
    code, data, objects, people, layout, colors, and any other notable visual information.";

/// Where images are read from besides `data:` URLs: the web (through its public-address
/// guard; `None` when its clients could not be built) and the agent's workspace.
#[derive(Clone)]
pub(crate) struct ImageSources {
    pub web: Option<Arc<hermes_web::Web>>,
    pub sandboxes: Arc<dyn Sandboxes>,
}

/// An image ready for a model: a `data:` URL within the embed budget.
struct Loaded(String);

/// Reads `source` (an http(s) URL, a `data:` URL, or a path in the agent's workspace).
async fn load(sources: &ImageSources, key: SandboxKey, source: &str) -> Result<Loaded, String> {
    let bytes = if let Some(data) = source.strip_prefix("data:") {
        let (_, encoded) =
            data.split_once(";base64,").ok_or("a data: URL must be base64 (data:image/png;base64,...)")?;
        base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .map_err(|_| "the data: URL is not valid base64".to_owned())?
    } else if source.starts_with("http://") || source.starts_with("https://") {
        let web = sources.web.as_ref().ok_or("images cannot be fetched from URLs on this installation")?;
        web.fetch_bytes(source, MAX_IMAGE_BYTES)
            .await
            .map_err(|why| format!("the image could not be fetched: {why}"))?
    } else {
        let path = source.strip_prefix("file://").unwrap_or(source).to_owned();
        let client = sources.sandboxes.open(key).await.map_err(|e| format!("the workspace is unavailable: {e}"))?;
        let request = ReadBytesRequest { path, max_bytes: MAX_IMAGE_BYTES as u64 };
        client.grpc().read_bytes(request).await.map_err(|s| status_error(s).to_string())?.into_inner().data
    };
    fitted(bytes).await
}

/// `bytes` fitted to the embed budget, as a `data:` URL.
async fn fitted(bytes: Vec<u8>) -> Result<Loaded, String> {
    let fitted = tokio::task::spawn_blocking(move || hermes_images::fit(&bytes, hermes_images::EMBED_TARGET_BYTES))
        .await
        .map_err(|_| "the image could not be read".to_owned())?
        .map_err(|e| format!("only real images can be analysed: {e}"))?;
    let data = base64::engine::general_purpose::STANDARD.encode(fitted.bytes);
    Ok(Loaded(format!("data:{};base64,{data}", fitted.mime)))
}

/// The vision model's answer to `prompt` about the image `bytes` (a screenshot).
pub(crate) async fn look_at(models: &Models, bytes: Vec<u8>, prompt: &str) -> Result<String, String> {
    let image = fitted(bytes).await?;
    ask(models, &image, prompt).await
}

/// The vision model's answer to `prompt` about `image`, retried once when it comes back
/// empty (a reasoning-only answer), as upstream does.
async fn ask(models: &Models, image: &Loaded, prompt: &str) -> Result<String, String> {
    let (model, name) = models.vision().ok_or(
        "no model that can see images is set for this agent: its model reads only text, so set its vision_model",
    )?;
    let mut message = ChatMessage::user(String::new());
    message.content = Some(Content::Parts(vec![
        ContentPart::Text { text: prompt.to_owned() },
        ContentPart::ImageUrl { image_url: ImageUrl { url: image.0.clone(), detail: None } },
    ]));
    let request = ChatRequest {
        model: name,
        messages: vec![message],
        tools: Arc::from([]),
        max_tokens: Some(VISION_MAX_TOKENS),
        settings: Default::default(),
    };
    for _ in 0..2 {
        let reply = tokio::time::timeout(VISION_TIMEOUT, model.complete(&request, &mut NoDeltas))
            .await
            .map_err(|_| format!("the vision model took longer than {} s", VISION_TIMEOUT.as_secs()))?
            .map_err(|e| e.to_string())?;
        let text = reply.message.text();
        let text = if text.trim().is_empty() { reply.message.reasoning.unwrap_or_default() } else { text };
        if !text.trim().is_empty() {
            return Ok(text.trim().to_owned());
        }
    }
    Err("the vision model answered with nothing".into())
}

/// `message`'s images replaced by the vision model's descriptions (upstream's wording), for a
/// model that reads only text. An image that cannot be described becomes a note saying so,
/// so the agent can tell the user rather than guess.
pub(crate) async fn describe_images(models: &Models, sources: &ImageSources, message: ChatMessage) -> ChatMessage {
    let Some(Content::Parts(parts)) = &message.content else { return message };
    if !parts.iter().any(|p| matches!(p, ContentPart::ImageUrl { .. })) {
        return message;
    }
    let (mut notes, mut words) = (Vec::new(), Vec::new());
    for part in parts {
        let image_url = match part {
            ContentPart::Text { text } => {
                words.push(text.clone());
                continue;
            }
            ContentPart::ImageUrl { image_url } => image_url,
            ContentPart::File { .. } => continue,
        };
        let key = SandboxKey { tenant: models.tenant, agent: models.agent.id, workspace: models.workspace };
        let seen = match load(sources, key, &image_url.url).await {
            Ok(image) => ask(models, &image, DESCRIBE_PROMPT).await,
            Err(why) => Err(why),
        };
        notes.push(match seen {
            Ok(description) => format!("[The user sent an image~ Here's what I can see:\n{description}]"),
            Err(why) => {
                tracing::warn!(error = %why, "could not describe an image the user sent");
                format!(
                    "[The user sent an image but I couldn't see it this time ({why}). Tell them, and ask what it \
                     shows if it matters.]"
                )
            }
        });
    }
    // Upstream puts the descriptions first, then the user's own words.
    notes.extend(words);
    ChatMessage { content: Some(Content::Text(notes.join("\n\n"))), ..message }
}

/// Earlier messages' images, for a model that reads only text: each becomes a short note
/// (their descriptions, when they had them, were stored in their place).
pub(crate) fn strip_images(messages: &mut [ChatMessage]) {
    for message in messages {
        let Some(Content::Parts(parts)) = &mut message.content else { continue };
        for part in parts.iter_mut() {
            if matches!(part, ContentPart::ImageUrl { .. }) {
                *part = ContentPart::Text { text: "[an image, which this model cannot see]".into() };
            }
        }
    }
}

/// `vision_analyze` for one turn (or one delegated child).
pub(crate) struct VisionTool {
    pub models: Models,
    pub sources: ImageSources,
    /// How often the same image may be loaded (`None`: no cap).
    pub loads_per_image: Option<u32>,
    loads: Mutex<HashMap<u64, u32>>,
}

impl VisionTool {
    pub(crate) fn new(models: Models, sources: ImageSources, loads_per_image: Option<u32>) -> Self {
        Self { models, sources, loads_per_image, loads: Mutex::default() }
    }

    /// Counts a load of `source`; past the cap, says why not.
    fn count(&self, source: &str) -> Result<(), String> {
        let Some(cap) = self.loads_per_image else { return Ok(()) };
        let mut hasher = DefaultHasher::new();
        source.trim().hash(&mut hasher);
        let mut loads = self.loads.lock().map_err(|_| "vision is unavailable".to_owned())?;
        let n = loads.entry(hasher.finish()).or_default();
        if *n >= cap {
            return Err(format!(
                "vision_analyze refused: this image has already been loaded into context {n} time(s) in this task; \
                 work with what you learned from it"
            ));
        }
        *n += 1;
        Ok(())
    }
}

/// Upstream's failure shape, with its hint for the model.
fn failure(error: &str) -> String {
    let lower = error.to_ascii_lowercase();
    let analysis = if ["402", "insufficient", "payment required", "credits", "billing"]
        .iter()
        .any(|h| lower.contains(h))
    {
        format!(
            "Insufficient credits or payment required. Please top up your API provider account and try again. Error: {error}"
        )
    } else if ["does not support", "not support image", "multimodal", "image input"].iter().any(|h| lower.contains(h)) {
        format!("The vision model does not support images or did not accept the request. Error: {error}")
    } else {
        format!("There was a problem with the request and the image could not be analyzed. Error: {error}")
    };
    json!({"success": false, "error": format!("Error analyzing image: {error}"), "analysis": analysis}).to_string()
}

impl SimpleTool for VisionTool {
    const SPEC: ToolSpec = ToolSpec::new(
        "vision_analyze",
        ToolsetName::Vision,
        "Look at an image and answer a question about it. Accepts an http(s) URL, a file path in your workspace \
         (a screenshot, a chart you made), or a data: URL. A vision model describes the image in full and \
         answers your question; you get its text back.",
    )
    .read_only();

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "image_url": { "type": "string", "description": "Image URL (http/https), workspace file path, or data: URL." },
                "question": { "type": "string", "description": "Your specific question or request about the image." }
            }),
            &["image_url", "question"],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let source = required_str(&args, "image_url")?.trim().to_owned();
        let question = args.get("question").and_then(Value::as_str).unwrap_or_default();
        self.count(&source).map_err(ToolError::RespondToModel)?;
        let key = SandboxKey { tenant: ctx.tenant_id, agent: ctx.agent_id, workspace: ctx.workspace };
        let prompt = format!(
            "Fully describe and explain everything about this image, then answer the following question:\n\n{question}"
        );
        let answer = match load(&self.sources, key, &source).await {
            Ok(image) => ask(&self.models, &image, &prompt).await,
            Err(why) => Err(why),
        };
        Ok(match answer {
            Ok(analysis) => json!({"success": true, "analysis": analysis}).to_string(),
            Err(why) => failure(&why),
        })
    }
}

/// Registers `vision_analyze` for a turn (no cap) or a delegated child (upstream's cap).
pub(crate) fn register(
    models: &Models,
    sources: &ImageSources,
    tools: &mut hermes_tools::ToolRegistry,
    loads_per_image: Option<u32>,
) {
    tools.register(Arc::new(VisionTool::new(models.clone(), sources.clone(), loads_per_image)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_carry_upstreams_hint_for_the_model() {
        let paid: Value = serde_json::from_str(&failure("HTTP 402 Payment Required")).unwrap_or_default();
        assert_eq!(paid["success"], false);
        assert!(paid["analysis"].as_str().unwrap_or_default().starts_with("Insufficient credits"));
        let other: Value = serde_json::from_str(&failure("connection reset")).unwrap_or_default();
        assert_eq!(other["error"], "Error analyzing image: connection reset");
    }

    #[test]
    fn earlier_images_become_notes_for_a_text_only_model() {
        let mut message = ChatMessage::user(String::new());
        message.content = Some(Content::Parts(vec![
            ContentPart::Text { text: "look".into() },
            ContentPart::ImageUrl { image_url: ImageUrl { url: "data:image/png;base64,AA".into(), detail: None } },
        ]));
        let mut history = vec![message];
        strip_images(&mut history);
        assert_eq!(history[0].text(), "look\n[an image, which this model cannot see]");
    }
}
