//! `Stdio`: a long-lived program the worker talks to over its stdin and stdout, such as a
//! tenant's MCP server, which so runs inside the tenant's sandbox and never on the worker. It
//! runs with the sandbox's environment (secrets scrubbed) plus what the start message gives,
//! in its own process group. A program started `as_mcp_user` (an MCP server, holding the
//! tenant's secrets) runs as the MCP server user, in that user's private home, and only when
//! the sandbox user cannot change its code ([`crate::code_guard`]); any other (the browser) as
//! the sandbox user, in the workspace. Its stdout goes up the stream as it comes; its stderr is
//! kept (the last 4 KB) to say why it stopped. When the worker closes the stream the whole
//! group is killed, so no server outlives its session.

use std::path::{Path, PathBuf};
use std::process::Stdio as Pipe;
use std::sync::Arc;

use hermes_sandbox_proto::v1::{StdioExit, StdioInput, StdioOutput, StdioStart, stdio_input, stdio_output};
use nix::sys::signal::Signal;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::mpsc;
use tonic::{Status, Streaming};

use crate::Activity;
use crate::code::scrubbed_env;
use crate::code_guard::Guard;
use crate::exec::{kill_group, spawn_error};

/// The PATH a program is looked up on when neither its start nor the sandbox gives one.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
/// The stderr kept to explain an exit.
const STDERR_TAIL: usize = 4 * 1024;

type Out = mpsc::Sender<Result<StdioOutput, Status>>;

async fn send(tx: &Out, output: stdio_output::Output) -> bool {
    tx.send(Ok(StdioOutput { output: Some(output) })).await.is_ok()
}

/// How `start` is started: as the sandbox user in the workspace, or as the MCP server user in
/// its home once its code is known to be out of the sandbox user's reach.
fn command(start: &StdioStart, workspace: &Path) -> Result<Command, Status> {
    if !start.as_mcp_user {
        let mut cmd = Command::new(&start.command);
        cmd.args(&start.args).current_dir(workspace).env_clear().envs(scrubbed_env()).envs(&start.env);
        crate::identity::apply(&mut cmd);
        return Ok(cmd);
    }
    let sandbox = crate::identity::sandbox_user();
    let user = match crate::identity::mcp_user() {
        Some(Ok(user)) => {
            crate::mcp_home::check(&user.home, user.ids, sandbox)
                .map_err(|e| Status::failed_precondition(format!("the MCP server user's home is unusable: {e}")))?;
            Some(user)
        }
        Some(Err(why)) => {
            return Err(Status::failed_precondition(format!("the MCP server user's home is unusable: {why}")));
        }
        // No second user (a local sandbox without root): the sandbox user's, as everything.
        None => None,
    };
    let home = user.map_or(workspace, |u| u.home.as_path());
    let env = scrubbed_env();
    let path = start
        .env
        .get("PATH")
        .or_else(|| env.iter().find(|(name, _)| name == "PATH").map(|(_, value)| value))
        .map_or(DEFAULT_PATH, String::as_str);
    let guard = Guard { sandbox, cwd: home.to_owned(), scratch: scratch(workspace) };
    let program = guard
        .check_start(&start.command, &start.args, &start.env, path)
        .map_err(|e| Status::failed_precondition(e.to_string()))?;
    let mut cmd = Command::new(&program);
    cmd.arg0(&start.command).args(&start.args).current_dir(home).env_clear().envs(env);
    if user.is_some() {
        // Its caches and temporary files too stay in its home, out of the sandbox user's sight.
        cmd.env("HOME", home).env("TMPDIR", home);
    }
    cmd.envs(&start.env);
    match user {
        Some(user) => crate::identity::apply_mcp(&mut cmd, user),
        None => crate::identity::apply(&mut cmd),
    }
    Ok(cmd)
}

/// Where the sandbox user writes anyway: nothing there is out of its reach.
fn scratch(workspace: &Path) -> Vec<PathBuf> {
    [workspace, Path::new("/tmp"), Path::new("/var/tmp"), Path::new("/dev/shm")].map(Path::to_owned).to_vec()
}

/// Runs one `Stdio` stream to its end.
pub async fn run(mut input: Streaming<StdioInput>, workspace: PathBuf, activity: Arc<Activity>, tx: Out) {
    let Some(start) = first_start(&mut input, &tx).await else { return };
    let Some(mut child) = spawn(&start, &workspace, &tx).await else { return };
    let pid = child.id();
    tracing::info!(command = %start.command, pid, "stdio program started");
    let (Some(mut stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        kill_group(pid, Signal::SIGKILL);
        let _ = tx.send(Err(Status::internal("the program's pipes are missing"))).await;
        return;
    };
    let stderr_task = hermes_telemetry::tasks::spawn("sandboxd_stderr", stderr_tail(stderr));
    let stdout_task =
        hermes_telemetry::tasks::spawn("sandboxd_stdout", relay_stdout(stdout, tx.clone(), activity.clone()));
    let status = tokio::select! {
        status = child.wait() => status.ok(),
        () = feed(&mut input, &mut stdin, &activity) => {
            // The worker is gone: so is the program, with everything it started.
            kill_group(pid, Signal::SIGKILL);
            child.wait().await.ok()
        }
    };
    kill_group(pid, Signal::SIGKILL);
    let _ = stdout_task.await;
    let stderr_tail = stderr_task.await.unwrap_or_default();
    tracing::info!(command = %start.command, code = ?status.and_then(|s| s.code()), "stdio program ended");
    let exit = StdioExit { exit_code: status.and_then(|s| s.code()), stderr_tail };
    let _ = send(&tx, stdio_output::Output::Exit(exit)).await;
}

/// The stream's first message, which must be the start; otherwise the error is sent down
/// the stream and `None` ends it.
async fn first_start(input: &mut Streaming<StdioInput>, tx: &Out) -> Option<StdioStart> {
    match input.message().await {
        Ok(Some(StdioInput { input: Some(stdio_input::Input::Start(start)) })) => Some(start),
        Ok(_) => {
            let _ = tx.send(Err(Status::invalid_argument("the first message must be StdioStart"))).await;
            None
        }
        Err(status) => {
            let _ = tx.send(Err(status)).await;
            None
        }
    }
}

/// Starts the program with piped stdio in its own process group; on a refusal or a failed
/// start the error is sent down the stream and `None` ends it.
async fn spawn(start: &StdioStart, workspace: &Path, tx: &Out) -> Option<Child> {
    let mut cmd = match command(start, workspace) {
        Ok(cmd) => cmd,
        Err(status) => {
            tracing::warn!(command = %start.command, why = status.message(), "stdio program refused");
            let _ = tx.send(Err(status)).await;
            return None;
        }
    };
    cmd.stdin(Pipe::piped()).stdout(Pipe::piped()).stderr(Pipe::piped()).process_group(0).kill_on_drop(true);
    match crate::identity::starting(|| cmd.spawn()) {
        Ok(child) => Some(child),
        Err(e) => {
            let _ = tx.send(Err(spawn_error(&e))).await;
            None
        }
    }
}

/// The program's stderr, its last [`STDERR_TAIL`] bytes kept.
async fn stderr_tail(mut stderr: ChildStderr) -> String {
    let mut tail: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 4096];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            break;
        }
        tail.extend_from_slice(&buf[..n]);
        if tail.len() > STDERR_TAIL {
            tail.drain(..tail.len() - STDERR_TAIL);
        }
    }
    String::from_utf8_lossy(&tail).into_owned()
}

/// The program's stdout, up the stream as it comes.
async fn relay_stdout(mut stdout: ChildStdout, out: Out, activity: Arc<Activity>) {
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(n) = stdout.read(&mut buf).await {
        if n == 0 || !send(&out, stdio_output::Output::Stdout(buf[..n].to_vec())).await {
            break;
        }
        activity.touch();
    }
}

/// The worker's bytes to the program's stdin, until the worker closes the stream or the
/// program stops reading.
async fn feed(input: &mut Streaming<StdioInput>, stdin: &mut ChildStdin, activity: &Activity) {
    loop {
        match input.message().await {
            Ok(Some(StdioInput { input: Some(stdio_input::Input::Stdin(bytes)) })) => {
                activity.touch();
                if stdin.write_all(&bytes).await.is_err() || stdin.flush().await.is_err() {
                    return;
                }
            }
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => return,
        }
    }
}
