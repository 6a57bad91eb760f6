//! A scripted server on a loopback port, stopped when dropped: the one way every server here
//! listens, so none repeats the bind, the spawn and the abort.

use std::net::SocketAddr;
use std::sync::Mutex;

use axum::Router;
use axum::serve::Listener;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub(crate) struct Served {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Served {
    /// Serves `app` on a free loopback port.
    pub(crate) async fn start(app: Router) -> std::io::Result<Self> {
        Self::on(TcpListener::bind("127.0.0.1:0").await?, app)
    }

    /// Serves `app` on a free loopback port and writes its base URL (`http://127.0.0.1:PORT`) into
    /// `base`, where the handlers of a server whose answers link back to itself read it.
    pub(crate) async fn start_linking_back(app: Router, base: &Mutex<String>) -> std::io::Result<Self> {
        let served = Self::start(app).await?;
        if let Ok(mut base) = base.lock() {
            *base = served.url("");
        }
        Ok(served)
    }

    /// Serves `app` on `listener` (bound by a caller that needed its address first).
    pub(crate) fn on<L: Listener<Addr = SocketAddr>>(listener: L, app: Router) -> std::io::Result<Self> {
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { addr, task })
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Stops serving and waits until the port is given back (to serve on it again).
    pub(crate) async fn stop(&mut self) {
        self.task.abort();
        let _ = (&mut self.task).await;
    }
}
