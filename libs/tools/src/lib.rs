//! The tool framework: the [`Tool`] trait, the context tools get (tenant and session as hidden
//! side information, never as model-visible arguments), and a registry that dispatches a
//! model's tool calls and turns every failure into text the model can act on.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;

pub use hermes_core::ApprovalMode;
use hermes_core::{AgentId, InteractionKind, SessionId, TenantId, ToolCall, TurnId};

mod name;
mod schemas;
mod simple;
pub mod text;
pub mod window;

pub use name::ToolName;
pub use schemas::shared_names as shared_schema_names;
pub use simple::{Choice, SimpleTool, ToolSpec, object_schema};

/// Who is calling: set by the worker from the claimed turn, invisible to the model.
#[derive(Debug, Clone)]
pub struct ToolCtx {
    pub tenant_id: TenantId,
    pub agent_id: AgentId,
    pub session_id: SessionId,
    pub turn_id: TurnId,
    /// Whose workspace the sandboxed tools use (the agent's `workspace` setting applied).
    pub workspace: hermes_core::Workspace,
    /// The model's id for this call; with the turn, the idempotency key of its effects.
    pub call_id: String,
    /// What the tool may ask the user, and what the user already answered.
    pub interaction: Interactive,
    /// The folder relative paths and commands start in (`/workspace/...`: a cron job's
    /// `workdir`, as upstream's); `None`: the workspace.
    pub workdir: Option<String>,
}

impl ToolCtx {
    /// `path` as the sandbox reads it: a relative path under [`ToolCtx::workdir`] when the
    /// turn has one; any other path as it is (the sandbox keeps every path in the workspace).
    pub fn in_workdir(&self, path: &str) -> String {
        match &self.workdir {
            Some(dir) if !path.starts_with('/') && !path.starts_with('~') => {
                let path = path.strip_prefix("./").unwrap_or(path);
                if path.is_empty() || path == "." { dir.clone() } else { format!("{dir}/{path}") }
            }
            _ => path.to_owned(),
        }
    }

    /// A call of a fresh tenant's fresh agent, for tests of tools (never a request's: a
    /// request's tenant comes from authentication).
    #[doc(hidden)]
    pub fn for_tests(call_id: &str) -> Self {
        #[expect(clippy::disallowed_methods, reason = "a test tenant, not from a request")]
        let tenant = TenantId::from_authenticated(uuid::Uuid::now_v7());
        Self {
            tenant_id: tenant,
            agent_id: hermes_core::AgentId::new(),
            session_id: hermes_core::SessionId::new(),
            turn_id: hermes_core::TurnId::new(),
            workspace: hermes_core::Workspace::Shared,
            call_id: call_id.to_owned(),
            interaction: Interactive::default(),
            workdir: None,
        }
    }
}

/// The interactive side of a call.
#[derive(Debug, Clone, Default)]
pub struct Interactive {
    /// Whether a tool may park the turn to ask the user (not inside scripts or sub-agents:
    /// there a question that needs the user is answered "no").
    pub enabled: bool,
    pub approval_mode: ApprovalMode,
    /// Dangerous-command pattern keys the user allowed for the agent ("always") or this
    /// session ("session").
    pub allowed: Arc<BTreeSet<String>>,
    /// The user's answer to the question the turn was parked on.
    pub resolution: Option<Arc<Resolution>>,
    /// Reviews dangerous commands first in `smart` mode.
    pub judge: Option<Judge>,
}

/// What a reviewer says about a dangerous command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Approve,
    Deny,
    /// Unsure: ask the user.
    Escalate,
}

/// Reviews a flagged command before the user is asked (`smart` approval mode).
pub trait ApprovalJudge: Send + Sync {
    /// `reasons`: why the catalogue flagged it; `keys`: its pattern keys.
    fn judge<'a>(&'a self, command: &'a str, reasons: &'a str, keys: &'a [&'static str]) -> BoxFuture<'a, Verdict>;
}

/// A shared [`ApprovalJudge`].
#[derive(Clone)]
pub struct Judge(pub Arc<dyn ApprovalJudge>);

impl std::fmt::Debug for Judge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Judge")
    }
}

impl Interactive {
    /// The answer for `call_id`, if the turn was parked on that call and answered.
    pub fn answer_for(&self, call_id: &str) -> Option<&Resolution> {
        self.resolution.as_deref().filter(|r| r.call_id == call_id)
    }
}

/// The user's answer to a parked call.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolution {
    pub call_id: String,
    pub answer: hermes_core::InteractionAnswer,
}

/// A question for the user: the turn is parked until it is answered or expires.
#[derive(Debug, Clone, PartialEq)]
pub struct Interaction {
    pub kind: InteractionKind,
    /// What the user is shown (command and reasons, or question and choices).
    pub prompt: Value,
}

/// A tool failure.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The model can fix this (bad arguments, a failing command): tell it.
    #[error("{0}")]
    RespondToModel(String),
    /// Infrastructure failed (sandbox down): the model is told, operators see a warning.
    #[error("{0}")]
    Unavailable(String),
    /// The call needs the user: park the turn until they answer, then call again.
    #[error("waiting for the user ({})", .0.kind)]
    Park(Interaction),
}

/// A tool the agent can call.
pub trait Tool: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> ToolName;
    /// The toolset that enables it (an agent's `toolsets` list).
    fn toolset(&self) -> hermes_core::ToolsetName;
    /// The OpenAI function schema `{"name", "description", "parameters"}`.
    fn schema(&self) -> Value;
    /// Whether it only reads (guardrails treat read-only tools differently).
    fn read_only(&self) -> bool;
    /// Whether it must run alone, in order (agent-level and interactive tools: todo, memory,
    /// clarify, delegate_task, session_search), instead of beside other calls of its response.
    fn sequential(&self) -> bool {
        false
    }
    /// Whether a step that only calls this tool is not counted against the iteration budget
    /// (`execute_code`, whose scripted tool calls are the work itself).
    fn refunds_iteration(&self) -> bool {
        false
    }
    /// Whether it works in the agent's sandbox (its time counts as the turn's sandbox time).
    fn sandboxed(&self) -> bool {
        false
    }
    /// Results longer than this (in characters) are saved to a file and replaced by a
    /// preview; `None` never (`read_file`, whose pages are the way to read a saved result).
    fn max_result_chars(&self) -> Option<usize> {
        Some(MAX_RESULT_CHARS)
    }
    /// Runs the tool with the model's parsed arguments.
    fn call<'a>(&'a self, ctx: &'a ToolCtx, args: Value) -> BoxFuture<'a, Result<String, ToolError>>;
}

/// Default ceiling of one tool result before it is saved to a file.
pub const MAX_RESULT_CHARS: usize = 100_000;
/// Ceiling of the results of one model response together; the rest are saved to files.
pub const STEP_RESULT_BUDGET_CHARS: usize = 200_000;
/// How much of a saved result the model sees inline.
pub const PREVIEW_CHARS: usize = 1_500;
/// Marks a result that was saved to a file (never saved again).
pub const PERSISTED_TAG: &str = "<persisted-output>";

/// Where oversized results go: a file the agent's own file tools can read.
pub trait ResultSpill: Send + Sync {
    /// Saves `text` as the result of `ctx.call_id`; returns the file's path.
    fn save<'a>(&'a self, ctx: &'a ToolCtx, text: &'a str) -> BoxFuture<'a, Result<String, ToolError>>;

    /// Saves `text` under `name` (a plain file name, made safe by the spill) in the same
    /// place; returns the file's path. A tool that keeps several texts of one call (each
    /// page `web_extract` cut) names them.
    fn save_as<'a>(
        &'a self,
        ctx: &'a ToolCtx,
        name: &'a str,
        text: &'a str,
    ) -> BoxFuture<'a, Result<String, ToolError>> {
        let _ = name;
        self.save(ctx, text)
    }
}

/// The first `max` characters of `text`, cut after its last newline when it has one there;
/// and whether anything was left out.
fn preview(text: &str, max: usize) -> (&str, bool) {
    let Some((end, _)) = text.char_indices().nth(max) else {
        return (text, false);
    };
    let head = &text[..end];
    (head.rfind('\n').map_or(head, |nl| &head[..=nl]), true)
}

/// What the model sees instead of a result saved to `path`.
fn persisted_message(text: &str, chars: usize, path: &str) -> String {
    let (head, more) = preview(text, PREVIEW_CHARS);
    format!(
        "{PERSISTED_TAG}\nThis tool result was too large ({chars} characters).\nFull output saved to: {path}\n\
         Use the read_file tool with offset and limit to read specific sections of it.\n\n\
         Preview (first {} chars):\n{head}{}\n</persisted-output>",
        head.chars().count(),
        if more { "\n..." } else { "" }
    )
}

/// What the loop needs to know about a tool besides running it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolTraits {
    pub read_only: bool,
    pub sequential: bool,
    pub refunds_iteration: bool,
    pub sandboxed: bool,
}

/// The result of one dispatched call, ready to become a `tool` message.
#[derive(Debug, Clone)]
pub struct ToolOutcome {
    pub text: String,
    pub ok: bool,
    /// Set when the call parks the turn (no result yet).
    pub park: Option<Interaction>,
}

/// A registered tool and its schema in OpenAI `tools` form, built at registration and shared
/// (see `schemas`): every model call of a turn offers the same schemas.
#[derive(Clone)]
struct Registered {
    tool: Arc<dyn Tool>,
    schema: Arc<Value>,
}

/// The tools available to one agent.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<ToolName, Registered>,
    spill: Option<Arc<dyn ResultSpill>>,
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Where oversized results are saved (without one they are cut to a preview).
    pub fn set_spill(&mut self, spill: Arc<dyn ResultSpill>) {
        self.spill = Some(spill);
    }

    /// `text` saved to a file and replaced by a preview with the file's path; when saving
    /// fails, the preview with a note that the rest is lost.
    pub async fn persist(&self, ctx: &ToolCtx, text: String) -> String {
        if text.contains(PERSISTED_TAG) {
            return text;
        }
        let chars = text.chars().count();
        let saved = match &self.spill {
            Some(spill) => spill.save(ctx, &text).await,
            None => Err(ToolError::Unavailable("no place to save results".into())),
        };
        match saved {
            Ok(path) => persisted_message(&text, chars, &path),
            Err(e) => {
                tracing::warn!(error = %e, call_id = %ctx.call_id, "cannot save a large tool result; cutting it");
                let (head, _) = preview(&text, PREVIEW_CHARS);
                format!("{head}\n\n[Truncated: the result was {chars} characters and could not be saved.]")
            }
        }
    }

    /// Adds a tool (a later one with the same name replaces it). A tool named at run time (an
    /// MCP server's) never replaces one already there: it is left out, with a warning, so a
    /// call cannot go to another tool than the one its name was given to.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        let name = tool.name();
        if name.fixed().is_none() && self.tools.contains_key(name.as_str()) {
            tracing::warn!(tool = %name, "a tool named at run time has the name of one already registered; left out");
            return;
        }
        let schema = schemas::shared(&name, tool.schema());
        self.tools.insert(name, Registered { tool, schema });
    }

    /// Only the tools whose toolset is in `enabled`.
    pub fn restricted_to(&self, enabled: &[String]) -> Self {
        self.keeping(|_, t| t.tool.toolset().enabled_in(enabled))
    }

    /// Only the tools named (those of them it has).
    pub fn only(&self, names: &[&str]) -> Self {
        self.keeping(|n, _| names.contains(&n.as_str()))
    }

    /// All tools but those named.
    pub fn without(&self, names: &[&str]) -> Self {
        self.keeping(|n, _| !names.contains(&n.as_str()))
    }

    /// A registry of the tools `keep` accepts, spilling where this one does.
    fn keeping(&self, keep: impl Fn(&ToolName, &Registered) -> bool) -> Self {
        let tools = self.tools.iter().filter(|(n, t)| keep(n, t)).map(|(n, t)| (n.clone(), t.clone())).collect();
        Self { tools, spill: self.spill.clone() }
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    pub fn names(&self) -> Vec<&str> {
        self.tools.keys().map(ToolName::as_str).collect()
    }

    /// The names the code fixed (every tool's but those named at run time, an MCP server's),
    /// for what keeps them past the registry.
    pub fn fixed_names(&self) -> Vec<&'static str> {
        self.tools.keys().filter_map(ToolName::fixed).collect()
    }

    /// `name` as a metric label: a registered tool's name where the code fixed it, the toolset
    /// of one named at run time (`mcp`), else `unknown`. The model chooses the names it calls,
    /// and a server its tools', so a label per name would grow without bound.
    pub fn label(&self, name: &str) -> &'static str {
        self.tools
            .get_key_value(name)
            .map_or("unknown", |(known, r)| known.fixed().unwrap_or_else(|| r.tool.toolset().as_str()))
    }

    /// The traits of `name`; an unknown tool counts as mutating and parallel (its call fails
    /// at once with an explanation anyway).
    pub fn traits(&self, name: &str) -> ToolTraits {
        let unknown = ToolTraits { read_only: false, sequential: false, refunds_iteration: false, sandboxed: false };
        self.tools.get(name).map(|r| &r.tool).map_or(unknown, |t| ToolTraits {
            read_only: t.read_only(),
            sequential: t.sequential(),
            refunds_iteration: t.refunds_iteration(),
            sandboxed: t.sandboxed(),
        })
    }

    /// The schemas in OpenAI `tools` form (shared, not copied).
    pub fn schemas(&self) -> Arc<[Arc<Value>]> {
        self.tools.values().map(|r| r.schema.clone()).collect()
    }

    /// Runs one call. Never fails: unknown tools, unparsable arguments and tool errors become
    /// an error text for the model.
    pub async fn dispatch(&self, ctx: &ToolCtx, call: &ToolCall) -> ToolOutcome {
        let name = call.function.name.as_str();
        let Some(tool) = self.tools.get(name).map(|r| &r.tool) else {
            return error_outcome(format!("unknown tool {name:?}. Available tools: {}.", self.names().join(", ")));
        };
        let raw = call.function.arguments.trim();
        let args =
            if raw.is_empty() { Ok(Value::Object(Default::default())) } else { serde_json::from_str::<Value>(raw) };
        let args = match args {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => return error_outcome(format!("arguments for {name} must be a JSON object")),
            Err(e) => {
                return error_outcome(format!("arguments for {name} are not valid JSON ({e}); send a JSON object"));
            }
        };
        match tool.call(ctx, args).await {
            // Bytes bound characters from above: only a long text needs counting.
            Ok(text) if tool.max_result_chars().is_some_and(|max| text.len() > max && text.chars().count() > max) => {
                ToolOutcome { text: self.persist(ctx, text).await, ok: true, park: None }
            }
            Ok(text) => ToolOutcome { text, ok: true, park: None },
            Err(ToolError::Park(interaction)) if ctx.interaction.enabled => {
                ToolOutcome { text: String::new(), ok: false, park: Some(interaction) }
            }
            Err(ToolError::Park(interaction)) => error_outcome(format!(
                "this needs the user's {} and cannot ask from here; it was not done",
                interaction.kind
            )),
            Err(ToolError::RespondToModel(msg)) => error_outcome(msg),
            Err(ToolError::Unavailable(msg)) => {
                tracing::warn!(tool = name, error = %msg, "tool infrastructure unavailable");
                error_outcome(format!("the {name} tool is unavailable right now: {msg}"))
            }
        }
    }
}

fn error_outcome(msg: String) -> ToolOutcome {
    ToolOutcome { text: format!("Error: {msg}"), ok: false, park: None }
}

/// Reads a required string argument.
pub fn required_str<'a>(args: &'a Value, key: &str) -> Result<&'a str, ToolError> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::RespondToModel(format!("missing required string argument {key:?}")))
}

#[cfg(test)]
#[path = "lib_tests.rs"]
mod tests;
