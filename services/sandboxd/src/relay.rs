//! The egress relay: a sandbox has no network of its own, so programs in it reach the internet
//! (when the agent may) through `HTTP(S)_PROXY=http://127.0.0.1:3128`. The daemon listens
//! there, on the sandbox's own loopback, and relays every connection byte for byte to the
//! worker's egress proxy on a unix socket in the mounted socket directory. The worker decides
//! what may pass; nothing here parses or trusts the traffic.

use std::net::SocketAddr;
use std::path::PathBuf;

use tokio::net::{TcpListener, TcpStream, UnixStream};

/// Relays connections on `listen` to the unix socket `to`, until the process ends.
pub async fn run(listen: SocketAddr, to: PathBuf) -> std::io::Result<()> {
    let listener = TcpListener::bind(listen).await?;
    tracing::info!(%listen, to = %to.display(), "egress relay listening");
    loop {
        let (client, _) = listener.accept().await?;
        let to = to.clone();
        hermes_telemetry::tasks::spawn("sandboxd_relay", async move {
            if let Err(e) = relay(client, &to).await {
                tracing::debug!(error = %e, "egress relay connection ended");
            }
        });
    }
}

async fn relay(mut client: TcpStream, to: &PathBuf) -> std::io::Result<()> {
    let mut upstream = match UnixStream::connect(to).await {
        Ok(s) => s,
        Err(_) => {
            use tokio::io::AsyncWriteExt;
            // No proxy on the other side: say so the way an HTTP client understands.
            let body = "no egress proxy is available for this sandbox\n";
            let reply = format!(
                "HTTP/1.1 503 Service Unavailable\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            return client.write_all(reply.as_bytes()).await;
        }
    };
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await.map(|_| ())
}
