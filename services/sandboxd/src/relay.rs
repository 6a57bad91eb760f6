//! The egress relay: a sandbox has no network of its own, so programs in it reach the internet
//! (when the agent may) through `HTTP(S)_PROXY=http://127.0.0.1:3128`. The daemon listens
//! there, on the sandbox's own loopback, before any program runs (so none can take the port),
//! and passes every connection byte for byte to the worker's egress proxy: over a unix socket
//! in the mounted socket directory ([`run`], Docker and local), or, where the sandbox cannot
//! reach its worker (a Kubernetes pod), over `Egress` calls the worker keeps waiting on this
//! daemon ([`Tunnel`]). The worker decides what may pass; nothing here parses or trusts the
//! traffic.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_sandbox_proto::v1::{EgressInput, EgressOpened, EgressOutput, egress_output};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixStream};
use tokio::sync::mpsc;
use tonic::{Status, Streaming};

/// How long a program's connection waits for a worker to take it before it is told none is there.
const WAIT_FOR_WORKER: Duration = Duration::from_secs(30);
/// The pause after a failed accept (out of descriptors): the listener is kept, never dropped,
/// so no program can take its port.
const ACCEPT_RETRY: Duration = Duration::from_millis(200);
/// Connections waiting for a worker at most; more are refused at once.
const MAX_WAITING: usize = 256;
/// The bytes one `EgressOutput` carries at most.
const CHUNK: usize = 32 * 1024;

/// Relays connections on `listen` to the unix socket `to`, until the process ends.
pub async fn run(listen: SocketAddr, to: PathBuf) -> std::io::Result<()> {
    let listener = TcpListener::bind(listen).await?;
    tracing::info!(%listen, to = %to.display(), "egress relay listening");
    loop {
        let client = accept(&listener).await;
        let to = to.clone();
        hermes_telemetry::tasks::spawn("sandboxd_relay", async move {
            if let Err(e) = relay(client, &to).await {
                tracing::debug!(error = %e, "egress relay connection ended");
            }
        });
    }
}

/// The next connection on `listener`, however long accepting fails.
async fn accept(listener: &TcpListener) -> TcpStream {
    loop {
        match listener.accept().await {
            Ok((client, _)) => {
                // Requests are small writes; each must not wait for an ACK (Nagle's algorithm).
                let _ = client.set_nodelay(true);
                return client;
            }
            Err(e) => {
                tracing::warn!(error = %e, "the egress port cannot accept a connection now");
                tokio::time::sleep(ACCEPT_RETRY).await;
            }
        }
    }
}

/// Tells an HTTP client there is no proxy to reach, the way it understands.
async fn no_proxy(client: &mut TcpStream, why: &str) -> std::io::Result<()> {
    let body = format!("{why}\n");
    let reply = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(reply.as_bytes()).await
}

async fn relay(mut client: TcpStream, to: &PathBuf) -> std::io::Result<()> {
    let Ok(mut upstream) = UnixStream::connect(to).await else {
        return no_proxy(&mut client, "no egress proxy is available for this sandbox").await;
    };
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await.map(|_| ())
}

/// A program's connection until a worker's `Egress` call takes it (or it gives up waiting).
type Waiting = Arc<Mutex<Option<TcpStream>>>;

/// The connections programs opened to the proxy port, for the workers' `Egress` calls.
pub struct Tunnel {
    waiting: tokio::sync::Mutex<mpsc::Receiver<Waiting>>,
    requeue: mpsc::Sender<Waiting>,
}

impl Tunnel {
    /// Listens on `listen` and queues each connection for the next `Egress` call.
    pub async fn listen(listen: SocketAddr) -> std::io::Result<Arc<Self>> {
        let listener = TcpListener::bind(listen).await?;
        tracing::info!(%listen, "egress tunnel listening");
        let (queue, waiting) = mpsc::channel(MAX_WAITING);
        let tunnel = Arc::new(Self { waiting: tokio::sync::Mutex::new(waiting), requeue: queue.clone() });
        hermes_telemetry::tasks::spawn("sandboxd_tunnel_accept", async move {
            loop {
                queue_connection(&queue, accept(&listener).await).await;
            }
        });
        Ok(tunnel)
    }

    /// The next connection no worker took yet (the queue never closes: this holds a sender).
    async fn next(&self) -> Option<TcpStream> {
        let mut waiting = self.waiting.lock().await;
        loop {
            let slot = waiting.recv().await?;
            // Empty when it waited too long and was answered already.
            if let Some(client) = slot.lock().ok().and_then(|mut s| s.take()) {
                return Some(client);
            }
        }
    }

    /// Serves one `Egress` call: waits for a connection (or the worker's hanging up), offers
    /// it, and once the worker took it (its first, empty, input) carries it. A connection whose
    /// call died before that goes back to the queue, untouched.
    pub async fn serve(&self, mut input: Streaming<EgressInput>, tx: mpsc::Sender<Result<EgressOutput, Status>>) {
        let client = tokio::select! {
            client = self.next() => client,
            () = tx.closed() => return,
        };
        let Some(client) = client else { return };
        let opened = EgressOutput { output: Some(egress_output::Output::Opened(EgressOpened {})) };
        let taken = match tx.send(Ok(opened)).await {
            Ok(()) => tokio::time::timeout(WAIT_FOR_WORKER, input.message()).await,
            Err(_) => Ok(Ok(None)),
        };
        match taken {
            Ok(Ok(Some(_))) => carry(client, input, tx).await,
            _ => queue_connection(&self.requeue, client).await,
        }
    }
}

async fn queue_connection(queue: &mpsc::Sender<Waiting>, client: TcpStream) {
    let slot: Waiting = Arc::new(Mutex::new(Some(client)));
    if let Err(refused) = queue.try_send(slot.clone()) {
        let (mpsc::error::TrySendError::Full(slot) | mpsc::error::TrySendError::Closed(slot)) = refused;
        if let Some(mut client) = slot.lock().ok().and_then(|mut s| s.take()) {
            let _ = no_proxy(&mut client, "too many connections are waiting for the egress proxy").await;
        }
        return;
    }
    hermes_telemetry::tasks::spawn("sandboxd_tunnel_wait", async move {
        tokio::time::sleep(WAIT_FOR_WORKER).await;
        let unclaimed = slot.lock().ok().and_then(|mut s| s.take());
        if let Some(mut client) = unclaimed {
            let _ = no_proxy(&mut client, "no worker is serving this sandbox's egress now").await;
        }
    });
}

/// Carries `client`'s bytes up as `EgressOutput`s and the worker's `EgressInput`s down. The
/// call ends when the worker's input does (its proxy is done with the connection, and nothing
/// of the worker's waits on a program that keeps it open), or when the worker hangs up.
async fn carry(client: TcpStream, mut input: Streaming<EgressInput>, tx: mpsc::Sender<Result<EgressOutput, Status>>) {
    let (mut from_program, mut to_program) = client.into_split();
    let up = async {
        let mut buf = vec![0u8; CHUNK];
        loop {
            let read = tokio::select! {
                read = from_program.read(&mut buf) => read,
                // The worker hung up: nothing more goes up.
                () = tx.closed() => return,
            };
            let output = match read {
                Ok(0) | Err(_) => egress_output::Output::Eof(true),
                Ok(n) => egress_output::Output::Data(buf[..n].to_vec()),
            };
            let eof = matches!(output, egress_output::Output::Eof(_));
            if tx.send(Ok(EgressOutput { output: Some(output) })).await.is_err() || eof {
                return;
            }
        }
    };
    let down = async {
        while let Ok(Some(message)) = input.message().await {
            if to_program.write_all(&message.data).await.is_err() {
                return;
            }
        }
        let _ = to_program.shutdown().await;
    };
    // `up` alone ending (the program stopped sending) leaves the answer still to come.
    let up_then_wait = async {
        up.await;
        std::future::pending::<()>().await
    };
    tokio::select! {
        () = down => {}
        () = up_then_wait => {}
    }
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn a_programs_connection_sends_small_writes_without_waiting() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let _program = tokio::net::TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        assert!(super::accept(&listener).await.nodelay().unwrap(), "Nagle's algorithm is off");
    }
}
