//! `hermes-sandboxd --listen unix:/hermes/ipc/sandboxd.sock --workspace /workspace --run-as 1000:1000`
//! (or `--listen tcp:0.0.0.0:7070 --token-env HERMES_SANDBOX_TOKEN`, with `--tls-cert-env` and
//! `--tls-key-env`, in a Kubernetes pod).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Parser;
use hermes_sandbox_proto::trust;
use hermes_sandboxd::identity::{self, Launch};
use hermes_sandboxd::run_as::RunAs;
use hermes_sandboxd::{Config, Daemon, TlsIdentity, bind_unix, serve_tcp, serve_unix};

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
    /// An environment variable holding the token TCP clients must present (programs in the
    /// sandbox never see it).
    #[arg(long)]
    token_env: Option<String>,
    /// Environment variables holding the TCP listener's certificate and key (PEM): with them it
    /// speaks TLS only. Variables, not files, for the token's reason (programs never see them).
    #[arg(long, requires = "tls_key_env")]
    tls_cert_env: Option<String>,
    #[arg(long, requires = "tls_cert_env")]
    tls_key_env: Option<String>,
    /// Run programs, and touch files, as this `UID:GID` (sandboxd itself must be root, with
    /// CAP_SETUID, CAP_SETGID and CAP_KILL, and stays root: the programs cannot stop it).
    #[arg(long, value_parser = RunAs::parse)]
    run_as: Option<RunAs>,
    /// Run stdio MCP servers (which hold the tenant's secrets) as this other `UID:GID`, in a
    /// private home made in the backend's fresh mount at /hermes/mcp.
    #[arg(long, value_parser = RunAs::parse)]
    mcp_as: Option<RunAs>,
    /// Seconds a command may run when the request gives no timeout.
    #[arg(long, default_value_t = 180)]
    default_timeout: u64,
    /// The worker's egress proxy (a unix socket); programs reach it through `--egress-listen`.
    #[arg(long)]
    egress_socket: Option<PathBuf>,
    /// Hand programs' connections to `--egress-listen` to the worker's `Egress` calls instead
    /// (a Kubernetes pod, which cannot reach its worker).
    #[arg(long, conflicts_with = "egress_socket")]
    egress_tunnel: bool,
    #[arg(long, default_value = "127.0.0.1:3128")]
    egress_listen: std::net::SocketAddr,
    /// Write the certificate in `HERMES_SANDBOX_TRUST_PEM` (and its pin in
    /// `HERMES_SANDBOX_TRUST_SPKI`), when given, as the trust files programs are pointed at,
    /// into this directory, and close it to programs (a Kubernetes pod: no worker can write there).
    #[arg(long)]
    trust_dir: Option<PathBuf>,
    /// The worker's OTLP relay (a unix socket): sandboxd's spans go there, in the trace of the
    /// tool call that asked for the work.
    #[arg(long)]
    otlp_socket: Option<PathBuf>,
    /// Internal: print the text of the document at this path and exit (sandboxd runs itself
    /// so, as the sandbox user, to read a file someone sent).
    #[arg(long, hide = true)]
    extract_text: Option<PathBuf>,
    /// Internal: unpack the archive at this path into `--unpack-into` and exit (as the sandbox
    /// user, like `--extract-text`).
    #[arg(long, hide = true, requires = "unpack_into")]
    unpack: Option<PathBuf>,
    #[arg(long, hide = true, requires = "unpack")]
    unpack_into: Option<PathBuf>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(path) = &args.extract_text {
        std::process::exit(hermes_sandboxd::extract::child(path));
    }
    if let (Some(archive), Some(dest)) = (&args.unpack, &args.unpack_into) {
        std::process::exit(hermes_sandboxd::unpack::child(archive, dest));
    }
    if args.run_as.is_some() && !nix::unistd::geteuid().is_root() {
        bail!("--run-as needs sandboxd to start as root (with CAP_SETUID, CAP_SETGID and CAP_KILL)");
    }
    // Read as sandboxd, before any thread takes the sandbox user's file identity.
    let token = read_token(&args)?;
    let tls = read_tls(&args)?;
    if let Some(dir) = &args.trust_dir {
        write_trust(dir)?;
    }
    let mut hidden_env: Vec<String> =
        [&args.token_env, &args.tls_cert_env, &args.tls_key_env].into_iter().flatten().cloned().collect();
    hidden_env.extend(trust::TRUST_VARIABLES.map(str::to_owned));
    let launch = Launch { run_as: args.run_as, mcp_as: args.mcp_as, hidden_env };
    identity::set(launch, std::path::Path::new(hermes_sandbox_proto::MCP_HOME_MOUNT))?;
    let run_as = args.run_as;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_start(move || {
            if let Some(run_as) = run_as {
                run_as.on_this_thread();
            }
        })
        .build()?;
    let telemetry = runtime.block_on(async { init_telemetry(&args) })?;
    let result = runtime.block_on(serve(args, token, tls));
    telemetry.shutdown();
    result
}

/// Text logs (`SANDBOXD_LOG` filters them); spans go to the worker's OTLP relay when it gave
/// one (the sandbox has no network of its own).
fn init_telemetry(args: &Args) -> anyhow::Result<hermes_telemetry::Telemetry> {
    let cfg = hermes_config::TelemetryConfig {
        log_format: hermes_config::LogFormat::Text,
        log_filter: std::env::var("SANDBOXD_LOG").unwrap_or_else(|_| "info".into()),
        ..Default::default()
    };
    Ok(match &args.otlp_socket {
        Some(socket) => hermes_telemetry::init_through_socket(&cfg, "hermes-sandboxd", socket.clone())?,
        None => hermes_telemetry::init(&cfg, "hermes-sandboxd")?,
    })
}

fn read_token(args: &Args) -> anyhow::Result<Option<String>> {
    let raw = match (&args.token_file, &args.token_env) {
        (Some(path), _) => std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?,
        (None, Some(name)) => std::env::var(name).with_context(|| format!("{name} is not set"))?,
        (None, None) => return Ok(None),
    };
    let token = raw.trim().to_owned();
    if token.len() < 16 {
        bail!("the sandbox token is too short");
    }
    Ok(Some(token))
}

/// Writes the trust files from sandboxd's environment into `dir`, if it gives them, as root,
/// and leaves the directory root's either way: programs read the files and can neither change
/// nor plant the certificate or the pin they name.
fn write_trust(dir: &std::path::Path) -> anyhow::Result<()> {
    let [pem, spki] = trust::TRUST_VARIABLES.map(|name| std::env::var(name).ok());
    match (pem, spki) {
        (Some(pem), Some(spki_sha256)) => trust::write_trust(dir, &trust::Trust { pem, spki_sha256 })
            .with_context(|| format!("cannot write the trust files into {}", dir.display()))?,
        (None, None) => trust::remove_trust(dir),
        _ => bail!("{} and {} come together", trust::TRUST_VARIABLES[0], trust::TRUST_VARIABLES[1]),
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("cannot close {} to programs", dir.display()))
}

fn read_tls(args: &Args) -> anyhow::Result<Option<TlsIdentity>> {
    let (Some(cert), Some(key)) = (&args.tls_cert_env, &args.tls_key_env) else { return Ok(None) };
    let read = |name: &str| std::env::var(name).with_context(|| format!("{name} is not set"));
    Ok(Some(TlsIdentity { cert_pem: read(cert)?, key_pem: read(key)? }))
}

async fn serve(args: Args, token: Option<String>, tls: Option<TlsIdentity>) -> anyhow::Result<()> {
    let mut cfg = Config::for_workspace(args.workspace);
    cfg.default_timeout = Duration::from_secs(args.default_timeout);
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
    let listener = match args.listen.strip_prefix("unix:") {
        Some(path) => Some(bind_unix(std::path::Path::new(path))?),
        None => None,
    };
    // From here on this thread, too, touches files as the sandbox user.
    if let Some(run_as) = args.run_as {
        run_as.on_this_thread();
    }
    let tunnel =
        if args.egress_tunnel { Some(hermes_sandboxd::relay::Tunnel::listen(args.egress_listen).await?) } else { None };
    if let Some(to) = args.egress_socket.clone() {
        let listen = args.egress_listen;
        hermes_telemetry::tasks::spawn("sandboxd_idle", async move {
            if let Err(e) = hermes_sandboxd::relay::run(listen, to).await {
                tracing::warn!(error = %e, "the egress relay stopped");
            }
        });
    }
    if let Some(listener) = listener {
        if tls.is_some() {
            bail!("--tls-cert-env and --tls-key-env are for a tcp listener");
        }
        if tunnel.is_some() {
            bail!("--egress-tunnel is for a tcp listener (a unix socket's sandbox uses --egress-socket)");
        }
        let sandbox_uids = args.run_as.iter().chain(&args.mcp_as).map(|r| r.uid).collect();
        serve_unix(Daemon::new(cfg), listener, sandbox_uids, shutdown).await
    } else if let Some(addr) = args.listen.strip_prefix("tcp:") {
        let token = token.context("--token-file or --token-env is required with a tcp listener")?;
        cfg.token = Some(token.clone());
        let daemon = match tunnel {
            Some(tunnel) => Daemon::new(cfg).with_egress_tunnel(tunnel),
            None => Daemon::new(cfg),
        };
        serve_tcp(daemon, addr.parse().context("bad tcp address")?, token, tls, shutdown).await
    } else {
        bail!("--listen must be unix:PATH or tcp:ADDR:PORT")
    }
}
