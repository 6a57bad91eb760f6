//! A long-lived program in a sandbox spoken to over its stdin and stdout (an MCP server, the
//! browser): sandboxd starts it (`Stdio`) and carries both over gRPC; here they become one
//! local byte stream. Dropping the stream closes the RPC, and sandboxd kills the program's
//! process group; a sandbox reaped takes its programs with it.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::sync::mpsc;

use crate::proto::{StdioInput, StdioStart, stdio_input, stdio_output};
use crate::{SandboxKey, Sandboxes};

/// A running program: its stdio as one stream, and how it ended once it did.
pub struct SandboxProcess {
    pub io: DuplexStream,
    /// Set when the program exits or the stream breaks: why, with its stderr's tail.
    pub ended: Arc<Mutex<Option<String>>>,
}

impl SandboxProcess {
    /// Why it stopped, if it did.
    pub fn why_ended(&self) -> Option<String> {
        self.ended.lock().ok().and_then(|w| w.clone())
    }
}

/// Starts `start` in `key`'s sandbox.
pub async fn spawn(sandboxes: &dyn Sandboxes, key: SandboxKey, start: StdioStart) -> Result<SandboxProcess, String> {
    let sandbox = sandboxes.open(key).await.map_err(|e| format!("the sandbox is not available: {e}"))?;
    let (to_daemon, requests) = mpsc::channel::<StdioInput>(64);
    let _ = to_daemon.send(StdioInput { input: Some(stdio_input::Input::Start(start)) }).await;
    let mut from_daemon = sandbox
        .grpc()
        .stdio(futures_util::stream::unfold(requests, |mut rx| async move { rx.recv().await.map(|m| (m, rx)) }))
        .await
        .map_err(|s| format!("sandboxd refused to start it: {:?} {}", s.code(), s.message()))?
        .into_inner();
    let (ours, theirs) = tokio::io::duplex(256 * 1024);
    let (mut their_read, mut their_write) = tokio::io::split(theirs);
    let ended: Arc<Mutex<Option<String>>> = Arc::default();
    hermes_telemetry::tasks::spawn("sandbox_process_stdin", async move {
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n) = their_read.read(&mut buf).await {
            let stdin = StdioInput { input: Some(stdio_input::Input::Stdin(buf[..n].to_vec())) };
            if n == 0 || to_daemon.send(stdin).await.is_err() {
                break;
            }
        }
    });
    let record = ended.clone();
    hermes_telemetry::tasks::spawn("sandbox_process_output", async move {
        let why = loop {
            match from_daemon.message().await {
                Ok(Some(message)) => match message.output {
                    Some(stdio_output::Output::Stdout(bytes)) if their_write.write_all(&bytes).await.is_err() => {
                        break None;
                    }
                    Some(stdio_output::Output::Stdout(_)) | None => {}
                    Some(stdio_output::Output::Exit(exit)) => {
                        let code = exit.exit_code.map_or_else(|| "a signal".to_owned(), |c| format!("code {c}"));
                        let tail = exit.stderr_tail.trim();
                        let tail = tail.char_indices().rev().nth(400).map_or(tail, |(i, _)| &tail[i..]);
                        break Some(format!(
                            "it exited with {code}{}",
                            if tail.is_empty() { String::new() } else { format!(": {tail}") }
                        ));
                    }
                },
                Ok(None) => break Some("sandboxd closed the stream".to_owned()),
                Err(status) => break Some(status.message().to_owned()),
            }
        };
        if let (Some(why), Ok(mut slot)) = (why, record.lock()) {
            *slot = Some(why);
        }
        let _ = their_write.shutdown().await;
    });
    Ok(SandboxProcess { io: ours, ended })
}
