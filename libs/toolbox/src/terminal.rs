//! `terminal`: run a shell command in the agent's sandbox, in the foreground (to its end or
//! its timeout, the whole process group killed then) or in the background (managed with
//! `process`).

use hermes_core::ToolsetName;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use hermes_sandbox::proto::StartProcessRequest;
use hermes_sandbox::{ExecRequest, SandboxKey, Sandboxes, status_error};
use hermes_tools::{SimpleTool, ToolCtx, ToolError, ToolSpec, object_schema, required_str};

use crate::sandbox_error;
use hermes_tools::text::for_model;

/// Output beyond this many characters is cut in the middle (40 % head, 60 % tail).
pub const MAX_OUTPUT_CHARS: usize = 50_000;
/// Longest foreground timeout a call may ask for.
pub const MAX_TIMEOUT_SECS: u64 = 600;

/// Runs commands in the tenant-agent's sandbox.
pub struct TerminalTool {
    sandboxes: Arc<dyn Sandboxes>,
    default_timeout_secs: u64,
    /// Checkpoints the workspace before the turn's first command that changes files.
    checkpoints: Option<crate::FileTools>,
    activity: Option<Arc<dyn crate::BackgroundActivity>>,
}

/// Commands that change files (upstream's list): deletes, copies and moves, in-place edits,
/// truncation, raw copies, output redirection, and git's resets, cleans and checkouts.
static MUTATING: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"(?:^|[;&|(\s])(?:rm|rmdir|cp|mv|install|truncate|dd|shred|unlink)\s|\bsed\s+(?:\S+\s+)*-i|>\s*[^&\s>]|\bgit\s+(?:reset|clean|checkout|restore)\b",
    )
    .ok()
});

/// Whether `command` looks like it changes files.
pub(crate) fn changes_files(command: &str) -> bool {
    MUTATING.as_ref().is_some_and(|re| re.is_match(command))
}

impl TerminalTool {
    pub fn new(sandboxes: Arc<dyn Sandboxes>, default_timeout_secs: u64) -> Self {
        Self { sandboxes, default_timeout_secs, checkpoints: None, activity: None }
    }

    /// Reports background processes it starts.
    pub fn with_activity(mut self, activity: Option<Arc<dyn crate::BackgroundActivity>>) -> Self {
        self.activity = activity;
        self
    }

    /// Takes the turn's checkpoint (shared with the file tools) before a command that changes
    /// files, so `/rollback` can undo it.
    pub fn with_checkpoints(mut self, files: crate::FileTools) -> Self {
        self.checkpoints = Some(files);
        self
    }

    async fn checkpoint_if_changing(&self, ctx: &ToolCtx, command: &str) -> Result<(), ToolError> {
        if let Some(files) = &self.checkpoints
            && changes_files(command)
        {
            files.checkpoint_before(ctx, "terminal").await?;
        }
        Ok(())
    }

    async fn background(&self, ctx: &ToolCtx, command: &str, workdir: Option<String>) -> Result<String, ToolError> {
        crate::approval::check(ctx, command).await?;
        self.checkpoint_if_changing(ctx, command).await?;
        let key = SandboxKey { tenant: ctx.tenant_id, agent: ctx.agent_id, workspace: ctx.workspace };
        let client = self.sandboxes.open(key).await.map_err(sandbox_error)?;
        let request = StartProcessRequest {
            command: command.to_owned(),
            workdir: workdir.unwrap_or_default(),
            owner: ctx.session_id.to_string(),
            env: Default::default(),
        };
        let started =
            client.grpc().start_process(request).await.map_err(|s| sandbox_error(status_error(s)))?.into_inner();
        if let Some(activity) = &self.activity {
            activity.started(ctx).await;
        }
        Ok(format!(
            "Started in the background as {id}. Check it with process(action=\"poll\", session_id=\"{id}\"); \
             wait, log, write and kill work the same way.",
            id = started.id
        ))
    }
}

/// A foreground command's result, its output already shortened and redacted for the model.
pub struct Foreground {
    pub output: String,
    pub exit_code: Option<i64>,
    pub timed_out: bool,
    pub timeout_secs: u64,
}

impl TerminalTool {
    /// Runs `command` to its end or its timeout (`timeout`: the model's argument, if any).
    pub async fn foreground(
        &self,
        ctx: &ToolCtx,
        command: &str,
        workdir: Option<String>,
        timeout: Option<&Value>,
    ) -> Result<Foreground, ToolError> {
        if command.trim().is_empty() {
            return Err(ToolError::RespondToModel("command is empty".into()));
        }
        crate::approval::check(ctx, command).await?;
        self.checkpoint_if_changing(ctx, command).await?;
        let timeout_secs = match timeout {
            None | Some(Value::Null) => self.default_timeout_secs,
            Some(v) => v.as_u64().filter(|t| (1..=MAX_TIMEOUT_SECS).contains(t)).ok_or_else(|| {
                ToolError::RespondToModel(format!(
                    "timeout must be 1..={MAX_TIMEOUT_SECS} seconds; use background for longer jobs"
                ))
            })?,
        };
        let request = ExecRequest {
            command: command.to_owned(),
            workdir,
            timeout: Duration::from_secs(timeout_secs),
            env: Default::default(),
        };
        let key = SandboxKey { tenant: ctx.tenant_id, agent: ctx.agent_id, workspace: ctx.workspace };
        let out = hermes_sandbox::exec(&*self.sandboxes, key, request, &mut |_| {}).await.map_err(sandbox_error)?;
        Ok(Foreground {
            output: for_model(&out.output, MAX_OUTPUT_CHARS),
            exit_code: out.exit_code,
            timed_out: out.timed_out,
            timeout_secs,
        })
    }
}

impl SimpleTool for TerminalTool {
    const SPEC: ToolSpec = ToolSpec::new(
        "terminal",
        ToolsetName::Terminal,
        "Run a shell command (/bin/sh -c) in your persistent Linux sandbox. /workspace persists \
                between turns and sessions. No network unless your operator enabled it. Output over 50,000 \
                characters is cut in the middle. Use background for servers and long jobs, then the process tool.",
    )
    .sandboxed();

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "command": { "type": "string" },
                "background": { "type": "boolean", "description": "Run detached; returns a process id." },
                "timeout": { "type": "integer", "description": "Seconds before it is killed (default 180, max 600)." },
                "workdir": { "type": "string", "description": "Default /workspace." }
            }),
            &["command"],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let command = required_str(&args, "command")?;
        if command.trim().is_empty() {
            return Err(ToolError::RespondToModel("command is empty".into()));
        }
        let workdir = args.get("workdir").and_then(Value::as_str).map(str::to_owned);
        if args.get("background").and_then(Value::as_bool).unwrap_or(false) {
            return self.background(ctx, command, workdir).await;
        }
        let run = self.foreground(ctx, command, workdir, args.get("timeout")).await?;
        let body = run.output;
        let status = match (run.timed_out, run.exit_code) {
            (true, _) => {
                format!("[command timed out after {}s and was killed with its child processes]", run.timeout_secs)
            }
            (false, Some(0)) => String::new(),
            (false, Some(code)) => format!("[exit code {code}]"),
            (false, None) => "[command was killed by a signal]".into(),
        };
        Ok(match (body.trim().is_empty(), status.is_empty()) {
            (true, true) => "(no output)".into(),
            (true, false) => status,
            (false, true) => body,
            (false, false) => format!("{body}\n{status}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::changes_files;

    #[test]
    fn commands_that_change_files_are_recognised() {
        for cmd in
            ["rm -f a", "cd x && mv a b", "echo hi > notes.md", "sed -i s/a/b/ f", "git checkout -- .", "cp -r a b"]
        {
            assert!(changes_files(cmd), "{cmd}");
        }
        for cmd in ["ls -la", "cat a | grep b", "make 2>&1", "git status", "echo rmdir", "python3 -m pytest"] {
            assert!(!changes_files(cmd), "{cmd}");
        }
    }
}
