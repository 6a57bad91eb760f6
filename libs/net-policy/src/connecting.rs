//! The connection-time half of the outbound [`Policy`]: a DNS resolver that admits a name's
//! private addresses only when the operator trusts the name, and a connector layer that holds
//! a name trusted on some ports only (`vllm.internal:8000`) to those ports.
//!
//! reqwest tells its resolver the name but not the port, and tells connector layers neither
//! (only the connection they get back says which address and port it reached). So the
//! resolver leaves the port-bound name it admitted in a slot the layer opened around that one
//! connection attempt, and the layer checks the connected port before any request is sent.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use hyper_util::client::legacy::connect::{Connection, HttpInfo};

use crate::policy::{NameTrust, Policy};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The name a connection attempt resolved with private addresses admitted only for the
/// ports the operator listed it with.
type Slot = Arc<Mutex<Option<String>>>;

tokio::task_local! {
    static PORT_BOUND: Slot;
}

/// Resolves names to public addresses only, unless the operator trusts the name (a reqwest
/// resolver: every address a name resolves to is checked, on every connection).
pub(crate) struct Resolver(pub(crate) Arc<Policy>);

impl reqwest::dns::Resolve for Resolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_ascii_lowercase();
        let private_allowed = match self.0.name_trust(&host) {
            NameTrust::AllPorts => true,
            // Only where [`PortCheck`] will see the port; elsewhere the name stays public-only.
            NameTrust::SomePorts => {
                PORT_BOUND.try_with(|slot| slot.lock().map(|mut s| *s = Some(host.clone())).is_ok()).unwrap_or(false)
            }
            NameTrust::Untrusted => false,
        };
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|a| private_allowed || crate::is_public(a.ip()))
                .collect();
            if addrs.is_empty() {
                return Err(format!("{host} has no public address").into());
            }
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The connector layer that refuses a connection to a private address of a port-bound name
/// on a port the operator did not list (the connection is dropped before a request is sent).
#[derive(Clone)]
pub(crate) struct PortCheck(pub(crate) Arc<Policy>);

impl<S> tower::Layer<S> for PortCheck {
    type Service = PortChecked<S>;

    fn layer(&self, inner: S) -> Self::Service {
        PortChecked { inner, policy: self.0.clone() }
    }
}

#[derive(Clone)]
pub(crate) struct PortChecked<S> {
    inner: S,
    policy: Arc<Policy>,
}

impl<S, R> tower::Service<R> for PortChecked<S>
where
    S: tower::Service<R>,
    S::Response: Connection + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, destination: R) -> Self::Future {
        let slot = Slot::default();
        // The resolver runs while the attempt is polled; `call` too, should it resolve eagerly.
        let connecting = PORT_BOUND.sync_scope(slot.clone(), || self.inner.call(destination));
        let policy = self.policy.clone();
        Box::pin(async move {
            let conn = PORT_BOUND.scope(slot.clone(), connecting).await.map_err(Into::into)?;
            let port_bound = slot.lock().map_err(|_| "a connection check failed")?.take();
            match port_bound {
                Some(name) => refuse_port(&policy, &name, &conn).map_or(Ok(conn), |why| Err(why.into())),
                None => Ok(conn),
            }
        })
    }
}

/// Why `conn`, made to the port-bound `name`, may not be used (`None`: it may): it reached a
/// private address on a port the operator did not list with the name.
fn refuse_port(policy: &Policy, name: &str, conn: &impl Connection) -> Option<String> {
    let mut extras = http::Extensions::new();
    conn.connected().get_extras(&mut extras);
    let Some(peer) = extras.get::<HttpInfo>().map(HttpInfo::remote_addr) else {
        return Some(format!("the address {name} was reached at is unknown"));
    };
    if crate::is_public(peer.ip()) || policy.trusts(name, Some(peer.port())) {
        return None;
    }
    Some(format!("{name} is trusted on other ports than {}, and {} is not a public address", peer.port(), peer.ip()))
}
