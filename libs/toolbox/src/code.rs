//! `execute_code`: the model writes a Python script that calls its tools (terminal, the file
//! tools, web tools when enabled) as functions, so loops, filtering and branching happen in
//! the sandbox and only the script's printout enters the context.
//!
//! The worker sends sandboxd the script and a generated `hermes_tools` module with one stub
//! per available tool; each stub call comes back over the same gRPC stream, runs here through
//! the agent's own tools (so the same rules and caps apply), and its result goes back down.
//! sandboxd enforces the limits (300 s, 50 KB stdout, 10 KB stderr, 50 calls) and scrubs
//! secret-looking variables from the script's environment.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use hermes_core::{ToolCall, ToolCallFunction};
use hermes_sandbox::proto::{CodeFinished, CodeInput, CodeStart, CodeToolResult, code_input, code_output};
use hermes_sandbox::{SandboxKey, Sandboxes, status_error};
use hermes_tools::{Tool, ToolCtx, ToolError, ToolRegistry, required_str};

use crate::sandbox_error;
use crate::terminal::TerminalTool;
use hermes_tools::text::for_model;

/// Tools a script may call (when the agent has them).
pub const CODE_TOOLS: [&str; 7] =
    ["web_search", "web_extract", "read_file", "write_file", "search_files", "patch", "terminal"];
pub const TIMEOUT_SECS: u32 = 300;
pub const MAX_STDOUT_BYTES: u32 = 50_000;
pub const MAX_STDERR_BYTES: u32 = 10_000;
pub const MAX_TOOL_CALLS: u32 = 50;

/// Python signature, docstring and argument dict of each stub.
fn stub(tool: &str) -> Option<(&'static str, &'static str, &'static str)> {
    Some(match tool {
        "web_search" => (
            "query: str, limit: int = 5",
            "Search the web; returns {\"data\": {\"web\": [{\"title\", \"url\", \"description\", \"position\"}]}}.",
            r#"{"query": query, "limit": limit}"#,
        ),
        "web_extract" => (
            "urls: list, char_limit: int = None",
            "Read up to 5 pages as Markdown; returns {\"results\": [{\"url\", \"title\", \"content\", \"error\"}]}.",
            r#"{"urls": urls, "char_limit": char_limit}"#,
        ),
        "read_file" => (
            "path: str, offset: int = 1, limit: int = 500",
            "Read a file; returns LINE|CONTENT text.",
            r#"{"path": path, "offset": offset, "limit": limit}"#,
        ),
        "write_file" => {
            ("path: str, content: str", "Write (overwrite) a file.", r#"{"path": path, "content": content}"#)
        }
        "search_files" => (
            "pattern: str, target: str = \"content\", path: str = \".\", file_glob: str = None, limit: int = 50",
            "Search file contents (target=\"content\") or names (target=\"files\").",
            r#"{"pattern": pattern, "target": target, "path": path, "file_glob": file_glob, "limit": limit}"#,
        ),
        "patch" => (
            "path: str, old_string: str = None, new_string: str = None, replace_all: bool = False, \
             mode: str = \"replace\", patch: str = None",
            "Exact find-and-replace (mode=\"replace\") or a unified diff (mode=\"patch\").",
            r#"{"path": path, "old_string": old_string, "new_string": new_string, "replace_all": replace_all, "mode": mode, "patch": patch}"#,
        ),
        "terminal" => (
            "command: str, timeout: int = None, workdir: str = None",
            "Run a shell command in the foreground; returns {\"output\": str, \"exit_code\": int}.",
            r#"{"command": command, "timeout": timeout, "workdir": workdir}"#,
        ),
        _ => return None,
    })
}

const MODULE_HEADER: &str = r#""""Hermes tools for scripts (generated)."""
import json, os, shlex, socket, threading, time

_sock = None
_lock = threading.Lock()


def _call(tool, args):
    global _sock
    args = {k: v for k, v in args.items() if v is not None}
    line = (json.dumps({"tool": tool, "args": args}) + "\n").encode()
    with _lock:
        if _sock is None:
            _sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            _sock.connect(os.environ["HERMES_RPC_SOCKET"])
        _sock.sendall(line)
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = _sock.recv(65536)
            if not chunk:
                raise RuntimeError("the agent went away")
            buf += chunk
    answer = json.loads(buf)
    if "error" in answer:
        raise RuntimeError(answer["error"])
    result = answer["result"]
    if tool in ("terminal", "web_search", "web_extract"):
        return json.loads(result)
    return result


def json_parse(text):
    """json.loads that tolerates control characters."""
    return json.loads(text, strict=False)


def shell_quote(s):
    """Quote a string for a shell command."""
    return shlex.quote(s)


def retry(fn, max_attempts=3, delay=2):
    """Call fn until it succeeds, with exponential backoff."""
    for attempt in range(max_attempts):
        try:
            return fn()
        except Exception:
            if attempt == max_attempts - 1:
                raise
            time.sleep(delay * (2 ** attempt))

"#;

/// The `hermes_tools` module for `tools`.
pub fn module_source(tools: &[&str]) -> String {
    let mut out = MODULE_HEADER.to_owned();
    for tool in tools {
        if let Some((signature, doc, args)) = stub(tool) {
            out.push_str(&format!(
                "\ndef {tool}({signature}):\n    \"\"\"{doc}\"\"\"\n    return _call({tool:?}, {args})\n\n"
            ));
        }
    }
    out
}

/// Runs scripts whose tool calls use `tools` (the agent's, for this turn).
pub struct ExecuteCode {
    sandboxes: Arc<dyn Sandboxes>,
    tools: ToolRegistry,
    terminal: Option<Arc<TerminalTool>>,
    timeout_secs: u32,
    max_tool_calls: u32,
}

impl ExecuteCode {
    /// `tools`: the agent's tools this turn; `terminal`: set when it has `terminal`.
    pub fn new(sandboxes: Arc<dyn Sandboxes>, tools: &ToolRegistry, terminal: Option<Arc<TerminalTool>>) -> Self {
        let tools = tools.only(&CODE_TOOLS);
        let terminal = terminal.filter(|_| tools.names().contains(&"terminal"));
        Self { sandboxes, tools, terminal, timeout_secs: TIMEOUT_SECS, max_tool_calls: MAX_TOOL_CALLS }
    }

    /// Other limits than upstream's (300 s, 50 calls).
    pub fn with_limits(mut self, timeout_secs: u32, max_tool_calls: u32) -> Self {
        self.timeout_secs = timeout_secs;
        self.max_tool_calls = max_tool_calls;
        self
    }

    /// Runs one call a script made; the text goes back to the script.
    async fn call_tool(&self, ctx: &ToolCtx, n: u64, tool: &str, args_json: String) -> (String, bool) {
        // A script cannot wait for the user: what needs them is refused inside it.
        let interaction = hermes_tools::Interactive { enabled: false, resolution: None, ..ctx.interaction.clone() };
        let ctx = ToolCtx { call_id: format!("{}.{n}", ctx.call_id), interaction, ..ctx.clone() };
        if tool == "terminal"
            && let Some(terminal) = &self.terminal
        {
            let args: Value = serde_json::from_str(&args_json).unwrap_or(Value::Null);
            let Some(command) = args.get("command").and_then(Value::as_str) else {
                return ("terminal needs a command".into(), false);
            };
            let workdir = args.get("workdir").and_then(Value::as_str).map(str::to_owned);
            return match terminal.foreground(&ctx, command, workdir, args.get("timeout")).await {
                Ok(run) => {
                    let code = if run.timed_out { json!(null) } else { json!(run.exit_code) };
                    (json!({"output": run.output, "exit_code": code, "timed_out": run.timed_out}).to_string(), true)
                }
                Err(e) => {
                    (json!({"output": e.to_string(), "exit_code": null, "error": e.to_string()}).to_string(), false)
                }
            };
        }
        let call = ToolCall {
            id: ctx.call_id.clone(),
            kind: "function".into(),
            function: ToolCallFunction { name: tool.to_owned(), arguments: args_json },
        };
        let outcome = self.tools.dispatch(&ctx, &call).await;
        (outcome.text, outcome.ok)
    }
}

/// The model's view of a finished script (upstream's JSON shape).
fn report(done: &CodeFinished, timeout_secs: u32) -> String {
    // Cut here too (at twice what an honest daemon sends, its own marker included): the daemon
    // is not trusted to have kept the limits it was given.
    let stdout = for_model(&done.stdout, 2 * MAX_STDOUT_BYTES as usize);
    let stderr = for_model(&done.stderr, 2 * MAX_STDERR_BYTES as usize);
    let seconds = (done.duration_ms as f64 / 10.0).round() / 100.0;
    let mut result = json!({
        "status": "success",
        "output": stdout,
        "tool_calls_made": done.tool_calls,
        "duration_seconds": seconds,
    });
    if done.timed_out {
        let msg = format!("Script timed out after {timeout_secs}s and was killed.");
        result["status"] = json!("timeout");
        result["output"] = json!(if stdout.is_empty() { msg.clone() } else { format!("{stdout}\n\n{msg}") });
        result["error"] = json!(msg);
    } else if done.exit_code != Some(0) {
        result["status"] = json!("error");
        let code = done.exit_code.map_or("a signal".to_owned(), |c| format!("code {c}"));
        result["error"] = json!(if stderr.is_empty() { format!("Script exited with {code}") } else { stderr.clone() });
        if !stderr.is_empty() {
            result["output"] = json!(format!("{stdout}\n--- stderr ---\n{stderr}"));
        }
    }
    result.to_string()
}

impl Tool for ExecuteCode {
    fn name(&self) -> hermes_tools::ToolName {
        hermes_tools::ToolName::Fixed("execute_code")
    }

    fn toolset(&self) -> hermes_core::ToolsetName {
        hermes_core::ToolsetName::CodeExecution
    }

    fn schema(&self) -> Value {
        let names = self.tools.names();
        let listed: Vec<String> = names
            .iter()
            .filter_map(|t| stub(t).map(|(signature, doc, _)| format!("  {t}({signature}) - {doc}")))
            .collect();
        let imports = if names.is_empty() { "...".to_owned() } else { names.join(", ") };
        json!({
            "name": "execute_code",
            "description": format!(
                "Run a Python script that can call your tools as functions. Use it when you need 3+ tool calls \
                 with processing between them, to filter large outputs before they enter your context, to \
                 branch, or to loop. Use normal tool calls for a single call or when you must read the whole \
                 result.\n\nAvailable via `from hermes_tools import ...`:\n{}\n\nAlso: json_parse(text), \
                 shell_quote(s), retry(fn, max_attempts=3, delay=2).\n\nLimits: {TIMEOUT_SECS} s, \
                 {MAX_STDOUT_BYTES} bytes of stdout, {MAX_TOOL_CALLS} tool calls per script; terminal() is \
                 foreground only. The script runs in /workspace; print your final result to stdout.",
                listed.join("\n")
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "code": {
                        "type": "string",
                        "description": format!("Python code. Import tools with `from hermes_tools import {imports}`.")
                    }
                },
                "required": ["code"]
            }
        })
    }

    fn read_only(&self) -> bool {
        false
    }
    fn sandboxed(&self) -> bool {
        true
    }

    fn refunds_iteration(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, ctx: &'a ToolCtx, args: Value) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let script = required_str(&args, "code")?;
            if script.trim().is_empty() {
                return Err(ToolError::RespondToModel("code is empty".into()));
            }
            let key = SandboxKey { tenant: ctx.tenant_id, agent: ctx.agent_id, workspace: ctx.workspace };
            let client = self.sandboxes.open(key).await.map_err(sandbox_error)?;
            let (input, rx) = mpsc::channel(8);
            let start = CodeStart {
                script: script.to_owned(),
                module: module_source(&self.tools.names()),
                timeout_secs: self.timeout_secs,
                max_stdout_bytes: MAX_STDOUT_BYTES,
                max_stderr_bytes: MAX_STDERR_BYTES,
                max_tool_calls: self.max_tool_calls,
                workdir: ctx.workdir.clone().unwrap_or_default(),
            };
            let lost = |_| ToolError::Unavailable("the sandbox went away during the script".into());
            input.send(CodeInput { input: Some(code_input::Input::Start(start)) }).await.map_err(lost)?;
            let mut outputs = client
                .grpc()
                .run_code(ReceiverStream::new(rx))
                .await
                .map_err(|s| sandbox_error(status_error(s)))?
                .into_inner();
            // The whole script, not each message: a daemon that keeps talking cannot keep the turn.
            let deadline = tokio::time::Instant::now() + Duration::from_secs(u64::from(self.timeout_secs) + 60);
            let mut calls = 0u32;
            loop {
                let message = tokio::time::timeout_at(deadline, outputs.message())
                    .await
                    .map_err(|_| ToolError::Unavailable("the sandbox did not finish the script in time".into()))?
                    .map_err(|s| sandbox_error(status_error(s)))?;
                match message.and_then(|m| m.output) {
                    Some(code_output::Output::Call(_)) if calls >= self.max_tool_calls => {
                        return Err(ToolError::Unavailable(format!(
                            "the sandbox asked for more than {} tool calls",
                            self.max_tool_calls
                        )));
                    }
                    Some(code_output::Output::Call(call)) => {
                        calls += 1;
                        let (output, ok) = self.call_tool(ctx, call.id, &call.tool, call.args_json).await;
                        let result = CodeToolResult { id: call.id, output, ok };
                        input.send(CodeInput { input: Some(code_input::Input::Result(result)) }).await.map_err(lost)?;
                    }
                    Some(code_output::Output::Finished(done)) => return Ok(report(&done, self.timeout_secs)),
                    None => return Err(ToolError::Unavailable("the sandbox ended the script without a result".into())),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_module_has_a_stub_for_each_available_tool_only() {
        let source = module_source(&["read_file", "terminal", "memory"]);
        assert!(source.contains("def read_file(path: str, offset: int = 1, limit: int = 500):"));
        assert!(source.contains("def terminal(command: str, timeout: int = None, workdir: str = None):"));
        assert!(!source.contains("def memory"), "not a script tool");
        assert!(!source.contains("def write_file"), "not enabled");
    }

    #[test]
    fn a_failed_script_reports_its_stderr_and_a_timeout_says_so() {
        let done = |exit_code, timed_out, stderr: &str| CodeFinished {
            exit_code,
            timed_out,
            stdout: "partial\n".into(),
            stderr: stderr.into(),
            tool_calls: 2,
            duration_ms: 1234,
            ..Default::default()
        };
        let ok: Value = serde_json::from_str(&report(&done(Some(0), false, ""), 300)).unwrap();
        assert_eq!(ok["status"], "success");
        assert_eq!(ok["output"], "partial\n");
        assert_eq!(ok["tool_calls_made"], 2);
        assert_eq!(ok["duration_seconds"], 1.23);
        let failed: Value = serde_json::from_str(&report(&done(Some(1), false, "Traceback: boom"), 300)).unwrap();
        assert_eq!(failed["status"], "error");
        assert_eq!(failed["error"], "Traceback: boom");
        assert!(failed["output"].as_str().unwrap().contains("--- stderr ---\nTraceback: boom"));
        let slow: Value = serde_json::from_str(&report(&done(None, true, ""), 300)).unwrap();
        assert_eq!(slow["status"], "timeout");
        assert!(slow["output"].as_str().unwrap().ends_with("Script timed out after 300s and was killed."));
    }
}
