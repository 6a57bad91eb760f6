//! `Stdio`: a long-lived program the worker talks to over its stdin and stdout, such as a
//! tenant's MCP server, which so runs inside the tenant's sandbox and never on the worker. It
//! runs in the workspace as the sandbox user, with the sandbox's environment (secrets scrubbed)
//! plus what the start message gives, in its own process group. Its stdout goes up the stream
//! as it comes; its stderr is kept (the last 4 KB) to say why it stopped. When the worker
//! closes the stream the whole group is killed, so no server outlives its session.

use std::path::PathBuf;
use std::process::Stdio as Pipe;
use std::sync::Arc;

use hermes_sandbox_proto::v1::{StdioExit, StdioInput, StdioOutput, stdio_input, stdio_output};
use nix::sys::signal::Signal;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio::sync::mpsc;
use tonic::{Status, Streaming};

use crate::Activity;
use crate::code::scrubbed_env;
use crate::exec::{kill_group, spawn_error};

/// The stderr kept to explain an exit.
const STDERR_TAIL: usize = 4 * 1024;

type Out = mpsc::Sender<Result<StdioOutput, Status>>;

async fn send(tx: &Out, output: stdio_output::Output) -> bool {
    tx.send(Ok(StdioOutput { output: Some(output) })).await.is_ok()
}

/// Runs one `Stdio` stream to its end.
pub async fn run(mut input: Streaming<StdioInput>, workspace: PathBuf, activity: Arc<Activity>, tx: Out) {
    let start = match input.message().await {
        Ok(Some(StdioInput { input: Some(stdio_input::Input::Start(start)) })) => start,
        Ok(_) => {
            let _ = tx.send(Err(Status::invalid_argument("the first message must be StdioStart"))).await;
            return;
        }
        Err(status) => {
            let _ = tx.send(Err(status)).await;
            return;
        }
    };
    let mut cmd = Command::new(&start.command);
    cmd.args(&start.args)
        .current_dir(&workspace)
        .env_clear()
        .envs(scrubbed_env())
        .envs(&start.env)
        .stdin(Pipe::piped())
        .stdout(Pipe::piped())
        .stderr(Pipe::piped())
        .process_group(0)
        .kill_on_drop(true);
    crate::identity::apply(&mut cmd);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let _ = tx.send(Err(spawn_error(&e))).await;
            return;
        }
    };
    let pid = child.id();
    tracing::info!(command = %start.command, pid, "stdio program started");
    let (Some(mut stdin), Some(mut stdout), Some(mut stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        kill_group(pid, Signal::SIGKILL);
        let _ = tx.send(Err(Status::internal("the program's pipes are missing"))).await;
        return;
    };
    // The program's stderr, its tail kept.
    let stderr_task = tokio::spawn(async move {
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
    });
    // Its stdout, up the stream as it comes.
    let out = tx.clone();
    let reader_activity = activity.clone();
    let stdout_task = tokio::spawn(async move {
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n) = stdout.read(&mut buf).await {
            if n == 0 || !send(&out, stdio_output::Output::Stdout(buf[..n].to_vec())).await {
                break;
            }
            reader_activity.touch();
        }
    });
    // The worker's bytes to its stdin, until the worker closes the stream or the program ends.
    let feeding = async {
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
    };
    let status = tokio::select! {
        status = child.wait() => status.ok(),
        () = feeding => {
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
