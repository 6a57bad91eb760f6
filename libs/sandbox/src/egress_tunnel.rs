//! The worker's end of the egress tunnel (`Egress` calls; sandboxd's `relay::Tunnel`): for a
//! sandbox that cannot reach its worker (a Kubernetes pod), the worker keeps a few calls
//! waiting on the sandbox's daemon, on a connection of their own, and each one a program's
//! connection opens is served by the same egress proxy as a Docker sandbox's unix-socket
//! connection. Nothing new is reachable: the calls ride the worker's own (TLS, pinned, token)
//! way to the daemon.
//!
//! What one sandbox (or a daemon that lies) can make a worker hold is bounded: at most the
//! proxy's share of connections plus the waiting calls, each ended once the proxy is done with
//! it and the daemon had [`LINGER`] to end it too.

use std::sync::Arc;
use std::time::Duration;

use hermes_sandbox_proto::v1::{EgressInput, EgressOutput, egress_output};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{Semaphore, mpsc};
use tokio_stream::wrappers::ReceiverStream;
use tonic::Streaming;

use crate::{EgressHandler, Result, SandboxClient, SandboxError, SandboxKey, status_error};

/// Calls kept waiting on each sandbox by each worker serving it: connections opened at once
/// beyond these wait a round trip for the next.
const WAITING_CALLS: usize = 4;
/// The bytes buffered each way between a call and the proxy.
const BUFFER: usize = 64 * 1024;
/// The longest pause between attempts when the daemon does not answer.
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How long a call may stay open once the proxy is done with its connection.
pub const LINGER: Duration = Duration::from_secs(10);

/// A program's connection, offered by the daemon and taken by this worker.
pub struct EgressCall {
    to_daemon: mpsc::Sender<EgressInput>,
    output: Streaming<EgressOutput>,
}

impl SandboxClient {
    /// Waits until a program in the sandbox connects to its proxy port, and takes that
    /// connection (the daemon reads nothing from the program before it is taken).
    pub async fn egress_accept(&self) -> Result<EgressCall> {
        let (to_daemon, input) = mpsc::channel::<EgressInput>(8);
        let mut output = self.grpc().egress(ReceiverStream::new(input)).await.map_err(status_error)?.into_inner();
        match output.message().await.map_err(status_error)?.and_then(|m| m.output) {
            Some(egress_output::Output::Opened(_)) => {}
            _ => return Err(SandboxError::Backend("the daemon answered an egress call without a connection".into())),
        }
        let taken = EgressInput { data: Vec::new() };
        to_daemon.send(taken).await.map_err(|_| SandboxError::Unavailable("the egress call ended".into()))?;
        Ok(EgressCall { to_daemon, output })
    }
}

/// Serves `key`'s egress through `client` (a connection for the tunnel alone:
/// [`SandboxClient::connect_for_egress`]) with `handler`, at most `max_open` connections at
/// once, until the returned task is aborted (when the worker forgets the sandbox).
pub fn serve(
    client: SandboxClient,
    key: SandboxKey,
    handler: Arc<dyn EgressHandler>,
    max_open: usize,
) -> tokio::task::JoinHandle<()> {
    let open = Arc::new(Semaphore::new(max_open + WAITING_CALLS));
    hermes_telemetry::tasks::spawn("sandbox_egress_tunnel", async move {
        let waiting = (0..WAITING_CALLS).map(|_| {
            let (client, handler, open) = (client.clone(), handler.clone(), open.clone());
            async move {
                let mut backoff = Duration::from_millis(100);
                loop {
                    let Ok(place) = open.clone().acquire_owned().await else { return };
                    match client.egress_accept().await {
                        Ok(call) => {
                            backoff = Duration::from_millis(100);
                            let served = carry(call, key, handler.clone());
                            hermes_telemetry::tasks::spawn("sandbox_egress_connection", async move {
                                served.await;
                                drop(place);
                            });
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

/// Hands the call's connection to `handler` as a byte stream, until the proxy is done with it
/// and the daemon ended the call (or had [`LINGER`] to).
async fn carry(call: EgressCall, key: SandboxKey, handler: Arc<dyn EgressHandler>) {
    let EgressCall { to_daemon, mut output } = call;
    let (ours, theirs) = tokio::io::duplex(BUFFER);
    let (mut from_proxy, mut to_proxy) = tokio::io::split(theirs);
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
        // Returning drops `to_daemon`: the call's input ends, and the daemon ends the call.
        while let Ok(n) = from_proxy.read(&mut buf).await {
            if n == 0 || to_daemon.send(EgressInput { data: buf[..n].to_vec() }).await.is_err() {
                return;
            }
        }
    };
    let proxied = async { tokio::join!(handler.serve(key, Box::new(ours)), down) };
    tokio::pin!(up, proxied);
    let up_ended = tokio::select! {
        _ = &mut proxied => false,
        () = &mut up => true,
    };
    if up_ended {
        proxied.await;
    } else {
        let _ = tokio::time::timeout(LINGER, up).await;
    }
}
