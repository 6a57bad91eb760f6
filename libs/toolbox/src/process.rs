//! `process`: the background processes of this session (started by `terminal` with
//! `background`), on whichever worker runs the turn: their state lives in the sandbox.

use hermes_core::ToolsetName;
use std::sync::Arc;

use serde_json::{Value, json};

use hermes_sandbox::proto::{
    ListProcessesRequest, PollProcessRequest, ProcessRef, ProcessStatus, WaitProcessRequest, WriteProcessRequest,
};
use hermes_sandbox::{SandboxKey, Sandboxes, status_error};
use hermes_tools::{Choice, SimpleTool, ToolCtx, ToolError, ToolSpec, choices, object_schema, required_str};

use crate::sandbox_error;
use crate::terminal::MAX_OUTPUT_CHARS;
use hermes_tools::text::for_model;

choices! {
    enum ProcessAction {
        List = "list",
        Poll = "poll",
        Log = "log",
        Wait = "wait",
        Kill = "kill",
        Write = "write",
        Submit = "submit",
        Close = "close",
    }
}

/// Lines `log` shows when the call does not say.
const DEFAULT_LOG_LINES: usize = 200;

pub struct ProcessTool {
    sandboxes: Arc<dyn Sandboxes>,
    activity: Option<Arc<dyn crate::BackgroundActivity>>,
}

impl ProcessTool {
    pub fn new(sandboxes: Arc<dyn Sandboxes>) -> Self {
        Self { sandboxes, activity: None }
    }

    /// Reports when the session's processes have all finished.
    pub fn with_activity(mut self, activity: Option<Arc<dyn crate::BackgroundActivity>>) -> Self {
        self.activity = activity;
        self
    }
}

fn headline(p: &ProcessStatus) -> String {
    let state = match (p.running, p.exit_code) {
        (true, _) => "running".to_owned(),
        (false, Some(code)) => format!("exited with code {code}"),
        (false, None) => format!("killed by signal {}", p.signal),
    };
    let on = if p.pty { " on a terminal" } else { "" };
    format!("{} [{state}{on}] {} ({} bytes of output)", p.id, p.command, p.output_bytes)
}

fn with_output(p: &ProcessStatus, output: &str) -> String {
    let mut out = headline(p);
    if p.output_dropped {
        out.push_str("\n[older output is no longer kept]");
    }
    // A terminal ends its lines with \r\n.
    let text = for_model(&if p.pty { output.replace("\r\n", "\n") } else { output.to_owned() }, MAX_OUTPUT_CHARS);
    if text.trim().is_empty() {
        out.push_str("\n(no new output)");
    } else {
        out.push('\n');
        out.push_str(&text);
    }
    out
}

impl SimpleTool for ProcessTool {
    const SPEC: ToolSpec = ToolSpec::new(
        "process",
        ToolsetName::Terminal,
        "Manage background processes started with terminal(background=true): list; poll (new \
                output since the last poll); log (last lines); wait (until it ends or timeout); kill (with its \
                children); write / submit (send input; submit then presses Enter); close (end its input: on a terminal, \
                the ^D key).",
    )
    .sandboxed();

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "action": ProcessAction::schema(),
                "session_id": { "type": "string", "description": "The process id from terminal." },
                "data": { "type": "string", "description": "Input for write/submit." },
                "timeout": { "type": "integer", "description": "Seconds to wait (default 180, max 600)." },
                "limit": { "type": "integer", "description": "Lines for log (default 200)." }
            }),
            &["action"],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let answer = self.act(ctx, args).await;
        if let Some(activity) = &self.activity
            && !self.any_running(ctx).await
        {
            activity.all_finished(ctx).await;
        }
        answer
    }
}

impl ProcessTool {
    /// Whether a process of the session still runs (when unsure, yes).
    async fn any_running(&self, ctx: &ToolCtx) -> bool {
        let key = SandboxKey { tenant: ctx.tenant_id, agent: ctx.agent_id, workspace: ctx.workspace };
        let Ok(Some(client)) = self.sandboxes.running(key).await else { return false };
        let owner = ctx.session_id.to_string();
        match client.grpc().list_processes(ListProcessesRequest { owner }).await {
            Ok(list) => list.into_inner().processes.iter().any(|p| p.running),
            Err(_) => true,
        }
    }

    async fn act(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        {
            let name = required_str(&args, "action")?;
            let action = ProcessAction::from_name(name);
            let owner = ctx.session_id.to_string();
            let key = SandboxKey { tenant: ctx.tenant_id, agent: ctx.agent_id, workspace: ctx.workspace };
            let mut grpc = self.sandboxes.open(key).await.map_err(sandbox_error)?.grpc();
            let fail = |s| sandbox_error(status_error(s));
            if action == Some(ProcessAction::List) {
                let list = grpc.list_processes(ListProcessesRequest { owner }).await.map_err(fail)?.into_inner();
                if list.processes.is_empty() {
                    return Ok("No background processes in this session.".into());
                }
                return Ok(list.processes.iter().map(headline).collect::<Vec<_>>().join("\n"));
            }
            let id = args
                .get("session_id")
                .or_else(|| args.get("process_id"))
                .and_then(Value::as_str)
                .ok_or_else(|| ToolError::RespondToModel(format!("{name} needs session_id (the process id)")))?
                .to_owned();
            let status = match action {
                Some(ProcessAction::Poll) => {
                    let r = PollProcessRequest { id, owner, offset: 0, limit: 0, since_last_poll: true };
                    let p = grpc.poll_process(r).await.map_err(fail)?.into_inner();
                    return Ok(with_output(&p, &String::from_utf8_lossy(&p.output)));
                }
                Some(ProcessAction::Log) => {
                    let lines = args.get("limit").and_then(Value::as_u64).map_or(DEFAULT_LOG_LINES, |l| l as usize);
                    let r = PollProcessRequest { id, owner, offset: 0, limit: 0, since_last_poll: false };
                    let p = grpc.poll_process(r).await.map_err(fail)?.into_inner();
                    let text = String::from_utf8_lossy(&p.output);
                    let all: Vec<&str> = text.lines().collect();
                    let tail = all[all.len().saturating_sub(lines.max(1))..].join("\n");
                    return Ok(with_output(&p, &tail));
                }
                Some(ProcessAction::Wait) => {
                    let secs = args.get("timeout").and_then(Value::as_u64).unwrap_or(180).clamp(1, 600);
                    let r = WaitProcessRequest { id, owner, timeout_secs: secs as u32 };
                    let p = grpc.wait_process(r).await.map_err(fail)?.into_inner();
                    let mut out = with_output(&p, &String::from_utf8_lossy(&p.output));
                    if p.running {
                        out.push_str(&format!("\n[still running after {secs}s]"));
                    }
                    return Ok(out);
                }
                Some(ProcessAction::Kill) => {
                    grpc.kill_process(ProcessRef { id, owner }).await.map_err(fail)?.into_inner()
                }
                Some(write @ (ProcessAction::Write | ProcessAction::Submit | ProcessAction::Close)) => {
                    let data = args.get("data").and_then(Value::as_str).unwrap_or_default();
                    let r = WriteProcessRequest {
                        id,
                        owner,
                        data: data.as_bytes().to_vec(),
                        close_stdin: write == ProcessAction::Close,
                        submit: write == ProcessAction::Submit,
                    };
                    grpc.write_process(r).await.map_err(fail)?.into_inner()
                }
                Some(ProcessAction::List) | None => {
                    return Err(ToolError::RespondToModel(format!(
                        "unknown action {name:?}; use list, poll, log, wait, kill, write, submit or close"
                    )));
                }
            };
            Ok(headline(&status))
        }
    }
}
