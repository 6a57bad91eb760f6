//! What the chat platform emulators (Slack, WeCom, the WeCom bot) share: their state behind
//! one lock, served to their handlers and read by the test, and the loopback address they
//! serve on until the process ends. Clones share both.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;

pub(crate) struct Emulated<I> {
    pub(crate) inner: Arc<Mutex<I>>,
    addr: SocketAddr,
}

impl<I> Clone for Emulated<I> {
    fn clone(&self) -> Self {
        Self { inner: self.inner.clone(), addr: self.addr }
    }
}

impl<I: Send + 'static> Emulated<I> {
    /// Serves `routes` over `inner` on a free loopback port.
    pub(crate) async fn start(inner: I, routes: Router<Arc<Mutex<I>>>) -> std::io::Result<Self> {
        let inner = Arc::new(Mutex::new(inner));
        let addr = crate::serve_loopback(routes.with_state(inner.clone())).await?;
        Ok(Self { inner, addr })
    }

    /// Runs `f` on the state (a handler that panicked leaves it usable: the test goes on).
    pub(crate) fn with<T>(&self, f: impl FnOnce(&mut I) -> T) -> T {
        f(&mut self.inner.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// `{scheme}://127.0.0.1:PORT{path}`.
    pub(crate) fn url(&self, scheme: &str, path: &str) -> String {
        format!("{scheme}://{}{path}", self.addr)
    }
}
