//! One intercepted tunnel: the sandbox's `CONNECT` to a host some secret may go to. The proxy
//! answers the sandbox's TLS with a certificate its CA made for that host, verifies the real
//! host's certificate on its own connection onward, and passes each request through
//! [`rewrite`](crate::rewrite) and each answer through [`redact`](crate::redact). The sandbox
//! speaks HTTP/2 or HTTP/1.1, as its TLS agreed; onward it is always HTTP/1.1.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use http::{Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Mutex;
use tokio_rustls::TlsAcceptor;

use crate::redact::{RedactingBody, Redactor};
use crate::rewrite::{body_fields, rewrite_body, rewrite_head};
use crate::{Authority, REFUSED_HEADER, Secret, SetupError, Upstream};

/// The most of a request body read to replace a named field in it.
const MAX_BODY: usize = 1 << 20;

type Boxed = BoxBody<Bytes, hyper::Error>;

/// Why an intercepted tunnel ended badly.
#[derive(Debug, thiserror::Error)]
pub enum InterceptError {
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error("the sandbox's TLS: {0}")]
    Sandbox(std::io::Error),
    #[error("TLS to the host: {0}")]
    Host(std::io::Error),
    #[error("HTTP: {0}")]
    Http(#[from] hyper::Error),
}

/// Serves the tunnel `client` (after the proxy's `200 Connection established`) to `host`, over
/// `onward`, a connection to one of the host's allowed addresses, with `secrets` (those that may
/// go to `host`).
pub async fn intercept<C, U>(
    client: C,
    onward: U,
    host: &str,
    secrets: Vec<Secret>,
    (authority, upstream): (&Authority, &Upstream),
) -> Result<(), InterceptError>
where
    C: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    U: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let config = authority.server_config(host)?;
    // The real host first: a certificate that fails verification gets the sandbox a clear
    // answer, and no request is ever sent there.
    let verified = upstream.connect(host, onward).await;
    let sandbox = TlsAcceptor::from(config).accept(client).await.map_err(InterceptError::Sandbox)?;
    let h2 = sandbox.get_ref().1.alpn_protocol() == Some(b"h2".as_slice());
    let sandbox = Sandbox { io: TokioIo::new(sandbox), h2 };
    let tls = match verified {
        Ok(tls) => tls,
        Err(e) => {
            let why = format!("the certificate of {host} failed verification: {e}");
            let refuse = service_fn(move |_| {
                let why = why.clone();
                async move { Ok::<_, Infallible>(refusal(StatusCode::BAD_GATEWAY, &why)) }
            });
            sandbox.serve(refuse).await?;
            return Ok(());
        }
    };
    let (sender, onward) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
    let forward = Arc::new(Forward { sender: Mutex::new(sender), secrets, host: host.to_owned() });
    let service = service_fn(move |request| {
        let forward = forward.clone();
        async move { Ok::<_, Infallible>(forward.pass(request).await) }
    });
    // The host's side runs beside the sandbox's; when the sandbox's ends, its service and the
    // sender in it are dropped, and the host's side ends too.
    let (served, onward) = tokio::join!(sandbox.serve(service), onward);
    if let Err(e) = onward {
        tracing::debug!(error = %e, "egress: the host's connection ended");
    }
    served?;
    Ok(())
}

/// The sandbox's side of the tunnel, and whether its TLS agreed on HTTP/2.
struct Sandbox<S> {
    io: TokioIo<S>,
    h2: bool,
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> Sandbox<S> {
    async fn serve<F, R>(self, service: F) -> Result<(), hyper::Error>
    where
        F: hyper::service::Service<Request<Incoming>, Response = Response<Boxed>, Error = Infallible, Future = R>,
        R: Future<Output = Result<Response<Boxed>, Infallible>> + Send + 'static,
    {
        if self.h2 {
            hyper::server::conn::http2::Builder::new(TokioExecutor::new()).serve_connection(self.io, service).await
        } else {
            hyper::server::conn::http1::Builder::new().serve_connection(self.io, service).await
        }
    }
}

/// A request as it goes onward over HTTP/1.1: an HTTP/2 request's authority becomes its `Host`,
/// its target the path, and its cookies one header again (RFC 9113, 8.2.3).
fn as_http1(parts: &mut http::request::Parts) {
    if parts.version != http::Version::HTTP_2 {
        return;
    }
    parts.version = http::Version::HTTP_11;
    if let Some(authority) = parts.uri.authority()
        && !parts.headers.contains_key(http::header::HOST)
        && let Ok(host) = HeaderValue::from_str(authority.as_str())
    {
        parts.headers.insert(http::header::HOST, host);
    }
    let target = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    if let Ok(origin) = target.parse() {
        parts.uri = origin;
    }
    let cookies: Vec<&str> =
        parts.headers.get_all(http::header::COOKIE).iter().filter_map(|v| v.to_str().ok()).collect();
    if cookies.len() > 1
        && let Ok(joined) = HeaderValue::from_str(&cookies.join("; "))
    {
        parts.headers.insert(http::header::COOKIE, joined);
    }
}

/// An answer as it goes back over HTTP/2, which has no connection-specific headers.
fn as_http2(parts: &mut http::response::Parts) {
    for name in ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"] {
        parts.headers.remove(name);
    }
    parts.version = http::Version::HTTP_2;
}

/// An answer from the proxy itself.
fn refusal(status: StatusCode, why: &str) -> Response<Boxed> {
    let mut response =
        Response::new(Full::new(Bytes::from(format!("{why}\n"))).map_err(|never| match never {}).boxed());
    *response.status_mut() = status;
    let header = HeaderValue::from_str(why).unwrap_or(HeaderValue::from_static("refused"));
    response.headers_mut().insert(REFUSED_HEADER, header);
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

struct Forward {
    sender: Mutex<SendRequest<Boxed>>,
    secrets: Vec<Secret>,
    host: String,
}

impl Forward {
    async fn pass(&self, request: Request<Incoming>) -> Response<Boxed> {
        self.try_pass(request).await.unwrap_or_else(|(status, why)| refusal(status, &why))
    }

    async fn try_pass(&self, request: Request<Incoming>) -> Result<Response<Boxed>, (StatusCode, String)> {
        let (mut parts, body) = request.into_parts();
        let h2 = parts.version == http::Version::HTTP_2;
        as_http1(&mut parts);
        rewrite_head(&mut parts, &self.secrets).map_err(|r| (StatusCode::FORBIDDEN, r.0))?;
        let body = if body_fields(&self.secrets).is_empty() {
            body.boxed()
        } else {
            let read = Limited::new(body, MAX_BODY).collect().await;
            let read = read.map_err(|_| {
                (StatusCode::PAYLOAD_TOO_LARGE, format!("a body sent to {} may be at most 1 MiB", self.host))
            })?;
            let read = read.to_bytes();
            let content_type = parts.headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok());
            let read = rewrite_body(content_type, &read, &self.secrets).map(Bytes::from).unwrap_or(read);
            parts.headers.insert(CONTENT_LENGTH, HeaderValue::from(read.len()));
            Full::new(read).map_err(|never| match never {}).boxed()
        };
        let unanswered = |e: hyper::Error| (StatusCode::BAD_GATEWAY, format!("{} did not answer: {e}", self.host));
        let response = {
            let mut sender = self.sender.lock().await;
            sender.ready().await.map_err(unanswered)?;
            sender.send_request(Request::from_parts(parts, body)).await.map_err(unanswered)?
        };
        let (mut parts, body) = response.into_parts();
        if h2 {
            as_http2(&mut parts);
        }
        // A compressed answer cannot be scanned for the value: it does not reach the sandbox.
        let encoding = parts.headers.get(CONTENT_ENCODING).and_then(|v| v.to_str().ok()).unwrap_or("identity");
        if !encoding.eq_ignore_ascii_case("identity") {
            let why = format!("{} answered {encoding}-encoded although asked not to: it cannot be checked", self.host);
            return Err((StatusCode::BAD_GATEWAY, why));
        }
        let redactor = Redactor::new(&self.secrets);
        redactor.headers(&mut parts.headers);
        if redactor.changes_lengths() {
            parts.headers.remove(CONTENT_LENGTH);
        }
        Ok(Response::from_parts(parts, RedactingBody::new(body, redactor).boxed()))
    }
}
