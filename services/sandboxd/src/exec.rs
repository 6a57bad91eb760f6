//! Commands: `/bin/sh -c` in a process group of its own, stdout and stderr merged into one
//! pipe (so the output keeps its order), killed as a group at the timeout or when the worker
//! goes away.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hermes_sandbox_proto::v1::{ExecEvent, ExecExit, ExecRequest, exec_event};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};
use tokio::sync::mpsc;
use tonic::Status;

use crate::Activity;

/// Output kept per command when the request sets no cap.
pub const DEFAULT_MAX_OUTPUT: u64 = 2 * 1024 * 1024;
/// After the shell exits, output still in the pipe is read for this long (a background job
/// holding the pipe open must not hold the answer).
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);

/// A started shell and the read end of its output.
pub struct Spawned {
    pub child: Child,
    pub output: pipe::Receiver,
}

/// Starts `command` under `/bin/sh -c` in `workdir`, in a new process group.
pub fn spawn_shell(
    command: &str,
    workdir: &Path,
    env: &HashMap<String, String>,
    stdin: Stdio,
) -> std::io::Result<Spawned> {
    let (reader, writer) = std::io::pipe()?;
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(workdir)
        .envs(env)
        .stdin(stdin)
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .process_group(0)
        .kill_on_drop(false);
    crate::identity::apply(&mut cmd);
    let child = crate::identity::starting(|| cmd.spawn())?;
    // The parent's copies of the write end go with `cmd`, so EOF comes when the command's do.
    drop(cmd);
    let output = pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;
    Ok(Spawned { child, output })
}

/// Where a program asked to start in `workdir` starts: the workspace when it names none.
pub fn start_dir(workspace: &Path, workdir: &str) -> std::path::PathBuf {
    if workdir.is_empty() { workspace.to_path_buf() } else { workspace.join(workdir) }
}

/// Kills the whole process group led by `pid` (the shell and everything it started),
/// repeating while members remain (one may be forking). Returns whether any was there.
pub fn kill_group(pid: Option<u32>, signal: Signal) -> bool {
    let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) else { return false };
    let mut found = false;
    for _ in 0..50 {
        // ESRCH: nothing left in the group.
        if killpg(Pid::from_raw(pid), signal).is_err() {
            return found;
        }
        found = true;
        std::thread::sleep(Duration::from_millis(2));
    }
    found
}

/// Why a command could not start, for the model.
pub fn spawn_error(e: &std::io::Error) -> Status {
    if e.raw_os_error() == Some(nix::libc::EAGAIN) {
        return Status::resource_exhausted(
            "the sandbox cannot start more processes (its process limit is reached); stop background processes",
        );
    }
    Status::failed_precondition(format!("cannot start the command: {e}"))
}

fn exit_fields(status: Option<ExitStatus>) -> (Option<i32>, i32) {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) => (s.code(), s.signal().unwrap_or(0)),
        None => (None, Signal::SIGKILL as i32),
    }
}

/// Runs an `Exec` request, sending its output and then its exit into `tx`.
pub async fn run(
    request: ExecRequest,
    workspace: &Path,
    default_timeout: Duration,
    activity: Arc<Activity>,
    tx: mpsc::Sender<Result<ExecEvent, Status>>,
) {
    let _running = activity.begin();
    let started = Instant::now();
    let workdir = start_dir(workspace, &request.workdir);
    let timeout =
        if request.timeout_secs == 0 { default_timeout } else { Duration::from_secs(u64::from(request.timeout_secs)) };
    let mut cap = OutputCap::new(request.max_output_bytes);
    let Spawned { mut child, mut output } = match spawn_shell(&request.command, &workdir, &request.env, Stdio::null()) {
        Ok(s) => s,
        Err(e) => {
            let _ = tx.send(Err(spawn_error(&e))).await;
            return;
        }
    };
    let pid = child.id();
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut buf = vec![0u8; 32 * 1024];
    let mut timed_out = false;
    let mut status: Option<ExitStatus> = None;
    let mut drain_until: Option<tokio::time::Instant> = None;
    loop {
        let drain = async {
            match drain_until {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            read = output.read(&mut buf) => {
                let n = match read { Ok(0) | Err(_) => break, Ok(n) => n };
                let keep = cap.take(n);
                if keep > 0 {
                    let event = ExecEvent { event: Some(exec_event::Event::Output(buf[..keep].to_vec())) };
                    if tx.send(Ok(event)).await.is_err() {
                        // The worker went away (the turn was interrupted): stop everything.
                        return stop(&mut child, pid).await;
                    }
                }
            }
            exited = child.wait(), if status.is_none() => {
                status = exited.ok();
                drain_until = Some(tokio::time::Instant::now() + DRAIN_AFTER_EXIT);
            }
            () = drain => break,
            () = &mut deadline, if status.is_none() => {
                timed_out = true;
                kill_group(pid, Signal::SIGKILL);
                status = child.wait().await.ok();
                drain_until = Some(tokio::time::Instant::now() + DRAIN_AFTER_EXIT);
            }
            () = tx.closed() => return stop(&mut child, pid).await,
        }
    }
    if status.is_none() {
        status = child.wait().await.ok();
    }
    // What the command left behind in its group dies with it, as when a terminal closes:
    // long-running processes belong in the background, where they can be managed.
    let stopped_leftovers = !timed_out && kill_group(pid, Signal::SIGKILL);
    let (exit_code, signal) = exit_fields(status);
    let exit = ExecExit {
        exit_code: if timed_out { None } else { exit_code },
        signal,
        timed_out,
        truncated: cap.truncated,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        stopped_leftovers,
    };
    let _ = tx.send(Ok(ExecEvent { event: Some(exec_event::Event::Exit(exit)) })).await;
}

/// Kills the command's whole group and reaps it.
async fn stop(child: &mut tokio::process::Child, pid: Option<u32>) {
    kill_group(pid, Signal::SIGKILL);
    let _ = child.wait().await;
}

/// A command's output sent up to the worker, cut at the request's cap.
struct OutputCap {
    max: u64,
    sent: u64,
    truncated: bool,
}

impl OutputCap {
    /// A cap of `max` bytes (0: the default).
    fn new(max: u64) -> Self {
        Self { max: if max == 0 { DEFAULT_MAX_OUTPUT } else { max }, sent: 0, truncated: false }
    }

    /// How many of `n` new bytes still fit.
    fn take(&mut self, n: usize) -> usize {
        let room = usize::try_from(self.max.saturating_sub(self.sent)).unwrap_or(usize::MAX);
        let keep = n.min(room);
        self.truncated |= keep < n;
        self.sent += keep as u64;
        keep
    }
}
