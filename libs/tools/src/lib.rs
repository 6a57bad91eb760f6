//! The tool framework: the [`Tool`] trait, the context tools get (tenant and session as hidden
//! side information, never as model-visible arguments), and a registry that dispatches a
//! model's tool calls and turns every failure into text the model can act on.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;

use hermes_core::{AgentId, SessionId, TenantId, ToolCall, TurnId};

/// Who is calling: set by the worker from the claimed turn, invisible to the model.
#[derive(Debug, Clone)]
pub struct ToolCtx {
    pub tenant_id: TenantId,
    pub agent_id: AgentId,
    pub session_id: SessionId,
    pub turn_id: TurnId,
    /// The model's id for this call; with the turn, the idempotency key of its effects.
    pub call_id: String,
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
}

/// A tool the agent can call.
pub trait Tool: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &'static str;
    /// The toolset that enables it (an agent's `toolsets` list).
    fn toolset(&self) -> &'static str;
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
    /// Runs the tool with the model's parsed arguments.
    fn call<'a>(&'a self, ctx: &'a ToolCtx, args: Value) -> BoxFuture<'a, Result<String, ToolError>>;
}

/// What the loop needs to know about a tool besides running it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolTraits {
    pub read_only: bool,
    pub sequential: bool,
    pub refunds_iteration: bool,
}

/// The result of one dispatched call, ready to become a `tool` message.
#[derive(Debug, Clone)]
pub struct ToolOutcome {
    pub text: String,
    pub ok: bool,
}

/// The tools available to one agent.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<&'static str, Arc<dyn Tool>>,
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool (a later one with the same name replaces it).
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.name(), tool);
    }

    /// Only the tools whose toolset is in `enabled`.
    pub fn restricted_to(&self, enabled: &[String]) -> Self {
        let tools = self
            .tools
            .iter()
            .filter(|(_, t)| enabled.iter().any(|e| e == t.toolset()))
            .map(|(n, t)| (*n, t.clone()))
            .collect();
        Self { tools }
    }

    /// All tools but those named.
    pub fn without(&self, names: &[&str]) -> Self {
        let tools = self.tools.iter().filter(|(n, _)| !names.contains(n)).map(|(n, t)| (*n, t.clone())).collect();
        Self { tools }
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.tools.keys().copied().collect()
    }

    /// The traits of `name`; an unknown tool counts as mutating and parallel (its call fails
    /// at once with an explanation anyway).
    pub fn traits(&self, name: &str) -> ToolTraits {
        self.tools.get(name).map_or(ToolTraits { read_only: false, sequential: false, refunds_iteration: false }, |t| {
            ToolTraits {
                read_only: t.read_only(),
                sequential: t.sequential(),
                refunds_iteration: t.refunds_iteration(),
            }
        })
    }

    /// The schemas in OpenAI `tools` form.
    pub fn schemas(&self) -> Vec<Value> {
        self.tools.values().map(|t| serde_json::json!({ "type": "function", "function": t.schema() })).collect()
    }

    /// Runs one call. Never fails: unknown tools, unparsable arguments and tool errors become
    /// an error text for the model.
    pub async fn dispatch(&self, ctx: &ToolCtx, call: &ToolCall) -> ToolOutcome {
        let name = call.function.name.as_str();
        let Some(tool) = self.tools.get(name) else {
            return ToolOutcome {
                text: format!("Error: unknown tool {name:?}. Available tools: {}.", self.names().join(", ")),
                ok: false,
            };
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
            Ok(text) => ToolOutcome { text, ok: true },
            Err(ToolError::RespondToModel(msg)) => error_outcome(msg),
            Err(ToolError::Unavailable(msg)) => {
                tracing::warn!(tool = name, error = %msg, "tool infrastructure unavailable");
                error_outcome(format!("the {name} tool is unavailable right now: {msg}"))
            }
        }
    }
}

fn error_outcome(msg: String) -> ToolOutcome {
    ToolOutcome { text: format!("Error: {msg}"), ok: false }
}

/// Reads a required string argument.
pub fn required_str<'a>(args: &'a Value, key: &str) -> Result<&'a str, ToolError> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::RespondToModel(format!("missing required string argument {key:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_core::ToolCallFunction;

    struct Echo;
    impl Tool for Echo {
        fn name(&self) -> &'static str {
            "echo"
        }
        fn toolset(&self) -> &'static str {
            "debug"
        }
        fn schema(&self) -> Value {
            serde_json::json!({"name":"echo","description":"echo","parameters":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}})
        }
        fn read_only(&self) -> bool {
            true
        }
        fn call<'a>(&'a self, _: &'a ToolCtx, args: Value) -> BoxFuture<'a, Result<String, ToolError>> {
            Box::pin(async move { Ok(required_str(&args, "text")?.to_owned()) })
        }
    }

    fn call(name: &str, args: &str) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            kind: "function".into(),
            function: ToolCallFunction { name: name.into(), arguments: args.into() },
        }
    }

    fn ctx() -> ToolCtx {
        #[expect(clippy::disallowed_methods, reason = "test fixture")]
        let tenant = TenantId::from_authenticated(uuid::Uuid::now_v7());
        ToolCtx {
            tenant_id: tenant,
            agent_id: AgentId::new(),
            session_id: SessionId::new(),
            turn_id: TurnId::new(),
            call_id: "c1".into(),
        }
    }

    #[tokio::test]
    async fn dispatch_explains_every_failure_to_the_model() {
        let mut reg = ToolRegistry::new();
        reg.register(Arc::new(Echo));
        let ok = reg.dispatch(&ctx(), &call("echo", r#"{"text":"hi"}"#)).await;
        assert!(ok.ok);
        assert_eq!(ok.text, "hi");
        let unknown = reg.dispatch(&ctx(), &call("nope", "{}")).await;
        assert!(!unknown.ok && unknown.text.contains("Available tools: echo"));
        let bad_json = reg.dispatch(&ctx(), &call("echo", "{text:")).await;
        assert!(!bad_json.ok && bad_json.text.contains("not valid JSON"));
        let missing = reg.dispatch(&ctx(), &call("echo", "{}")).await;
        assert!(!missing.ok && missing.text.contains("\"text\""));
        assert!(reg.restricted_to(&["terminal".into()]).is_empty());
        assert_eq!(reg.restricted_to(&["debug".into()]).names(), vec!["echo"]);
    }
}
