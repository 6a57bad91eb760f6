//! The worker's end of the egress tunnel (`Egress` calls; sandboxd's `relay::Tunnel`): for a
//! sandbox that cannot reach its worker (a Kubernetes pod), the worker keeps a few calls
//! waiting on the sandbox's daemon, and each one a program's connection opens is served by
//! the same egress proxy as a Docker sandbox's unix-socket connection. Nothing new is reachable:
//! the calls ride the worker's own (TLS, pinned, token) connection to the daemon.

use std::time::Duration;

use hermes_sandbox_proto::v1::{EgressInput, egress_output};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::{EgressHandler, Result, SandboxClient, SandboxError, SandboxKey, status_error};

/// Calls kept waiting on each sandbox by each worker: connections opened at once beyond these
/// wait a round trip for the next.
const WAITING_CALLS: usize = 4;
/// The bytes buffered each way between a call and the proxy.
const BUFFER: usize = 64 * 1024;
/// The longest pause between attempts when the daemon does not answer.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

impl SandboxClient {
    /// Waits until a program in the sandbox connects to its proxy port, and returns that
    /// connection as a byte stream (program's bytes in, the proxy's out).
    pub async fn egress_accept(&self) -> Result<DuplexStream> {
        let (to_daemon, input) = mpsc::channel::<EgressInput>(8);
        let mut output = self.grpc().egress(ReceiverStream::new(input)).await.map_err(status_error)?.into_inner();
        match output.message().await.map_err(status_error)?.and_then(|m| m.output) {
            Some(egress_output::Output::Opened(_)) => {}
            _ => return Err(SandboxError::Backend("the daemon answered an egress call without a connection".into())),
        }
        let (ours, theirs) = tokio::io::duplex(BUFFER);
        let (mut from_proxy, mut to_proxy) = tokio::io::split(theirs);
        hermes_telemetry::tasks::spawn("sandbox_egress_call", async move {
            let up = async move {
                while let Ok(Some(message)) = output.message().await {
                    match message.output {
                        Some(egress_output::Output::Data(bytes)) if to_proxy.write_all(&bytes).await.is_err() => return,
                        Some(egress_output::Output::Eof(_)) => break,
                        _ => {}
                    }
                }
                let _ = to_proxy.shutdown().await;
            };
            let down = async move {
                let mut buf = vec![0u8; BUFFER / 2];
                // Dropping `to_daemon` ends the call's input: the program reads its end.
                while let Ok(n) = from_proxy.read(&mut buf).await {
                    if n == 0 || to_daemon.send(EgressInput { data: buf[..n].to_vec() }).await.is_err() {
                        return;
                    }
                }
            };
            tokio::join!(up, down);
        });
        Ok(ours)
    }
}

/// Serves `key`'s egress through `client` with `handler` until the returned task is aborted
/// (when the worker forgets the sandbox).
pub fn serve(
    client: SandboxClient,
    key: SandboxKey,
    handler: std::sync::Arc<dyn EgressHandler>,
) -> tokio::task::JoinHandle<()> {
    hermes_telemetry::tasks::spawn("sandbox_egress_tunnel", async move {
        let waiting = (0..WAITING_CALLS).map(|_| {
            let (client, handler) = (client.clone(), handler.clone());
            async move {
                let mut backoff = Duration::from_millis(100);
                loop {
                    match client.egress_accept().await {
                        Ok(connection) => {
                            backoff = Duration::from_millis(100);
                            hermes_telemetry::tasks::spawn(
                                "sandbox_egress_connection",
                                handler.serve(key, Box::new(connection)),
                            );
                        }
                        Err(e) => {
                            tracing::debug!(error = %e, "the sandbox's egress tunnel is not answering");
                            tokio::time::sleep(backoff).await;
                            backoff = (backoff * 2).min(MAX_BACKOFF);
                        }
                    }
                }
            }
        });
        futures_util::future::join_all(waiting).await;
    })
}
