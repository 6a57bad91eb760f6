//! `hermes-sandboxd serve --listen unix:/hermes/ipc/sandboxd.sock --workspace /workspace`
//! (or `--listen tcp:0.0.0.0:7070 --token-file /etc/hermes/token` in a Kubernetes pod).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Parser;
use hermes_sandboxd::{Config, Daemon, serve_tcp, serve_unix};

#[derive(Parser)]
#[command(name = "hermes-sandboxd", about = "The daemon inside a Hermes sandbox")]
struct Args {
    /// `unix:PATH` or `tcp:ADDR:PORT`.
    #[arg(long, default_value = "unix:/hermes/ipc/sandboxd.sock")]
    listen: String,
    #[arg(long, default_value = "/workspace")]
    workspace: PathBuf,
    /// A file holding the token TCP clients must present.
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Seconds a command may run when the request gives no timeout.
    #[arg(long, default_value_t = 180)]
    default_timeout: u64,
    /// The worker's egress proxy (a unix socket); programs reach it through `--egress-listen`.
    #[arg(long)]
    egress_socket: Option<PathBuf>,
    #[arg(long, default_value = "127.0.0.1:3128")]
    egress_listen: std::net::SocketAddr,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_env_filter(std::env::var("SANDBOXD_LOG").unwrap_or_else(|_| "info".into())).init();
    let args = Args::parse();
    let mut cfg = Config::for_workspace(args.workspace);
    cfg.default_timeout = Duration::from_secs(args.default_timeout);
    if let Some(to) = args.egress_socket.clone() {
        let listen = args.egress_listen;
        tokio::spawn(async move {
            if let Err(e) = hermes_sandboxd::relay::run(listen, to).await {
                tracing::warn!(error = %e, "the egress relay stopped");
            }
        });
    }
    let shutdown = async {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => return std::future::pending().await,
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    };
    if let Some(path) = args.listen.strip_prefix("unix:") {
        serve_unix(Daemon::new(cfg), std::path::Path::new(path), shutdown).await
    } else if let Some(addr) = args.listen.strip_prefix("tcp:") {
        let path = args.token_file.context("--token-file is required with a tcp listener")?;
        let token = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let token = token.trim().to_owned();
        if token.len() < 16 {
            bail!("the sandbox token is too short");
        }
        cfg.token = Some(token.clone());
        serve_tcp(Daemon::new(cfg), addr.parse().context("bad tcp address")?, token, shutdown).await
    } else {
        bail!("--listen must be unix:PATH or tcp:ADDR:PORT")
    }
}
