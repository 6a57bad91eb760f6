//! A server's tools as the agent's tools: each MCP tool as `mcp_<server>_<tool>`, and, where
//! the server has them and the configuration allows, upstream's `list_resources`,
//! `read_resource`, `list_prompts` and `get_prompt` wrappers. Results come back as upstream's
//! `{"result": ...}`, with invisible Unicode tag characters stripped and the configuration's
//! secrets redacted; a lost session is re-established once per call, and a server that stays
//! down is reported to the model instead of being called in a loop.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use hermes_core::ToolsetName;
use hermes_tools::{Tool, ToolCtx, ToolError, ToolName};

use crate::connection::{ListedTool, McpConnection, McpError};
use crate::pool::McpServers;
use crate::server_key::ServerKey;
use crate::spec::McpServerSpec;

/// The servers' tools alive in the process; their names go with them.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// How many names of servers' tools the process keeps: those of the tools alive (the turns'
/// in flight), no more. The sessions' own lists add at most [`crate::ListLimits`]' cap each.
pub fn retained_tool_names() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Removes Unicode tag characters (U+E0000–U+E007F), which can hide instructions in text.
pub fn strip_invisible(text: &str) -> String {
    text.chars().filter(|c| !('\u{E0000}'..='\u{E007F}').contains(c)).collect()
}

/// Upstream's wrappers of a server's resources and prompts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wrapper {
    ListResources,
    ReadResource,
    ListPrompts,
    GetPrompt,
}

impl Wrapper {
    /// What follows `mcp_<server>_` in its name (upstream's).
    fn suffix(self) -> &'static str {
        match self {
            Self::ListResources => "list_resources",
            Self::ReadResource => "read_resource",
            Self::ListPrompts => "list_prompts",
            Self::GetPrompt => "get_prompt",
        }
    }

    /// Its description and parameters, for server `server`.
    fn schema(self, server: &str) -> (String, Value) {
        let empty = json!({ "type": "object", "properties": {} });
        match self {
            Self::ListResources => (format!("List available resources from MCP server '{server}'"), empty),
            Self::ReadResource => (
                format!("Read a resource by URI from MCP server '{server}'"),
                json!({ "type": "object", "properties": { "uri": { "type": "string", "description": "URI of the resource to read" } }, "required": ["uri"] }),
            ),
            Self::ListPrompts => (format!("List available prompts from MCP server '{server}'"), empty),
            Self::GetPrompt => (
                format!("Get a prompt by name from MCP server '{server}'"),
                json!({ "type": "object", "properties": {
                    "name": { "type": "string", "description": "Name of the prompt to retrieve" },
                    "arguments": { "type": "object", "description": "Optional arguments to pass to the prompt", "properties": {}, "additionalProperties": true }
                }, "required": ["name"] }),
            ),
        }
    }
}

/// What a tool does: call the server's tool, or one of the wrappers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Call,
    Wrapper(Wrapper),
}

/// The server a tool belongs to.
pub(crate) struct Server {
    pub pool: Arc<McpServers>,
    pub key: ServerKey,
    pub spec: McpServerSpec,
    /// The turn's answerer of the server's sampling requests (sampling on only).
    pub sampler: Option<Arc<dyn crate::Sampler>>,
    /// Where the pictures in the server's results are kept for the turn.
    pub keeper: Option<Arc<dyn FileKeeper>>,
}

/// Keeps a file a server's result carries (a picture) with the turn, for the chat or the API
/// client to be given.
pub trait FileKeeper: Send + Sync {
    /// Keeps `bytes` as `name` for the turn of `ctx`; what the model reads about it (how to
    /// hand it over).
    fn keep<'a>(
        &'a self,
        ctx: &'a ToolCtx,
        name: String,
        mime: String,
        bytes: Vec<u8>,
    ) -> BoxFuture<'a, Result<String, String>>;
}

/// What a turn lends its servers: the model for sampling, the keeper of pictures.
#[derive(Clone, Default)]
pub struct TurnHooks {
    pub sampler: Option<Arc<dyn crate::Sampler>>,
    pub keeper: Option<Arc<dyn FileKeeper>>,
}

/// The largest picture kept from a result (as the chat platforms take).
const MAX_KEPT_BYTES: usize = 20 * 1024 * 1024;

/// What a server offers the agent: one of its tools, or one of upstream's wrappers.
pub(crate) enum Offer {
    Tool(ListedTool),
    Wrapper(Wrapper),
}

impl Offer {
    /// The wrappers for a server with resources and prompts as given.
    pub(crate) fn wrappers(resources: bool, prompts: bool) -> Vec<Self> {
        let mut out = Vec::new();
        if resources {
            out.extend([Self::Wrapper(Wrapper::ListResources), Self::Wrapper(Wrapper::ReadResource)]);
        }
        if prompts {
            out.extend([Self::Wrapper(Wrapper::ListPrompts), Self::Wrapper(Wrapper::GetPrompt)]);
        }
        out
    }

    /// What follows `mcp_<server>_` in its name: the tool's name, or upstream's for a wrapper.
    pub(crate) fn suffix(&self) -> &str {
        match self {
            Self::Tool(tool) => &tool.name,
            Self::Wrapper(wrapper) => wrapper.suffix(),
        }
    }
}

/// One of a server's tools (or wrappers), as the agent sees it.
pub struct McpTool {
    name: Arc<str>,
    schema: Value,
    /// The server's own name for it.
    remote: String,
    action: Action,
    server: Arc<Server>,
}

impl Drop for McpTool {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::Relaxed);
    }
}

impl McpTool {
    /// `offer` of `server`, offered as `name`; `tagged`: the name is not upstream's plain one
    /// (it was cut, or another tool had it), so the description says whose tool it is.
    pub(crate) fn new(server: Arc<Server>, name: String, offer: Offer, tagged: bool) -> Self {
        let n = &server.key.name;
        let (remote, action, description, parameters) = match offer {
            Offer::Tool(tool) => {
                let mut description = if tool.description.trim().is_empty() {
                    format!("MCP tool {} from {n}", tool.name)
                } else {
                    strip_invisible(&tool.description)
                };
                if tagged {
                    description = format!("{description} (tool {} of MCP server {n})", tool.name);
                }
                (tool.name, Action::Call, description, normalize(tool.input_schema))
            }
            Offer::Wrapper(wrapper) => {
                let (description, parameters) = wrapper.schema(n);
                (String::new(), Action::Wrapper(wrapper), description, parameters)
            }
        };
        let schema = json!({ "name": name, "description": description, "parameters": parameters });
        LIVE.fetch_add(1, Ordering::Relaxed);
        Self { name: name.into(), schema, remote, action, server }
    }

    async fn once(&self, ctx: &ToolCtx, conn: &McpConnection, args: &Value) -> Result<String, McpError> {
        let timeout = self.server.spec.timeout();
        let arg = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        let value = match self.action {
            Action::Call => {
                let mut result = conn.call(&self.remote, args.clone(), timeout).await?;
                if let Some(keeper) = &self.server.keeper {
                    keep_pictures(&mut result, keeper.as_ref(), ctx).await;
                }
                return render(&result);
            }
            Action::Wrapper(Wrapper::ListResources) => conn.list_resources(timeout).await?,
            Action::Wrapper(Wrapper::ReadResource) => conn.read_resource(&arg("uri"), timeout).await?,
            Action::Wrapper(Wrapper::ListPrompts) => conn.list_prompts(timeout).await?,
            Action::Wrapper(Wrapper::GetPrompt) => {
                let arguments = args.get("arguments").cloned().unwrap_or(Value::Null);
                conn.get_prompt(&arg("name"), arguments, timeout).await?
            }
        };
        Ok(json!({ "result": value }).to_string())
    }

    fn clean(&self, text: &str, secrets: &[String]) -> String {
        hermes_tools::text::redact(&strip_invisible(text), secrets)
    }
}

/// Keeps the pictures of `result` with the turn, each replaced by a text block saying how to
/// hand it over (`mcp-<call>-<n>.<ext>`); one that cannot be kept stays a description.
async fn keep_pictures(result: &mut Value, keeper: &dyn FileKeeper, ctx: &ToolCtx) {
    use base64::Engine;
    let Some(blocks) = result.get_mut("content").and_then(Value::as_array_mut) else { return };
    let call = hermes_tools::text::call_stem(&ctx.call_id);
    for (n, block) in blocks.iter_mut().enumerate() {
        let mime = block["mimeType"].as_str().unwrap_or_default().to_owned();
        if block["type"] != "image" || !mime.starts_with("image/") {
            continue;
        }
        let Some(data) = block["data"].as_str().filter(|d| d.len() <= MAX_KEPT_BYTES / 3 * 4 + 4) else { continue };
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(data.trim()) else { continue };
        let ext = match mime.as_str() {
            "image/jpeg" => "jpg",
            "image/gif" => "gif",
            "image/webp" => "webp",
            _ => "png",
        };
        let name = format!("mcp-{call}-{}.{ext}", n + 1);
        match keeper.keep(ctx, name, mime.clone(), bytes).await {
            Ok(how) => *block = json!({"type": "text", "text": format!("[image from the server ({mime}): {how}]")}),
            Err(e) => tracing::warn!(error = %e, "a picture from an MCP server could not be kept"),
        }
    }
}

/// The model's text for a `tools/call` result; an error result is the server telling the
/// model its call failed.
fn render(result: &Value) -> Result<String, McpError> {
    let mut parts = Vec::new();
    for block in result["content"].as_array().into_iter().flatten() {
        match block["type"].as_str().unwrap_or_default() {
            "text" => parts.push(block["text"].as_str().unwrap_or_default().to_owned()),
            "image" | "audio" => {
                let bytes = block["data"].as_str().map_or(0, |d| d.len() / 4 * 3);
                let mime = block["mimeType"].as_str().unwrap_or("application/octet-stream");
                parts.push(format!(
                    "[{} from the server: {mime}, about {bytes} bytes, not shown]",
                    block["type"].as_str().unwrap_or("media")
                ));
            }
            "resource" => {
                let resource = &block["resource"];
                let uri = resource["uri"].as_str().unwrap_or_default();
                match resource["text"].as_str() {
                    Some(text) => parts.push(format!("[resource {uri}]\n{text}")),
                    None => parts.push(format!("[resource {uri}: binary, not shown]")),
                }
            }
            "resource_link" => {
                let uri = block["uri"].as_str().unwrap_or_default();
                parts.push(format!("[resource link: {uri} ({})]", block["name"].as_str().unwrap_or_default()));
            }
            _ => {}
        }
    }
    let text = parts.join("\n");
    if result["isError"] == true {
        return Err(McpError::Call(if text.is_empty() { "the tool returned an error".into() } else { text }));
    }
    match result.get("structuredContent").filter(|s| !s.is_null()) {
        Some(structured) if text.is_empty() => Ok(json!({ "result": structured }).to_string()),
        _ => Ok(json!({ "result": text }).to_string()),
    }
}

/// An input schema as function calling wants it: an object with properties.
fn normalize(schema: Value) -> Value {
    let mut schema = match schema {
        Value::Object(map) => Value::Object(map),
        _ => json!({}),
    };
    if schema.get("type").is_none() {
        schema["type"] = json!("object");
    }
    if schema.get("properties").is_none() {
        schema["properties"] = json!({});
    }
    schema
}

impl Tool for McpTool {
    fn name(&self) -> ToolName {
        ToolName::Chosen(self.name.clone())
    }

    fn toolset(&self) -> ToolsetName {
        ToolsetName::Mcp
    }

    fn schema(&self) -> Value {
        self.schema.clone()
    }

    fn read_only(&self) -> bool {
        matches!(self.action, Action::Wrapper(_))
    }

    /// A server's calls run one at a time, as upstream's default.
    fn sequential(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, ctx: &'a ToolCtx, args: Value) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let server = &self.server;
            let secrets = server.spec.secret_values();
            let mut last = None;
            // Once, and once more on a fresh session when the first one was lost.
            for _ in 0..2 {
                let conn = match server.pool.connection(&server.key, &server.spec).await {
                    Ok(c) => c,
                    Err(e) => {
                        last = Some(e);
                        break;
                    }
                };
                // The server may ask the turn's model while the call runs.
                let _calling = server.sampler.clone().map(|sampler| conn.calling(sampler));
                match self.once(ctx, &conn, &args).await {
                    Ok(text) => return Ok(self.clean(&text, &secrets)),
                    Err(McpError::Lost) => {
                        server.pool.forget(&server.key);
                        last = Some(McpError::Lost);
                    }
                    Err(e) => {
                        last = Some(e);
                        break;
                    }
                }
            }
            let name = &server.key.name;
            let message = match &last {
                Some(e @ (McpError::Lost | McpError::Connect(_))) => {
                    format!("the MCP server {name} is not responding ({e}); do not call its tools again in this turn")
                }
                Some(e) => format!("MCP tool {} failed: {e}", self.remote_name()),
                None => format!("the MCP server {name} is not responding; do not call its tools again in this turn"),
            };
            Err(ToolError::RespondToModel(self.clean(&message, &secrets)))
        })
    }
}

impl McpTool {
    fn remote_name(&self) -> &str {
        if self.remote.is_empty() { &self.name } else { &self.remote }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_text_describe_media_and_an_error_result_is_an_error() {
        let ok = json!({"content": [{"type": "text", "text": "42 issues"},
                                     {"type": "image", "data": "aGVsbG8gd29ybGQh", "mimeType": "image/png"},
                                     {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "alpha"}}]});
        let text: Value = serde_json::from_str(&render(&ok).unwrap()).unwrap();
        assert_eq!(
            text["result"],
            "42 issues\n[image from the server: image/png, about 12 bytes, not shown]\n[resource file:///a.txt]\nalpha"
        );
        let structured = json!({"content": [], "structuredContent": {"count": 3}});
        assert_eq!(render(&structured).unwrap(), r#"{"result":{"count":3}}"#);
        let failed = json!({"content": [{"type": "text", "text": "repo not found"}], "isError": true});
        assert!(matches!(render(&failed), Err(McpError::Call(m)) if m == "repo not found"));
    }

    #[test]
    fn tag_characters_are_stripped_and_schemas_become_objects() {
        assert_eq!(strip_invisible("ok\u{E0041}\u{E0042} done"), "ok done");
        assert_eq!(normalize(json!(null)), json!({"type": "object", "properties": {}}));
        assert_eq!(normalize(json!({"type": "object", "required": []}))["properties"], json!({}));
    }
}
