//! `RunCode`: a Python script that calls the agent's tools. The script imports the stub
//! module the worker sent (`hermes_tools`), whose functions write one JSON line per call to a
//! unix socket in the script's private directory; each call goes up the gRPC stream to the
//! worker, which runs the tool and sends the result back down. The daemon enforces the
//! limits: timeout (then the process group is killed), output caps, and the number of calls.

use std::collections::HashMap;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hermes_sandbox_proto::v1::{CodeFinished, CodeInput, CodeOutput, CodeStart, CodeToolCall, code_input, code_output};
use nix::sys::signal::Signal;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::process::Command;
use tokio::sync::{mpsc, oneshot};
use tonic::{Status, Streaming};

use crate::Activity;
use crate::exec::{kill_group, spawn_error};

pub const DEFAULT_TIMEOUT_SECS: u32 = 300;
pub const DEFAULT_MAX_STDOUT: u32 = 50_000;
pub const DEFAULT_MAX_STDERR: u32 = 10_000;
pub const DEFAULT_MAX_TOOL_CALLS: u32 = 50;
/// Environment variables whose names contain one of these never reach a script.
const SECRET_MARKERS: [&str; 7] = ["KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "PASSWD", "AUTH"];
/// Longest request line a script may send (a write_file of a large file fits).
const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;

type Reply = oneshot::Sender<Value>;

/// Whether a variable's name looks like it holds a secret.
fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_MARKERS.iter().any(|m| upper.contains(m))
}

/// What a bound secret's variable holds in a sandbox (`hermes_secret_egress::PLACEHOLDER_PREFIX`):
/// a placeholder the egress proxy swaps for the value on the secret's hosts, safe to pass on.
const PLACEHOLDER_PREFIX: &str = "hermes_placeholder_";

/// The environment a script gets: the sandbox's, without anything that looks like a secret,
/// except secrets' placeholders (`GITHUB_TOKEN` bound by an admin), which are meant for it.
pub fn scrubbed_env() -> Vec<(String, String)> {
    std::env::vars().filter(|(name, value)| !is_secret_name(name) || value.starts_with(PLACEHOLDER_PREFIX)).collect()
}

/// Keeps the first 40 % and the last 60 % of a stream once it passes `max` bytes.
struct HeadTail {
    max: usize,
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    total: u64,
}

impl HeadTail {
    fn new(max: usize) -> Self {
        Self { max, head: Vec::new(), tail: Default::default(), total: 0 }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let head_room = (self.max * 2 / 5).saturating_sub(self.head.len());
        let (to_head, rest) = bytes.split_at(bytes.len().min(head_room));
        self.head.extend_from_slice(to_head);
        let tail_max = self.max - self.max * 2 / 5;
        self.tail.extend(rest);
        while self.tail.len() > tail_max {
            self.tail.pop_front();
        }
    }

    fn finish(self) -> String {
        let kept = self.head.len() + self.tail.len();
        let omitted = self.total.saturating_sub(kept as u64);
        let head = String::from_utf8_lossy(&self.head).into_owned();
        let tail: Vec<u8> = self.tail.into_iter().collect();
        let tail = String::from_utf8_lossy(&tail);
        if omitted == 0 {
            format!("{head}{tail}")
        } else {
            format!("{head}\n\n[OUTPUT TRUNCATED - {omitted} bytes omitted]\n\n{tail}")
        }
    }
}

/// Forwards what `reader` produces to `tx` until its end.
async fn forward(mut reader: impl AsyncRead + Unpin, tx: mpsc::Sender<Vec<u8>>) {
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(n) = reader.read(&mut buf).await {
        if n == 0 || tx.send(buf[..n].to_vec()).await.is_err() {
            break;
        }
    }
}

/// Serves one script connection: each line is a call, answered by one line.
async fn serve_connection(stream: UnixStream, calls: mpsc::Sender<(Value, Reply)>) {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read);
    let mut line = String::new();
    loop {
        line.clear();
        match (&mut lines).take(MAX_REQUEST_BYTES as u64).read_line(&mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let answer = match serde_json::from_str::<Value>(&line) {
            Ok(request) => {
                let (tx, rx) = oneshot::channel();
                if calls.send((request, tx)).await.is_err() {
                    return;
                }
                rx.await.unwrap_or_else(|_| json!({"error": "the agent went away"}))
            }
            Err(e) => json!({"error": format!("bad request line: {e}")}),
        };
        let mut out = answer.to_string();
        out.push('\n');
        if write.write_all(out.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// A private directory for one script: its files and its RPC socket.
fn script_dir() -> std::io::Result<PathBuf> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("hermes-code-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::DirBuilder::new().mode(0o700).recursive(true).create(&dir)?;
    Ok(dir)
}

fn millis(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Runs a `RunCode` stream to its end.
pub async fn run(
    mut input: Streaming<CodeInput>,
    workspace: PathBuf,
    activity: Arc<Activity>,
    tx: mpsc::Sender<Result<CodeOutput, Status>>,
) {
    let start = match input.message().await {
        Ok(Some(CodeInput { input: Some(code_input::Input::Start(start)) })) => start,
        _ => {
            let _ = tx.send(Err(Status::invalid_argument("the first message must be CodeStart"))).await;
            return;
        }
    };
    if start.script.trim().is_empty() {
        let _ = tx.send(Err(Status::invalid_argument("the script is empty"))).await;
        return;
    }
    let _running = activity.begin();
    let dir = match script_dir() {
        Ok(d) => d,
        Err(e) => {
            let _ = tx.send(Err(Status::internal(format!("cannot prepare the script: {e}")))).await;
            return;
        }
    };
    let outcome = run_in(&dir, start, &workspace, input, &tx).await;
    let _ = std::fs::remove_dir_all(&dir);
    let message = match outcome {
        Ok(finished) => Ok(CodeOutput { output: Some(code_output::Output::Finished(finished)) }),
        Err(status) => Err(status),
    };
    let _ = tx.send(message).await;
}

async fn run_in(
    dir: &Path,
    start: CodeStart,
    workspace: &Path,
    mut input: Streaming<CodeInput>,
    tx: &mpsc::Sender<Result<CodeOutput, Status>>,
) -> Result<CodeFinished, Status> {
    let started = Instant::now();
    let timeout = Duration::from_secs(u64::from(or(start.timeout_secs, DEFAULT_TIMEOUT_SECS)));
    let (mut child, listener) = launch(dir, &start, workspace)?;
    let pid = child.id();
    let mut stdout = HeadTail::new(or(start.max_stdout_bytes, DEFAULT_MAX_STDOUT) as usize);
    let mut stderr = Capped::new(or(start.max_stderr_bytes, DEFAULT_MAX_STDERR) as usize);
    let (mut out_rx, mut err_rx) = read_pipes(&mut child);
    let (call_tx, mut call_rx) = mpsc::channel::<(Value, Reply)>(16);
    let mut calls = Calls::new(or(start.max_tool_calls, DEFAULT_MAX_TOOL_CALLS));
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let (mut status, mut timed_out): (Option<ExitStatus>, bool) = (None, false);
    let (mut out_open, mut err_open) = (true, true);
    // After the script exits, output still in the pipes is read for a moment (a process it
    // left behind must not hold the answer).
    let mut drain_until: Option<tokio::time::Instant> = None;
    while status.is_none() || out_open || err_open {
        tokio::select! {
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    hermes_telemetry::tasks::spawn("sandboxd_code_tools", serve_connection(stream, call_tx.clone()));
                }
            }
            Some((request, reply)) = call_rx.recv() => {
                if !calls.send_up(&request, reply, tx).await {
                    break;
                }
            }
            message = input.message() => match message {
                Ok(Some(CodeInput { input: Some(code_input::Input::Result(result)) })) => calls.answer(&result),
                Ok(Some(_)) => {}
                // The worker went away (the turn was interrupted): stop the script.
                Ok(None) | Err(_) => break,
            },
            chunk = out_rx.recv(), if out_open => match chunk {
                Some(bytes) => stdout.push(&bytes),
                None => out_open = false,
            },
            chunk = err_rx.recv(), if err_open => match chunk {
                Some(bytes) => stderr.push(&bytes),
                None => err_open = false,
            },
            exited = child.wait(), if status.is_none() => {
                status = exited.ok();
                kill_group(pid, Signal::SIGKILL);
                drain_until = Some(tokio::time::Instant::now() + Duration::from_millis(500));
            }
            () = sleep_until(drain_until) => break,
            () = &mut deadline, if !timed_out => {
                timed_out = true;
                kill_group(pid, Signal::SIGKILL);
            }
        }
    }
    // Whatever the script started dies with it.
    kill_group(pid, Signal::SIGKILL);
    if status.is_none() {
        status = child.wait().await.ok();
    }
    let stdout_bytes = stdout.total;
    Ok(CodeFinished {
        exit_code: if timed_out { None } else { status.and_then(|s| s.code()) },
        timed_out,
        stdout: stdout.finish(),
        stderr_bytes: stderr.total,
        stderr: stderr.finish(),
        stdout_bytes,
        tool_calls: calls.made,
        duration_ms: millis(started),
    })
}

/// The script's standard output and error, read by two tasks into channels.
fn read_pipes(child: &mut tokio::process::Child) -> (mpsc::Receiver<Vec<u8>>, mpsc::Receiver<Vec<u8>>) {
    let (out_tx, out_rx) = mpsc::channel::<Vec<u8>>(16);
    let (err_tx, err_rx) = mpsc::channel::<Vec<u8>>(16);
    if let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) {
        hermes_telemetry::tasks::spawn("sandboxd_code_stdout", forward(out, out_tx));
        hermes_telemetry::tasks::spawn("sandboxd_code_stderr", forward(err, err_tx));
    }
    (out_rx, err_rx)
}

/// Sleeps until `at`, or forever without one.
async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A limit from the request, where 0 means the default.
fn or(value: u32, default: u32) -> u32 {
    if value == 0 { default } else { value }
}

/// Writes the script and the tools module into `dir`, opens the socket the module calls
/// through, and starts the script as the sandbox's user in its own process group.
fn launch(dir: &Path, start: &CodeStart, workspace: &Path) -> Result<(tokio::process::Child, UnixListener), Status> {
    let io = |e: std::io::Error| Status::internal(format!("cannot prepare the script: {e}"));
    std::fs::write(dir.join("script.py"), &start.script).map_err(io)?;
    std::fs::write(dir.join("hermes_tools.py"), &start.module).map_err(io)?;
    let socket = dir.join("rpc.sock");
    let listener = UnixListener::bind(&socket).map_err(io)?;
    let cwd = crate::exec::start_dir(workspace, &start.workdir);
    if !cwd.is_dir() {
        return Err(Status::failed_precondition(format!("the working folder {} does not exist", cwd.display())));
    }
    let mut cmd = Command::new("python3");
    cmd.arg(dir.join("script.py"))
        .current_dir(cwd)
        .env_clear()
        .envs(scrubbed_env())
        .env("PYTHONPATH", dir)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1")
        .env("HERMES_RPC_SOCKET", &socket)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    crate::identity::apply(&mut cmd);
    let child = crate::identity::starting(|| cmd.spawn()).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Status::failed_precondition("python3 is not installed in this sandbox"),
        _ => spawn_error(&e),
    })?;
    Ok((child, listener))
}

/// The script's tool calls: numbered as they go up to the worker, capped at `max`, and
/// answered when the worker's result for that number comes back.
struct Calls {
    max: u32,
    made: u32,
    next_id: u64,
    pending: HashMap<u64, Reply>,
}

impl Calls {
    fn new(max: u32) -> Self {
        Self { max, made: 0, next_id: 0, pending: HashMap::new() }
    }

    /// Sends a call up to the worker (or refuses it past the cap); `false` once the worker
    /// is gone.
    async fn send_up(&mut self, request: &Value, reply: Reply, tx: &mpsc::Sender<Result<CodeOutput, Status>>) -> bool {
        let tool = request.get("tool").and_then(Value::as_str).unwrap_or_default().to_owned();
        if self.made >= self.max {
            let max = self.max;
            let _ = reply.send(json!({"error": format!(
                "tool call limit reached ({max} per script); finish with what you have"
            )}));
            return true;
        }
        self.made += 1;
        self.next_id += 1;
        let args = request.get("args").cloned().unwrap_or(Value::Null).to_string();
        let call = CodeToolCall { id: self.next_id, tool, args_json: args };
        if tx.send(Ok(CodeOutput { output: Some(code_output::Output::Call(call)) })).await.is_err() {
            return false;
        }
        self.pending.insert(self.next_id, reply);
        true
    }

    fn answer(&mut self, result: &hermes_sandbox_proto::v1::CodeToolResult) {
        if let Some(reply) = self.pending.remove(&result.id) {
            let _ = reply.send(json!({"result": result.output, "ok": result.ok}));
        }
    }
}

/// Standard error kept up to `max` bytes, with the total counted.
struct Capped {
    max: usize,
    kept: Vec<u8>,
    total: u64,
}

impl Capped {
    fn new(max: usize) -> Self {
        Self { max, kept: Vec::new(), total: 0 }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.max.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    fn finish(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.kept).into_owned();
        let omitted = self.total - self.kept.len() as u64;
        if omitted > 0 {
            text.push_str(&format!("\n[stderr truncated - {omitted} bytes omitted]"));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_output_keeps_its_head_and_tail() {
        let mut kept = HeadTail::new(100);
        for i in 0..100 {
            kept.push(format!("{i:03}\n").as_bytes());
        }
        let text = kept.finish();
        assert!(text.starts_with("000\n001\n"), "{text}");
        assert!(text.ends_with("098\n099\n"), "{text}");
        assert!(text.contains("[OUTPUT TRUNCATED - 300 bytes omitted]"), "{text}");
        let mut short = HeadTail::new(100);
        short.push(b"hello");
        assert_eq!(short.finish(), "hello");
    }

    #[test]
    fn names_that_look_like_secrets_are_scrubbed() {
        for name in ["OPENAI_API_KEY", "GH_TOKEN", "db_password", "AWS_SECRET", "MY_CREDENTIALS", "AUTH_X", "PASSWD"] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in ["PATH", "HOME", "LANG", "PYTHONPATH", "TERM"] {
            assert!(!is_secret_name(name), "{name}");
        }
    }
}
