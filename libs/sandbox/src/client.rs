//! The worker's side of the sandbox protocol: a gRPC client to one sandbox's daemon, over a
//! unix socket (Docker, local) or TCP with the sandbox's token (Kubernetes).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use hermes_sandbox_proto::TOKEN_HEADER;
use hermes_sandbox_proto::v1::sandbox_client::SandboxClient as Grpc;
use hermes_sandbox_proto::v1::{ExecRequest as WireExec, StatusRequest, StatusResponse, exec_event};
use hyper_util::rt::TokioIo;
use tonic::metadata::AsciiMetadataValue;
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Uri};
use tonic::{Code, Request, Status};

use crate::rpc_trace::Traced;
use crate::{ExecOutput, ExecRequest, RAW_OUTPUT_CAP, Result, SandboxError};

/// Adds the sandbox's token to every call (when it has one).
#[derive(Clone)]
pub struct TokenAuth(Option<AsciiMetadataValue>);

impl Interceptor for TokenAuth {
    fn call(&mut self, mut request: Request<()>) -> std::result::Result<Request<()>, Status> {
        if let Some(token) = &self.0 {
            request.metadata_mut().insert(TOKEN_HEADER, token.clone());
        }
        Ok(request)
    }
}

/// The generated client with the token interceptor: every protocol call is on it.
pub type ProtocolClient = Grpc<InterceptedService<Traced, TokenAuth>>;

/// Where a sandbox's daemon listens.
#[derive(Debug, Clone)]
pub enum Address {
    Unix(PathBuf),
    /// `tls`: the daemon must present exactly that certificate (the url is then `https://`).
    Tcp {
        url: String,
        token: String,
        tls: Option<PinnedCert>,
    },
}

/// The one certificate a TCP daemon may present (PEM), self-signed for `name`: no other is
/// trusted, and a daemon that answers without TLS is refused.
#[derive(Debug, Clone)]
pub struct PinnedCert {
    pub pem: String,
    pub name: String,
}

/// A connection to one sandbox's daemon (cheap to clone; calls share one HTTP/2 connection).
#[derive(Clone)]
pub struct SandboxClient {
    grpc: ProtocolClient,
}

const MAX_MESSAGE: usize = 64 * 1024 * 1024;
/// How long after a command's own timeout the daemon has to report its end.
const EXEC_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// Whether a failed call never reached a daemon: the connection to it could not be made
/// (nothing listens on the socket any more, or the socket is gone), or the daemon was gone
/// before the request could be written (a cached connection to a sandbox that died).
fn never_delivered(status: &Status) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound | std::io::ErrorKind::BrokenPipe
            )
        {
            return true;
        }
        source = e.source();
    }
    false
}

/// Whether a call failed on the connection (not with the daemon's own answer).
fn connection_failed(status: &Status) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
    while let Some(e) = source {
        if e.downcast_ref::<std::io::Error>().is_some() {
            return true;
        }
        source = e.source();
    }
    false
}

/// Maps a daemon's answer to the error the tools report.
pub fn status_error(status: Status) -> SandboxError {
    if never_delivered(&status) {
        return SandboxError::Unavailable(format!("cannot reach sandboxd: {}", status.message()));
    }
    match status.code() {
        Code::InvalidArgument
        | Code::NotFound
        | Code::FailedPrecondition
        | Code::PermissionDenied
        | Code::OutOfRange
        | Code::ResourceExhausted
        | Code::AlreadyExists => SandboxError::Refused(status.message().to_owned()),
        Code::Unavailable | Code::Cancelled | Code::DeadlineExceeded => {
            SandboxError::Unavailable(status.message().to_owned())
        }
        _ => SandboxError::Backend(format!("{}: {}", status.code(), status.message())),
    }
}

/// `endpoint` speaking TLS to a daemon that must present `pinned`. tonic speaks TLS only to
/// `https://` addresses (plaintext to `http://` ones, whatever the TLS settings), so any other
/// is refused here.
fn pinned_tls(endpoint: Endpoint, pinned: &PinnedCert) -> Result<Endpoint> {
    if endpoint.uri().scheme_str() != Some("https") {
        return Err(SandboxError::Backend(format!(
            "a sandbox reached over TLS needs an https address: {}",
            endpoint.uri()
        )));
    }
    let tls =
        ClientTlsConfig::new().ca_certificate(Certificate::from_pem(&pinned.pem)).domain_name(pinned.name.clone());
    endpoint.tls_config(tls).map_err(|e| SandboxError::Backend(format!("the sandbox's TLS settings: {e}")))
}

/// A connection that could not be made, with why (a TLS refusal names the certificate's fault).
fn unavailable_with_cause(e: &tonic::transport::Error) -> SandboxError {
    use std::fmt::Write;
    let mut message = format!("cannot reach sandboxd: {e}");
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let text = cause.to_string();
        // Wrappers often repeat their cause's text.
        if !message.ends_with(&text) {
            let _ = write!(message, ": {text}");
        }
        source = cause.source();
    }
    SandboxError::Unavailable(message)
}

impl SandboxClient {
    /// Connects to a daemon (once; the caller retries while a sandbox starts).
    pub async fn connect(address: &Address) -> Result<Self> {
        Self::connect_tuned(address, |endpoint| endpoint).await
    }

    /// A connection of its own for the sandbox's egress tunnel (see `egress_tunnel`): a program
    /// that stops reading then stalls only its own stream's window, never the calls of the
    /// tools, and a worker that vanished is noticed by keepalive.
    pub async fn connect_for_egress(address: &Address) -> Result<Self> {
        Self::connect_tuned(address, |endpoint| {
            endpoint
                .initial_stream_window_size(256 * 1024)
                .initial_connection_window_size(4 * 1024 * 1024)
                .http2_keep_alive_interval(Duration::from_secs(30))
                .keep_alive_timeout(Duration::from_secs(10))
        })
        .await
    }

    async fn connect_tuned(address: &Address, tune: fn(Endpoint) -> Endpoint) -> Result<Self> {
        let unavailable = |e: tonic::transport::Error| SandboxError::Unavailable(format!("cannot reach sandboxd: {e}"));
        let (channel, token) = match address {
            Address::Unix(path) => {
                let path = path.clone();
                let channel =
                    tune(Endpoint::from_static("http://sandboxd.local"))
                        .connect_timeout(Duration::from_secs(5))
                        .connect_with_connector(tower::service_fn(move |_: Uri| {
                            let path = path.clone();
                            async move {
                                Ok::<_, std::io::Error>(TokioIo::new(tokio::net::UnixStream::connect(path).await?))
                            }
                        }))
                        .await
                        .map_err(unavailable)?;
                (channel, None)
            }
            Address::Tcp { url, token, tls } => {
                let mut endpoint = Endpoint::from_shared(url.clone())
                    .map_err(|e| SandboxError::Backend(format!("bad sandbox address {url}: {e}")))?
                    .connect_timeout(Duration::from_secs(5))
                    // Small calls and answers go at once (sandboxd's side does the same).
                    .tcp_nodelay(true);
                if let Some(pinned) = tls {
                    endpoint = pinned_tls(endpoint, pinned)?;
                }
                endpoint = tune(endpoint);
                let token = AsciiMetadataValue::try_from(token.as_str())
                    .map_err(|_| SandboxError::Backend("the sandbox token is not ASCII".into()))?;
                (endpoint.connect().await.map_err(|e| unavailable_with_cause(&e))?, Some(token))
            }
        };
        let grpc = Grpc::with_interceptor(Traced(channel), TokenAuth(token))
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE);
        Ok(Self { grpc })
    }

    /// Connects, retrying until `wait` has passed (a daemon that is starting).
    pub async fn connect_within(address: &Address, wait: Duration) -> Result<Self> {
        let started = Instant::now();
        loop {
            match Self::connect(address).await {
                Ok(c) => match c.status().await {
                    Ok(_) => return Ok(c),
                    Err(e) if started.elapsed() >= wait => return Err(e),
                    Err(_) => {}
                },
                Err(e) if started.elapsed() >= wait => return Err(e),
                Err(_) => {}
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// The raw protocol client, for calls without a helper here.
    pub fn grpc(&self) -> ProtocolClient {
        self.grpc.clone()
    }

    pub async fn status(&self) -> Result<StatusResponse> {
        Ok(self.grpc().status(StatusRequest {}).await.map_err(status_error)?.into_inner())
    }

    /// Runs a command to its end, handing each piece of output to `on_output` as it comes.
    /// Dropping the future closes the stream, and the daemon kills the command's process group.
    /// The daemon is not trusted to keep its limits (code in the sandbox may have replaced it):
    /// more output than the cap, or no end by the command's timeout and a grace, fails the
    /// call here, so a hostile daemon can waste one turn but never the worker's memory.
    pub async fn exec(&self, request: ExecRequest, on_output: &mut (dyn FnMut(&[u8]) + Send)) -> Result<ExecOutput> {
        let deadline = request.timeout + EXEC_GRACE;
        match tokio::time::timeout(deadline, self.exec_unbounded(request, on_output)).await {
            Ok(result) => result,
            Err(_) => Err(SandboxError::Backend(format!(
                "the sandbox did not end the command within {} s of its timeout",
                EXEC_GRACE.as_secs()
            ))),
        }
    }

    async fn exec_unbounded(
        &self,
        request: ExecRequest,
        on_output: &mut (dyn FnMut(&[u8]) + Send),
    ) -> Result<ExecOutput> {
        let started = Instant::now();
        let wire = WireExec {
            command: request.command,
            workdir: request.workdir.unwrap_or_default(),
            timeout_secs: u32::try_from(request.timeout.as_secs().max(1)).unwrap_or(u32::MAX),
            max_output_bytes: RAW_OUTPUT_CAP as u64,
            env: request.env.into_iter().collect(),
        };
        // A connection that fails before the daemon answered: the daemon went away (a command it
        // had received dies with its stream), so the caller may look for the sandbox again.
        let mut stream = match self.grpc().exec(wire).await {
            Ok(response) => response.into_inner(),
            Err(status) if connection_failed(&status) => {
                return Err(SandboxError::Unavailable(format!("the connection to sandboxd failed: {status}")));
            }
            Err(status) => return Err(status_error(status)),
        };
        let mut output = Vec::new();
        loop {
            let event = match stream.message().await {
                Ok(Some(e)) => e,
                Ok(None) => {
                    return Err(SandboxError::Backend("the sandbox ended the command without an exit status".into()));
                }
                // The daemon's own answer (the command could not start, ...).
                Err(status) if !matches!(status.code(), Code::Unavailable | Code::Unknown | Code::Internal) => {
                    return Err(status_error(status));
                }
                // The command may have run: never report this as retryable.
                Err(status) => {
                    return Err(SandboxError::Backend(format!(
                        "the connection to the sandbox broke while the command ran: {}",
                        status.message()
                    )));
                }
            };
            match event.event {
                Some(exec_event::Event::Output(bytes)) => {
                    // An honest daemon stops at the cap and says `truncated`.
                    if output.len() + bytes.len() > RAW_OUTPUT_CAP {
                        return Err(SandboxError::Backend(format!(
                            "the sandbox sent more than {RAW_OUTPUT_CAP} bytes of output"
                        )));
                    }
                    on_output(&bytes);
                    output.extend_from_slice(&bytes);
                }
                Some(exec_event::Event::Exit(exit)) => {
                    let mut text = String::from_utf8_lossy(&output).into_owned();
                    if exit.truncated {
                        text.push_str("\n[output truncated]");
                    }
                    if exit.stopped_leftovers {
                        text.push_str(
                            "\n[processes the command left running were stopped; use terminal with background=true \
                             for servers and long jobs]",
                        );
                    }
                    return Ok(ExecOutput {
                        exit_code: exit.exit_code.map(i64::from),
                        output: text,
                        timed_out: exit.timed_out,
                        duration: started.elapsed(),
                    });
                }
                None => {}
            }
        }
    }
}
