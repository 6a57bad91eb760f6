//! What every backend shares: the per-worker cache of connected daemons, per-sandbox start
//! locks, the socket directory naming, and the idle rule the reapers apply.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Mutex as StdMutex;
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::sync::{Mutex, MutexGuard};

use crate::client::{Address, SandboxClient};
use crate::listening::listen_for_sandbox;
use crate::proto::StatusResponse;
use crate::{Result, SandboxError};

/// The daemon's socket file name inside a sandbox's socket directory.
pub(crate) const SOCKET: &str = "sandboxd.sock";
/// The worker's egress socket in the same directory (sandboxd relays to it).
pub(crate) const EGRESS_SOCKET: &str = "egress.sock";
/// Where the socket directory is mounted inside the sandbox.
pub(crate) const IPC_MOUNT: &str = "/hermes/ipc";
/// How long a new sandbox's daemon may take to answer.
pub(crate) const START_WAIT: Duration = Duration::from_secs(20);
const LOCK_STRIPES: usize = 64;

/// Connected daemons by sandbox name, and the locks serialising a sandbox's start.
pub(crate) struct Daemons {
    clients: StdMutex<HashMap<String, SandboxClient>>,
    /// Striped, so the set never grows with the number of sandboxes.
    start_locks: Vec<Mutex<()>>,
}

impl Default for Daemons {
    fn default() -> Self {
        Self {
            clients: StdMutex::new(HashMap::new()),
            start_locks: (0..LOCK_STRIPES).map(|_| Mutex::new(())).collect(),
        }
    }
}

impl Daemons {
    pub fn cached(&self, name: &str) -> Option<SandboxClient> {
        self.clients.lock().ok()?.get(name).cloned()
    }

    pub fn remember(&self, name: &str, client: SandboxClient) {
        if let Ok(mut clients) = self.clients.lock() {
            clients.insert(name.to_owned(), client);
        }
    }

    pub fn forget(&self, name: &str) {
        if let Ok(mut clients) = self.clients.lock() {
            clients.remove(name);
        }
    }

    /// The start lock of `name` (held while checking, creating and starting it).
    pub async fn start_lock(&self, name: &str) -> MutexGuard<'_, ()> {
        let mut hasher = DefaultHasher::new();
        name.hash(&mut hasher);
        let stripe = usize::try_from(hasher.finish() % LOCK_STRIPES as u64).unwrap_or(0);
        self.start_locks[stripe].lock().await
    }

    /// Connects to the daemon listening in `ipc_dir`, waiting up to `wait` for it to answer.
    pub async fn connect(&self, name: &str, ipc_dir: &Path, wait: Duration, hint: &str) -> Result<SandboxClient> {
        let address = Address::Unix(ipc_dir.join(SOCKET));
        let client = SandboxClient::connect_within(&address, wait)
            .await
            .map_err(|e| SandboxError::Unavailable(format!("sandboxd in {name} does not answer ({e}); {hint}")))?;
        self.remember(name, client.clone());
        Ok(client)
    }
}

/// What a worker holds for the sandboxes it reaches, whichever backend runs them: their
/// connected daemons, the egress and span listeners on their socket directories, and what
/// the last idle sweep kept.
#[derive(Default)]
pub(crate) struct Attached {
    pub daemons: Daemons,
    pub egress: EgressListeners,
    pub spans: crate::span_relay::SpanListeners,
    pub census: Census,
}

impl Attached {
    /// Listens for sandbox `name`'s egress and spans in `ipc_dir`, unless this worker does.
    pub fn listen(&self, name: &str, key: crate::SandboxKey, ipc_dir: &Path) {
        self.egress.ensure(name, key, ipc_dir);
        self.spans.ensure(name, ipc_dir);
    }

    /// Sandbox `name`'s connected daemon, or else the one `connect` brings up (starting the
    /// sandbox as the backend does), then listened on in `ipc_dir`.
    pub async fn open(
        &self,
        name: &str,
        key: crate::SandboxKey,
        ipc_dir: &Path,
        connect: impl Future<Output = Result<SandboxClient>>,
    ) -> Result<SandboxClient> {
        if let Some(client) = self.daemons.cached(name) {
            return Ok(client);
        }
        let client = connect.await?;
        self.listen(name, key, ipc_dir);
        Ok(client)
    }

    /// Sandbox `name`'s connected daemon, or else what `probe` finds without starting it.
    pub async fn running(
        &self,
        name: &str,
        probe: impl Future<Output = Result<Option<SandboxClient>>>,
    ) -> Result<Option<SandboxClient>> {
        match self.daemons.cached(name) {
            Some(client) => Ok(Some(client)),
            None => probe.await,
        }
    }

    /// Drops all this worker holds for sandbox `name` (it is being stopped or removed).
    pub fn detach(&self, name: &str) {
        self.daemons.forget(name);
        self.egress.stop(name);
        self.spans.stop(name);
    }
}

/// The [`crate::Sandboxes`] methods a backend answers from its [`Attached`] alone, written
/// once for the backends that hold one (docker, local). Expanded inside the backend's `impl
/// Sandboxes`, whose `inner.attached` it reaches; `$name` is the backend's method naming the
/// sandbox of a key, and the backend's own `reap_idle` sweeps.
macro_rules! attached_sandboxes {
    ($name:ident) => {
        fn invalidate(&self, key: $crate::SandboxKey) {
            self.inner.attached.daemons.forget(&self.$name(key));
        }

        fn reap_idle(&self) -> futures_util::future::BoxFuture<'_, $crate::Result<usize>> {
            Box::pin(Self::reap_idle(self))
        }

        fn set_egress(&self, handler: std::sync::Arc<dyn $crate::EgressHandler>) {
            self.inner.attached.egress.set_handler(handler);
        }

        fn census(&self) -> Vec<hermes_core::census::LiveSandbox> {
            self.inner.attached.census.snapshot()
        }
    };
}
pub(crate) use attached_sandboxes;

/// The egress listeners this worker holds, one per sandbox it opened.
#[derive(Default)]
pub(crate) struct EgressListeners {
    handler: std::sync::OnceLock<std::sync::Arc<dyn crate::EgressHandler>>,
    listening: StdMutex<HashMap<String, tokio::task::JoinHandle<()>>>,
}

impl EgressListeners {
    pub fn set_handler(&self, handler: std::sync::Arc<dyn crate::EgressHandler>) {
        let _ = self.handler.set(handler);
    }

    /// Listens on `name`'s egress socket unless this worker already does. Another worker may
    /// have listened before: the newest listener takes the path over, so either serves.
    pub fn ensure(&self, name: &str, key: crate::SandboxKey, ipc_dir: &Path) {
        let Some(handler) = self.handler.get().cloned() else { return };
        let Ok(mut listening) = self.listening.lock() else { return };
        if listening.get(name).is_some_and(|task| !task.is_finished()) {
            return;
        }
        let Some(listener) = listen_for_sandbox(&ipc_dir.join(EGRESS_SOCKET), "egress") else { return };
        let task = hermes_telemetry::tasks::spawn("sandbox_socket_listener", async move {
            while let Ok((stream, _)) = listener.accept().await {
                hermes_telemetry::tasks::spawn("sandbox_socket_connection", handler.serve(key, Box::new(stream)));
            }
        });
        listening.insert(name.to_owned(), task);
    }

    pub fn stop(&self, name: &str) {
        if let Some(task) = self.listening.lock().ok().and_then(|mut l| l.remove(name)) {
            task.abort();
        }
    }
}

/// The socket directory of sandbox `name` under `root`: a short stable digest of the name,
/// because a unix socket's path must stay under 108 bytes.
pub(crate) fn ipc_dir(root: &str, name: &str) -> PathBuf {
    let digest = Sha256::digest(name.as_bytes());
    let short: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    PathBuf::from(root).join(short)
}

/// Creates `name`'s socket directory: the sandbox user must create its socket there, and on
/// the host only the worker's user can reach it (the root is 0711, so it cannot be listed).
pub(crate) fn prepare_ipc_dir(root: &str, name: &str, owner: IpcOwner) -> Result<PathBuf> {
    let dir = ipc_dir(root, name);
    let io = |e: std::io::Error| SandboxError::Backend(format!("cannot prepare {}: {e}", dir.display()));
    std::fs::create_dir_all(&dir).map_err(io)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o711)).map_err(io)?;
    match owner {
        // The worker keeps the directory; sticky and writable by all, so sandboxd (root in its
        // container, without CAP_DAC_OVERRIDE) can create its socket and nobody but its owner
        // can remove or replace an entry: the sandbox user cannot swap sandboxd's socket.
        IpcOwner::Worker => std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1733)).map_err(io)?,
        IpcOwner::User { uid, gid } => {
            if std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).is_err() {
                std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).map_err(io)?;
            }
        }
    }
    // A socket left by a dead daemon would make the next one fail to bind.
    match std::fs::remove_file(dir.join(SOCKET)) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(e)),
    }
    Ok(dir)
}

/// Who owns a sandbox's socket directory.
#[derive(Debug, Clone, Copy)]
pub(crate) enum IpcOwner {
    /// The worker (sandboxd runs as root and starts programs as the sandbox user).
    Worker,
    /// The user sandboxd runs as (the local backend: sandboxd and its programs share it).
    User { uid: u32, gid: u32 },
}

/// Whether a sandbox whose daemon reports `status` may be removed: no running command, and
/// idle for `idle_secs`; background processes keep it up to four times that.
/// Sets `hermes_sandboxes_live{backend}` to what an idle sweep saw and kept. A sweep sees
/// every worker's sandboxes on its daemon, node or namespace, so workers sharing one report
/// the same figure: aggregate with `max`, never `sum`.
pub fn record_live(backend: &'static str, live: usize) {
    metrics::gauge!("hermes_sandboxes_live", "backend" => backend).set(live as f64);
}

/// A kept sandbox as the operators' view shows it.
pub fn live_sandbox(
    backend: &'static str,
    name: &str,
    (tenant_id, agent_id): (uuid::Uuid, uuid::Uuid),
    status: &StatusResponse,
) -> hermes_core::census::LiveSandbox {
    hermes_core::census::LiveSandbox {
        tenant_id,
        agent_id,
        backend: backend.to_owned(),
        name: name.to_owned(),
        running_execs: status.running_execs,
        running_processes: status.running_processes,
        idle_secs: status.idle_secs,
    }
}

/// What a backend's last reaper round kept.
#[derive(Default)]
pub struct Census(StdMutex<Vec<hermes_core::census::LiveSandbox>>);

impl Census {
    pub fn replace(&self, live: Vec<hermes_core::census::LiveSandbox>) {
        if let Ok(mut kept) = self.0.lock() {
            *kept = live;
        }
    }

    pub fn snapshot(&self) -> Vec<hermes_core::census::LiveSandbox> {
        self.0.lock().map(|kept| kept.clone()).unwrap_or_default()
    }
}

pub fn is_idle(status: &StatusResponse, idle_secs: u64) -> bool {
    status.running_execs == 0
        && ((status.running_processes == 0 && status.idle_secs >= idle_secs) || status.idle_secs >= idle_secs * 4)
}

/// The effective uid and gid of this process (the owner of `/proc/self`).
pub(crate) fn current_ids() -> (u32, u32) {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").map_or((u32::MAX, u32::MAX), |m| (m.uid(), m.gid()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_paths_stay_short_and_distinct() {
        let a = ipc_dir("/tmp/hermes-sandboxes", &"x".repeat(200));
        let b = ipc_dir("/tmp/hermes-sandboxes", &"y".repeat(200));
        assert_ne!(a, b);
        assert!(a.join(SOCKET).as_os_str().len() < 108);
    }

    #[test]
    fn background_processes_keep_a_sandbox_only_up_to_four_idle_periods() {
        let status = |execs, procs, idle| StatusResponse {
            running_execs: execs,
            running_processes: procs,
            idle_secs: idle,
            ..Default::default()
        };
        assert!(is_idle(&status(0, 0, 60), 60));
        assert!(!is_idle(&status(1, 0, 600), 60), "a running command is never reaped");
        assert!(!is_idle(&status(0, 1, 200), 60));
        assert!(is_idle(&status(0, 1, 240), 60));
        assert!(!is_idle(&status(0, 0, 59), 60));
    }
}
