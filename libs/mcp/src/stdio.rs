//! Stdio MCP servers run inside the agent's sandbox, never on the worker: sandboxd starts the
//! program (`Stdio`) and carries its stdin and stdout over gRPC; here they become one byte
//! stream for the MCP client. Dropping the session closes the stream, and sandboxd kills the
//! program's process group; a sandbox reaped takes its programs with it.

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use hermes_sandbox::proto::{StdioInput, StdioStart, stdio_input, stdio_output};
use hermes_sandbox::{SandboxKey, Sandboxes};

use crate::{Connect, HttpConnector, McpConnection, McpError, McpServerSpec, ServerKey, Transport};

/// HTTP servers from the worker, stdio servers in the sandbox.
pub struct SandboxConnector {
    pub sandboxes: Arc<dyn Sandboxes>,
    pub http: HttpConnector,
}

impl Connect for SandboxConnector {
    fn connect<'a>(
        &'a self,
        key: &'a ServerKey,
        spec: &'a McpServerSpec,
    ) -> BoxFuture<'a, Result<McpConnection, McpError>> {
        match spec.transport() {
            Ok(Transport::Stdio) => Box::pin(stdio(self.sandboxes.clone(), key, spec)),
            _ => self.http.connect(key, spec),
        }
    }
}

/// Starts `spec`'s program in `key`'s sandbox and opens a session over its stdio.
async fn stdio(
    sandboxes: Arc<dyn Sandboxes>,
    key: &ServerKey,
    spec: &McpServerSpec,
) -> Result<McpConnection, McpError> {
    let sandbox = sandboxes
        .open(SandboxKey { tenant: key.tenant, agent: key.agent })
        .await
        .map_err(|e| McpError::Connect(format!("the sandbox is not available: {e}")))?;
    let (to_daemon, requests) = mpsc::channel::<StdioInput>(64);
    let start = StdioStart {
        command: spec.command.clone().unwrap_or_default(),
        args: spec.args.clone(),
        env: spec.env.clone().into_iter().collect(),
    };
    let _ = to_daemon.send(StdioInput { input: Some(stdio_input::Input::Start(start)) }).await;
    let mut from_daemon = sandbox
        .grpc()
        .stdio(ReceiverStream::new(requests))
        .await
        .map_err(|s| McpError::Connect(format!("sandboxd refused to start it: {:?} {}", s.code(), s.message())))?
        .into_inner();
    let (ours, theirs) = tokio::io::duplex(256 * 1024);
    let (mut their_read, mut their_write) = tokio::io::split(theirs);
    // How it ended, when it did: said when the session cannot start.
    let ended: Arc<Mutex<Option<String>>> = Arc::default();
    tokio::spawn(async move {
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n) = their_read.read(&mut buf).await {
            let stdin = StdioInput { input: Some(stdio_input::Input::Stdin(buf[..n].to_vec())) };
            if n == 0 || to_daemon.send(stdin).await.is_err() {
                break;
            }
        }
    });
    let record = ended.clone();
    tokio::spawn(async move {
        let why = loop {
            match from_daemon.message().await {
                Ok(Some(message)) => match message.output {
                    Some(stdio_output::Output::Stdout(bytes)) if their_write.write_all(&bytes).await.is_err() => {
                        break None;
                    }
                    Some(stdio_output::Output::Stdout(_)) => {}
                    Some(stdio_output::Output::Exit(exit)) => {
                        let code = exit.exit_code.map_or_else(|| "a signal".to_owned(), |c| format!("code {c}"));
                        let tail = exit.stderr_tail.trim();
                        let tail = tail.char_indices().rev().nth(400).map_or(tail, |(i, _)| &tail[i..]);
                        break Some(format!(
                            "it exited with {code}{}",
                            if tail.is_empty() { String::new() } else { format!(": {tail}") }
                        ));
                    }
                    None => {}
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
    McpConnection::start(ours, spec).await.map_err(|e| {
        let why = ended.lock().ok().and_then(|w| w.clone());
        let secrets = spec.secret_values();
        match why {
            Some(why) => McpError::Connect(hermes_toolbox::text::redact(&format!("{e}; {why}"), &secrets)),
            None => e,
        }
    })
}
