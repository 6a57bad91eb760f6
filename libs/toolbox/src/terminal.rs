//! `terminal`: run a shell command in the agent's sandbox.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use hermes_sandbox::{ExecRequest, SandboxKey, Sandboxes, cap_middle};
use hermes_tools::{Tool, ToolCtx, ToolError, required_str};

/// Output beyond this many characters is cut in the middle (upstream's cap).
pub const MAX_OUTPUT_CHARS: usize = 50_000;
const MAX_TIMEOUT_SECS: u64 = 3600;

/// Runs commands in the tenant-agent's sandbox.
pub struct TerminalTool {
    sandboxes: Arc<dyn Sandboxes>,
    default_timeout_secs: u64,
}

impl TerminalTool {
    pub fn new(sandboxes: Arc<dyn Sandboxes>, default_timeout_secs: u64) -> Self {
        Self { sandboxes, default_timeout_secs }
    }
}

impl Tool for TerminalTool {
    fn name(&self) -> &'static str {
        "terminal"
    }

    fn toolset(&self) -> &'static str {
        "terminal"
    }

    fn schema(&self) -> Value {
        json!({
            "name": "terminal",
            "description": "Run a shell command (/bin/sh -c) in your persistent Linux sandbox. The working \
                directory defaults to /workspace, which persists between turns and sessions. There is no \
                network access unless your operator enabled it. Output over 50,000 characters is cut in \
                the middle.",
            "parameters": {
                "type": "object",
                "properties": {
                    "command": { "type": "string", "description": "The command to run." },
                    "timeout": { "type": "integer", "description": "Seconds before the command is killed (default 180)." },
                    "workdir": { "type": "string", "description": "Working directory (default /workspace)." }
                },
                "required": ["command"]
            }
        })
    }

    fn read_only(&self) -> bool {
        false
    }

    fn call<'a>(&'a self, ctx: &'a ToolCtx, args: Value) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let command = required_str(&args, "command")?;
            if command.trim().is_empty() {
                return Err(ToolError::RespondToModel("command is empty".into()));
            }
            let timeout = match args.get("timeout") {
                None | Some(Value::Null) => self.default_timeout_secs,
                Some(v) => v.as_u64().filter(|t| (1..=MAX_TIMEOUT_SECS).contains(t)).ok_or_else(|| {
                    ToolError::RespondToModel(format!("timeout must be 1..={MAX_TIMEOUT_SECS} seconds"))
                })?,
            };
            let workdir = args.get("workdir").and_then(Value::as_str).map(str::to_owned);
            let request = ExecRequest { command: command.to_owned(), workdir, timeout: Duration::from_secs(timeout) };
            let key = SandboxKey { tenant: ctx.tenant_id, agent: ctx.agent_id };
            let out = self.sandboxes.exec(key, request).await.map_err(|e| ToolError::Unavailable(e.to_string()))?;
            let body = cap_middle(&out.output, MAX_OUTPUT_CHARS);
            let status = match (out.timed_out, out.exit_code) {
                (true, _) => format!("[command timed out after {timeout}s and was killed]"),
                (false, Some(0)) => String::new(),
                (false, Some(code)) => format!("[exit code {code}]"),
                (false, None) => "[command was killed]".into(),
            };
            Ok(match (body.is_empty(), status.is_empty()) {
                (true, true) => "(no output)".into(),
                (true, false) => status,
                (false, true) => body,
                (false, false) => format!("{body}\n{status}"),
            })
        })
    }
}
