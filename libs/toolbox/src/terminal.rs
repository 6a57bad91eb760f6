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

use crate::{ProcessWatch, sandbox_error};
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

    async fn background(
        &self,
        ctx: &ToolCtx,
        command: &str,
        workdir: Option<String>,
        (wake, pty): (Wake, Pty),
    ) -> Result<String, ToolError> {
        crate::approval::check(ctx, command).await?;
        self.checkpoint_if_changing(ctx, command).await?;
        let key = SandboxKey { tenant: ctx.tenant_id, agent: ctx.agent_id, workspace: ctx.workspace };
        let client = self.sandboxes.open(key).await.map_err(sandbox_error)?;
        let request = StartProcessRequest {
            command: command.to_owned(),
            workdir: workdir.map_or_else(|| ctx.workdir.clone(), |w| Some(ctx.in_workdir(&w))).unwrap_or_default(),
            owner: ctx.session_id.to_string(),
            env: Default::default(),
            pty: pty == Pty::Terminal,
        };
        let started =
            client.grpc().start_process(request).await.map_err(|s| sandbox_error(status_error(s)))?.into_inner();
        if let Some(activity) = &self.activity {
            activity.started(ctx).await;
        }
        let mut told = format!(
            "Started in the background as {id}. Check it with process(action=\"poll\", session_id=\"{id}\"); \
             wait, log, write and kill work the same way.",
            id = started.id
        );
        match pty {
            // A sandbox image older than `pty` starts it on a pipe: say so rather than promise.
            Pty::Terminal if !started.pty => {
                told.push_str(" It runs without a terminal: this sandbox cannot give one.")
            }
            Pty::Terminal => told.push_str(" It runs on a terminal: answer it with process(action=\"submit\")."),
            Pty::RefusedForPipedInput => told.push_str(PIPED_INPUT_NOTE),
            Pty::Pipe => {}
        }
        if wake.asked() {
            let watch = ProcessWatch {
                process_id: started.id.clone(),
                command: command.to_owned(),
                patterns: wake.patterns.clone(),
                notify_on_complete: wake.on_complete,
            };
            let watched = match &self.activity {
                Some(activity) => activity.watch(ctx, watch).await,
                None => Err("nothing here watches processes".to_owned()),
            };
            told.push_str(&match watched {
                Ok(()) => format!(" {}", wake.promise()),
                Err(why) => format!(" No notice will come ({why}): poll it."),
            });
        }
        Ok(told)
    }
}

/// Whether a background process runs on a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pty {
    Pipe,
    Terminal,
    /// Asked for, but the command reads a secret from piped input until its end, which a
    /// terminal never gives (upstream's rule: `gh auth login --with-token`).
    RefusedForPipedInput,
}

const PIPED_INPUT_NOTE: &str = " It runs without a terminal: it reads its input to the end, which only a pipe \
     gives. Write its input, then process(action=\"close\").";

impl Pty {
    fn of(args: &Value, command: &str) -> Self {
        if !args.get("pty").and_then(Value::as_bool).unwrap_or(false) {
            return Self::Pipe;
        }
        let words = command.split_whitespace().map(str::to_lowercase).collect::<Vec<_>>();
        let reads_to_end = words.starts_with(&["gh".into(), "auth".into(), "login".into()])
            && words.iter().any(|w| w == "--with-token");
        if reads_to_end { Self::RefusedForPipedInput } else { Self::Terminal }
    }
}

/// What should wake the agent about a background process.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Wake {
    pub on_complete: bool,
    pub patterns: Vec<String>,
}

/// Patterns one process may watch, and the longest.
const MAX_PATTERNS: usize = 5;
const MAX_PATTERN_CHARS: usize = 200;

impl Wake {
    /// `notify_on_complete` and `watch_patterns` as the model gave them, checked.
    pub fn of(args: &Value) -> Result<Self, ToolError> {
        let on_complete = args.get("notify_on_complete").and_then(Value::as_bool).unwrap_or(false);
        let patterns: Vec<String> = match args.get("watch_patterns") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            Some(_) => return Err(ToolError::RespondToModel("watch_patterns is a list of texts".into())),
        };
        let bad = |p: &String| p.trim().is_empty() || p.chars().count() > MAX_PATTERN_CHARS;
        if patterns.len() > MAX_PATTERNS || patterns.iter().any(bad) {
            return Err(ToolError::RespondToModel(format!(
                "watch_patterns takes at most {MAX_PATTERNS} texts of 1 to {MAX_PATTERN_CHARS} characters"
            )));
        }
        Ok(Self { on_complete, patterns })
    }

    fn asked(&self) -> bool {
        self.on_complete || !self.patterns.is_empty()
    }

    /// What the model is told will happen.
    fn promise(&self) -> String {
        let shows = self.patterns.iter().map(|p| format!("“{p}”")).collect::<Vec<_>>().join(", ");
        match (self.on_complete, self.patterns.is_empty()) {
            (true, true) => "You will get a message when it ends.".into(),
            (true, false) => format!("You will get a message when its output shows {shows}, and when it ends."),
            (false, _) => format!("You will get a message when its output shows {shows}."),
        }
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
            // A cron job's `workdir`, unless the call names one.
            workdir: workdir.map_or_else(|| ctx.workdir.clone(), |w| Some(ctx.in_workdir(&w))),
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
                "notify_on_complete": {
                    "type": "boolean",
                    "description": "With background: you get a message when it ends (no need to poll)."
                },
                "watch_patterns": {
                    "type": "array",
                    "items": { "type": "string" },
                    "maxItems": MAX_PATTERNS,
                    "description": "With background: you get a message when a line of its output holds one of \
                                    these texts (at most one message per 15 s; after 3, only its end is told)."
                },
                "pty": {
                    "type": "boolean",
                    "description": "With background: run it on a terminal, for interactive programs (REPLs, CLIs that \
                                    prompt, editors). Answer with process(action=\"submit\")."
                },
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
        let wake = Wake::of(&args)?;
        let pty = Pty::of(&args, command);
        if args.get("background").and_then(Value::as_bool).unwrap_or(false) {
            return self.background(ctx, command, workdir, (wake, pty)).await;
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
        // A foreground command has no input to answer on; a terminal would only hang it.
        let status = match pty {
            Pty::Pipe => status,
            _ => format!("{status}\n[pty applies to background processes; this ran without a terminal]")
                .trim()
                .to_owned(),
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
    use super::{Pty, Wake, changes_files};
    use serde_json::json;

    #[test]
    fn a_terminal_is_given_when_asked_except_to_a_command_that_reads_its_input_to_the_end() {
        let pty = json!({"pty": true});
        assert_eq!(Pty::of(&pty, "python3 -i"), Pty::Terminal);
        assert_eq!(Pty::of(&json!({}), "python3 -i"), Pty::Pipe);
        assert_eq!(Pty::of(&pty, "GH  auth login --hostname x --with-token"), Pty::RefusedForPipedInput);
        assert_eq!(Pty::of(&pty, "gh auth login"), Pty::Terminal, "the interactive login wants one");
    }

    #[test]
    fn what_wakes_the_agent_is_checked_and_promised_plainly() {
        let wake = Wake::of(&json!({"notify_on_complete": true, "watch_patterns": ["READY", "ERROR"]})).unwrap();
        assert_eq!(wake.patterns, ["READY", "ERROR"]);
        assert_eq!(wake.promise(), "You will get a message when its output shows “READY”, “ERROR”, and when it ends.");
        assert!(!Wake::of(&json!({})).unwrap().asked());
        for bad in [
            json!({"watch_patterns": "READY"}),
            json!({"watch_patterns": [""]}),
            json!({"watch_patterns": ["a", "b", "c", "d", "e", "f"]}),
        ] {
            assert!(Wake::of(&bad).is_err(), "{bad}");
        }
    }

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
