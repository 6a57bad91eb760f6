//! The gRPC service: each call touches the activity clock, then runs in the module that owns
//! it (file and checkpoint work on the blocking pool).

use std::future::Future;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hermes_sandbox_proto::TOKEN_HEADER;
use hermes_sandbox_proto::v1::sandbox_server::{Sandbox, SandboxServer};
use hermes_sandbox_proto::v1::{
    CheckpointInfo, CheckpointList, CheckpointRequest, CodeInput, CodeOutput, EditFileRequest, EditResponse,
    EgressInput, EgressOutput, ExecEvent, ExecRequest, ListCheckpointsRequest, ListDirRequest, ListDirResponse,
    ListProcessesRequest, PollProcessRequest, ProcessList, ProcessRef, ProcessStatus, PutFileRequest, PutFileResponse,
    ReadBytesRequest, ReadBytesResponse, ReadFileRequest, ReadFileResponse, ReadFirstRequest, ReadFirstResponse,
    RestoreRequest, RestoreResponse, SearchRequest, SearchResponse, StartProcessRequest, StatusRequest, StatusResponse,
    StdioInput, StdioOutput, UnpackRequest, UnpackResponse, WaitProcessRequest, WriteFileRequest, WriteProcessRequest,
    edit_file_request,
};
use tokio::sync::mpsc;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::{ReceiverStream, TcpListenerStream, UnixListenerStream};
use tonic::{Request, Response, Status, Streaming};

use crate::checkpoints::Checkpoints;
use crate::files::{self, Paths};
use crate::procs::{Keys, Processes};
use crate::{Activity, Config, code, exec, search};

/// The daemon's state, shared by all calls.
#[derive(Clone)]
pub struct Daemon {
    cfg: Arc<Config>,
    paths: Paths,
    activity: Arc<Activity>,
    processes: Arc<Processes>,
    checkpoints: Arc<Checkpoints>,
    /// Programs' connections to the proxy port, for the worker's `Egress` calls (Kubernetes).
    tunnel: Option<Arc<crate::relay::Tunnel>>,
}

impl Daemon {
    pub fn new(cfg: Config) -> Self {
        let paths = Paths {
            workspace: cfg.workspace.clone(),
            writable: cfg.writable.clone(),
            state_dir: cfg.state_dir.clone(),
        };
        let processes = Arc::new(Processes::load(&cfg.state_dir, &cfg.workspace));
        let checkpoints = Arc::new(Checkpoints::new(&cfg.workspace, &cfg.state_dir));
        Self {
            cfg: Arc::new(cfg),
            paths,
            activity: Arc::new(Activity::default()),
            processes,
            checkpoints,
            tunnel: None,
        }
    }

    /// Hands the programs' egress connections to the worker's `Egress` calls.
    pub fn with_egress_tunnel(mut self, tunnel: Arc<crate::relay::Tunnel>) -> Self {
        self.tunnel = Some(tunnel);
        self
    }

    fn server(self) -> SandboxServer<Self> {
        SandboxServer::new(self).max_decoding_message_size(64 * 1024 * 1024).max_encoding_message_size(64 * 1024 * 1024)
    }
}

/// Runs blocking file work off the async threads.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, Status> + Send + 'static) -> Result<T, Status> {
    tokio::task::spawn_blocking(f).await.map_err(|e| Status::internal(format!("the operation failed: {e}")))?
}

type Reply<T> = Result<Response<T>, Status>;

/// The answer to a streaming call: the stream `run` fills from a task of its own (`task`
/// names it), at most `ahead` messages ahead of the client.
fn streamed<T, F>(
    task: &'static str,
    ahead: usize,
    run: impl FnOnce(mpsc::Sender<Result<T, Status>>) -> F,
) -> Reply<ReceiverStream<Result<T, Status>>>
where
    T: Send + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(ahead);
    hermes_telemetry::tasks::spawn(task, run(tx));
    Ok(Response::new(ReceiverStream::new(rx)))
}

#[tonic::async_trait]
impl Sandbox for Daemon {
    type ExecStream = ReceiverStream<Result<ExecEvent, Status>>;

    async fn exec(&self, request: Request<ExecRequest>) -> Reply<Self::ExecStream> {
        self.activity.touch();
        let req = request.into_inner();
        if req.command.trim().is_empty() {
            return Err(Status::invalid_argument("command is empty"));
        }
        let (workspace, timeout, activity) =
            (self.cfg.workspace.clone(), self.cfg.default_timeout, self.activity.clone());
        streamed("sandboxd_exec", 64, |tx| async move { exec::run(req, &workspace, timeout, activity, tx).await })
    }

    type RunCodeStream = ReceiverStream<Result<CodeOutput, Status>>;

    async fn run_code(&self, request: Request<Streaming<CodeInput>>) -> Reply<Self::RunCodeStream> {
        self.activity.touch();
        let (workspace, activity) = (self.cfg.workspace.clone(), self.activity.clone());
        streamed("sandboxd_code", 16, |tx| code::run(request.into_inner(), workspace, activity, tx))
    }

    type StdioStream = ReceiverStream<Result<StdioOutput, Status>>;

    async fn stdio(&self, request: Request<Streaming<StdioInput>>) -> Reply<Self::StdioStream> {
        self.activity.touch();
        let (workspace, activity) = (self.cfg.workspace.clone(), self.activity.clone());
        streamed("sandboxd_stdio", 32, |tx| crate::stdio::run(request.into_inner(), workspace, activity, tx))
    }

    async fn start_process(&self, request: Request<StartProcessRequest>) -> Reply<ProcessStatus> {
        self.activity.touch();
        Ok(Response::new(self.processes.start(request.into_inner()).await?))
    }

    async fn list_processes(&self, request: Request<ListProcessesRequest>) -> Reply<ProcessList> {
        self.activity.touch();
        Ok(Response::new(ProcessList { processes: self.processes.list(&request.into_inner().owner).await }))
    }

    async fn poll_process(&self, request: Request<PollProcessRequest>) -> Reply<ProcessStatus> {
        self.activity.touch();
        let r = request.into_inner();
        let offset = (!r.since_last_poll).then_some(r.offset);
        Ok(Response::new(self.processes.poll(&r.id, &r.owner, offset, r.limit).await?))
    }

    async fn wait_process(&self, request: Request<WaitProcessRequest>) -> Reply<ProcessStatus> {
        let _running = self.activity.begin();
        let r = request.into_inner();
        let timeout = Duration::from_secs(u64::from(r.timeout_secs.clamp(1, 3600)));
        Ok(Response::new(self.processes.wait(&r.id, &r.owner, timeout).await?))
    }

    async fn kill_process(&self, request: Request<ProcessRef>) -> Reply<ProcessStatus> {
        self.activity.touch();
        let r = request.into_inner();
        Ok(Response::new(self.processes.kill(&r.id, &r.owner).await?))
    }

    async fn write_process(&self, request: Request<WriteProcessRequest>) -> Reply<ProcessStatus> {
        self.activity.touch();
        let r = request.into_inner();
        Ok(Response::new(
            self.processes
                .write(&r.id, &r.owner, Keys { data: &r.data, submit: r.submit, close: r.close_stdin })
                .await?,
        ))
    }

    async fn read_file(&self, request: Request<ReadFileRequest>) -> Reply<ReadFileResponse> {
        self.activity.touch();
        let r = request.into_inner();
        let path = self.paths.readable(&r.path)?;
        let probe = path.clone();
        if blocking(move || Ok(crate::extract::kind_of(&probe))).await?.is_some() {
            // A document: its text, read out by a child process as the sandbox user.
            let text = crate::extract::text_of(&path).await?;
            return Ok(Response::new(blocking(move || files::page(&text, r.offset, r.limit)).await?));
        }
        Ok(Response::new(blocking(move || files::read_lines(&path, r.offset, r.limit)).await?))
    }

    async fn put_file(&self, request: Request<PutFileRequest>) -> Reply<PutFileResponse> {
        self.activity.touch();
        let r = request.into_inner();
        let dir = self.paths.writable(&r.dir)?;
        let size = r.data.len() as u64;
        let (path, existed, dir_bytes) = blocking(move || {
            let (path, existed) = crate::inbox::put_file(&dir, &r.name, &r.data)?;
            Ok((path, existed, crate::inbox::dir_bytes(&dir)))
        })
        .await?;
        Ok(Response::new(PutFileResponse { path: path.display().to_string(), size, existed, dir_bytes }))
    }

    async fn read_bytes(&self, request: Request<ReadBytesRequest>) -> Reply<ReadBytesResponse> {
        let r = request.into_inner();
        let path = self.paths.readable(&r.path)?;
        let data = blocking(move || files::read_bytes(&path, r.max_bytes)).await?;
        Ok(Response::new(ReadBytesResponse { data }))
    }

    async fn read_first(&self, request: Request<ReadFirstRequest>) -> Reply<ReadFirstResponse> {
        let r = request.into_inner();
        let workspace = self.cfg.workspace.clone();
        let (path, content) = blocking(move || Ok(files::read_first(&workspace, &r.paths, r.max_bytes))).await?;
        Ok(Response::new(ReadFirstResponse { path, content }))
    }

    async fn list_dir(&self, request: Request<ListDirRequest>) -> Reply<ListDirResponse> {
        let path = self.paths.readable(&request.into_inner().path).unwrap_or_else(|_| self.cfg.workspace.clone());
        Ok(Response::new(ListDirResponse { names: blocking(move || Ok(files::list_dir(&path))).await? }))
    }

    async fn write_file(&self, request: Request<WriteFileRequest>) -> Reply<EditResponse> {
        self.activity.touch();
        let r = request.into_inner();
        let path = self.paths.writable(&r.path)?;
        Ok(Response::new(blocking(move || files::write_file(&path, &r.content)).await?))
    }

    async fn edit_file(&self, request: Request<EditFileRequest>) -> Reply<EditResponse> {
        self.activity.touch();
        let r = request.into_inner();
        let path = self.paths.writable(&r.path)?;
        let edit = r.edit.ok_or_else(|| Status::invalid_argument("say what to change"))?;
        Ok(Response::new(
            blocking(move || match edit {
                edit_file_request::Edit::Replace(replace) => files::replace(&path, &replace),
                edit_file_request::Edit::UnifiedDiff(diff) => files::apply_unified(&path, &diff),
            })
            .await?,
        ))
    }

    async fn unpack(&self, request: Request<UnpackRequest>) -> Reply<UnpackResponse> {
        // Counted as running work, so the idle reaper leaves the sandbox alone meanwhile.
        let _running = self.activity.begin();
        let r = request.into_inner();
        let archive = self.paths.readable(&r.path)?;
        let dest = match r.dest.trim() {
            "" => crate::unpack::default_dest(&archive).to_string_lossy().into_owned(),
            dest => dest.to_owned(),
        };
        let dest = self.paths.writable(&dest)?;
        Ok(Response::new(crate::unpack::run(&archive, &dest).await?))
    }

    async fn search(&self, request: Request<SearchRequest>) -> Reply<SearchResponse> {
        self.activity.touch();
        let r = request.into_inner();
        let root = if r.path.is_empty() { self.cfg.workspace.clone() } else { self.paths.readable(&r.path)? };
        let state = self.cfg.state_dir.clone();
        Ok(Response::new(blocking(move || search::search(&r, &root, &state)).await?))
    }

    async fn checkpoint(&self, request: Request<CheckpointRequest>) -> Reply<CheckpointInfo> {
        self.activity.touch();
        let (cps, reason) = (self.checkpoints.clone(), request.into_inner().reason);
        Ok(Response::new(blocking(move || cps.create(&reason)).await?))
    }

    async fn list_checkpoints(&self, _: Request<ListCheckpointsRequest>) -> Reply<CheckpointList> {
        let cps = self.checkpoints.clone();
        Ok(Response::new(CheckpointList { checkpoints: blocking(move || Ok(cps.list())).await? }))
    }

    async fn restore(&self, request: Request<RestoreRequest>) -> Reply<RestoreResponse> {
        self.activity.touch();
        let (cps, id) = (self.checkpoints.clone(), request.into_inner().id);
        Ok(Response::new(blocking(move || cps.restore(&id)).await?))
    }

    async fn status(&self, _: Request<StatusRequest>) -> Reply<StatusResponse> {
        Ok(Response::new(StatusResponse {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            idle_secs: self.activity.idle_secs(),
            running_execs: self.activity.running(),
            running_processes: self.processes.running().await,
        }))
    }

    type EgressStream = ReceiverStream<Result<EgressOutput, Status>>;

    /// Not activity: a program's traffic does not keep an idle sandbox alive by itself.
    async fn egress(&self, request: Request<Streaming<EgressInput>>) -> Reply<Self::EgressStream> {
        let Some(tunnel) = self.tunnel.clone() else {
            return Err(Status::failed_precondition("this sandbox's egress goes through its socket directory"));
        };
        streamed("sandboxd_egress", 16, |tx| async move { tunnel.serve(request.into_inner(), tx).await })
    }
}

/// Serves on a unix socket at `path` (replacing a stale one) until `shutdown`.
/// Binds the unix socket (before sandboxd takes the sandbox user's file identity, so the socket
/// is its own and, in the sticky socket directory, nobody else can remove or replace it). Anyone
/// may connect (the worker may run as any user) except the sandbox user: see [`serve_unix`].
pub fn bind_unix(path: &Path) -> anyhow::Result<tokio::net::UnixListener> {
    let _ = std::fs::remove_file(path);
    let listener = tokio::net::UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))?;
    Ok(listener)
}

/// Serves on `listener` until `shutdown`, refusing connections from `sandbox_uids` (the
/// programs in the sandbox: the agent's, and the MCP servers'): only the worker drives
/// sandboxd.
pub async fn serve_unix(
    daemon: Daemon,
    listener: tokio::net::UnixListener,
    sandbox_uids: Vec<u32>,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    tracing::info!(socket = ?listener.local_addr().ok(), "sandboxd listening");
    let incoming = UnixListenerStream::new(listener).filter(move |conn| {
        let refused = match conn {
            Ok(stream) if !sandbox_uids.is_empty() => {
                stream.peer_cred().map_or(true, |peer| sandbox_uids.contains(&peer.uid()))
            }
            _ => false,
        };
        if refused {
            tracing::warn!("refused a connection from the sandbox's own user");
        }
        !refused
    });
    tonic::transport::Server::builder()
        .trace_fn(rpc_span)
        .add_service(daemon.server())
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await?;
    Ok(())
}

/// The certificate and key (PEM) sandboxd's TCP listener presents: the worker trusts exactly
/// that certificate, so the calls, and the token they carry, are encrypted and go to this daemon.
#[derive(Clone)]
pub struct TlsIdentity {
    pub cert_pem: String,
    pub key_pem: String,
}

/// How long a TLS handshake may take (a client that stalls holds only its own connection).
const TLS_HANDSHAKE: Duration = Duration::from_secs(10);

/// Serves on TCP, every call carrying the sandbox's token, over TLS with `tls`, until `shutdown`.
pub async fn serve_tcp(
    daemon: Daemon,
    addr: std::net::SocketAddr,
    token: String,
    tls: Option<TlsIdentity>,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    // Keepalive: the waiting `Egress` calls of a worker that vanished end, and their queue
    // moves on to another worker's.
    let mut server = tonic::transport::Server::builder()
        .http2_keepalive_interval(Some(Duration::from_secs(30)))
        .http2_keepalive_timeout(Some(Duration::from_secs(10)));
    if let Some(tls) = tls {
        let identity = tonic::transport::Identity::from_pem(tls.cert_pem, tls.key_pem);
        let config = tonic::transport::ServerTlsConfig::new().identity(identity).timeout(TLS_HANDSHAKE);
        server = server.tls_config(config).map_err(|e| anyhow::anyhow!("the TLS certificate or key: {e}"))?;
    }
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(%addr, "sandboxd listening");
    let check = move |req: Request<()>| -> Result<Request<()>, Status> {
        let presented = req.metadata().get(TOKEN_HEADER).and_then(|v| v.to_str().ok()).unwrap_or_default();
        if constant_time_eq(presented.as_bytes(), token.as_bytes()) {
            Ok(req)
        } else {
            Err(Status::unauthenticated("wrong sandbox token"))
        }
    };
    let service = tonic::service::interceptor::InterceptedService::new(daemon.server(), check);
    server
        .trace_fn(rpc_span)
        .add_service(service)
        .serve_with_incoming_shutdown(without_delay(listener), shutdown)
        .await?;
    Ok(())
}

/// The workers' connections, with Nagle's algorithm off: small answers (a command's next
/// chunk, an egress connection's bytes) would otherwise wait for the worker's delayed ACK,
/// 40 ms apiece (every command on Kubernetes took 44 ms instead of 2.5).
fn without_delay(
    listener: tokio::net::TcpListener,
) -> impl tokio_stream::Stream<Item = std::io::Result<tokio::net::TcpStream>> {
    TcpListenerStream::new(listener).map(|accepted| {
        if let Ok(stream) = &accepted
            && let Err(e) = stream.set_nodelay(true)
        {
            tracing::debug!(error = %e, "cannot turn Nagle's algorithm off");
        }
        accepted
    })
}

/// The server span of one call (OpenTelemetry RPC conventions), in the worker's trace when
/// the call carries a `traceparent`.
fn rpc_span(request: &http::Request<()>) -> tracing::Span {
    let span = hermes_telemetry::context::rpc_span(request.uri().path(), "server");
    hermes_telemetry::context::adopt(&span, hermes_telemetry::context::from_headers(request.headers()).as_ref());
    span
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use tokio_stream::StreamExt;

    #[tokio::test]
    async fn a_workers_connection_sends_small_answers_without_waiting() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut incoming = std::pin::pin!(super::without_delay(listener));
        let _worker = tokio::net::TcpStream::connect(addr).await.unwrap();
        let accepted = incoming.next().await.unwrap().unwrap();
        assert!(accepted.nodelay().unwrap(), "Nagle's algorithm is off");
    }
}
