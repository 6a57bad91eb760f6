//! Docker backend (bollard): one hardened container per tenant-agent, running sandboxd.
//!
//! Hardening: all capabilities dropped, `no-new-privileges`, read-only root, tmpfs `/tmp`
//! and `/run`, PID limit, memory and CPU limits, no network, non-root user, an init process
//! reaping zombies, and a named volume as the only persistent writable path (`/workspace`).
//! The daemon's socket is in a per-sandbox directory of `sandbox.docker.ipc_dir`, bind-mounted
//! at `/hermes/ipc`; only the worker's user can reach that directory on the host.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use bollard::Docker;
use bollard::errors::Error as DockerError;
use bollard::models::{ContainerCreateBody, ContainerSummaryStateEnum, HostConfig, Mount, MountType};
use bollard::query_parameters::{CreateContainerOptions, ListContainersOptions, RemoveContainerOptions};
use futures_util::future::BoxFuture;
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use hermes_config::SandboxConfig;

use crate::client::{Address, SandboxClient};
use crate::{Result, SandboxError, SandboxKey, Sandboxes, WORKSPACE};

const LABEL_OWNER: &str = "io.hermes.sandbox.owner";
const LABEL_TENANT: &str = "io.hermes.tenant";
const LABEL_AGENT: &str = "io.hermes.agent";
const LOCK_STRIPES: usize = 64;
/// Where the socket directory is mounted inside the sandbox.
const IPC_MOUNT: &str = "/hermes/ipc";
const SOCKET: &str = "sandboxd.sock";
/// How long a new sandbox's daemon may take to answer.
const START_WAIT: Duration = Duration::from_secs(20);

/// Docker sandboxes of this worker's Docker engine.
#[derive(Clone)]
pub struct DockerSandboxes {
    inner: Arc<Inner>,
}

struct Inner {
    docker: Docker,
    cfg: SandboxConfig,
    /// Connected daemons, by container name.
    clients: StdMutex<HashMap<String, SandboxClient>>,
    /// Serialises create/start per sandbox (striped, so the map never grows).
    create_locks: Vec<Mutex<()>>,
}

fn docker_err(e: DockerError) -> SandboxError {
    SandboxError::Backend(e.to_string())
}

fn status_of(e: &DockerError) -> Option<u16> {
    match e {
        DockerError::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}

impl DockerSandboxes {
    /// Connects to the engine (`sandbox.docker.socket`, else `DOCKER_HOST`, else the default
    /// socket) and agrees on an API version with it.
    pub async fn connect(cfg: &SandboxConfig) -> Result<Self> {
        let docker = if cfg.docker.socket.is_empty() {
            Docker::connect_with_local_defaults()
        } else {
            Docker::connect_with_socket(&cfg.docker.socket, 120, bollard::API_DEFAULT_VERSION)
        }
        .map_err(|e| SandboxError::Unavailable(e.to_string()))?;
        let docker = docker.negotiate_version().await.map_err(|e| SandboxError::Unavailable(e.to_string()))?;
        Ok(Self {
            inner: Arc::new(Inner {
                docker,
                cfg: cfg.clone(),
                clients: StdMutex::new(HashMap::new()),
                create_locks: (0..LOCK_STRIPES).map(|_| Mutex::new(())).collect(),
            }),
        })
    }

    /// The container name of `key`'s sandbox.
    pub fn container_name(&self, key: SandboxKey) -> String {
        format!("{}-sbx-{}-{}", self.inner.cfg.docker.name_prefix, key.tenant, key.agent)
    }

    fn volume_name(&self, key: SandboxKey) -> String {
        format!("{}-ws-{}-{}", self.inner.cfg.docker.name_prefix, key.tenant, key.agent)
    }

    /// The socket directory of container `name`: a short stable digest of the name, because a
    /// unix socket's path must stay under 108 bytes.
    fn ipc_dir(&self, name: &str) -> PathBuf {
        let digest = Sha256::digest(name.as_bytes());
        let short: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        PathBuf::from(&self.inner.cfg.docker.ipc_dir).join(short)
    }

    fn cached(&self, name: &str) -> Option<SandboxClient> {
        self.inner.clients.lock().ok()?.get(name).cloned()
    }

    fn forget(&self, name: &str) {
        if let Ok(mut clients) = self.inner.clients.lock() {
            clients.remove(name);
        }
    }

    /// Whether `name` exists and runs.
    async fn is_running(&self, name: &str) -> Result<bool> {
        match self.inner.docker.inspect_container(name, None).await {
            Ok(info) => Ok(info.state.and_then(|s| s.running).unwrap_or(false)),
            Err(e) if status_of(&e) == Some(404) => Ok(false),
            Err(e) => Err(docker_err(e)),
        }
    }

    /// Makes sure `key`'s container exists and runs; returns its name.
    async fn ensure_running(&self, key: SandboxKey) -> Result<String> {
        let name = self.container_name(key);
        let mut hasher = DefaultHasher::new();
        key.hash(&mut hasher);
        let stripe = usize::try_from(hasher.finish() % LOCK_STRIPES as u64).unwrap_or(0);
        let _guard = self.inner.create_locks[stripe].lock().await;
        let docker = &self.inner.docker;
        match docker.inspect_container(&name, None).await {
            Ok(info) => {
                let running = info.state.as_ref().and_then(|s| s.running).unwrap_or(false);
                if !running && let Err(e) = docker.start_container(&name, None).await {
                    tracing::warn!(container = %name, error = %e, "sandbox does not start; recreating it");
                    self.remove(&name).await;
                    self.create(key, &name).await?;
                }
            }
            Err(e) if status_of(&e) == Some(404) => self.create(key, &name).await?,
            Err(e) => return Err(docker_err(e)),
        }
        Ok(name)
    }

    /// The host directory holding the daemon's socket: reachable by the sandbox user inside,
    /// and on the host only through the worker's own `ipc_dir`.
    fn prepare_ipc_dir(&self, name: &str) -> Result<PathBuf> {
        let root = PathBuf::from(&self.inner.cfg.docker.ipc_dir);
        let dir = self.ipc_dir(name);
        let io = |e: std::io::Error| SandboxError::Backend(format!("cannot prepare {}: {e}", dir.display()));
        std::fs::create_dir_all(&dir).map_err(io)?;
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o711)).map_err(io)?;
        // The sandbox user (uid 1000) must create its socket here.
        if std::os::unix::fs::chown(&dir, Some(1000), Some(1000)).is_err() {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).map_err(io)?;
        }
        Ok(dir)
    }

    async fn create(&self, key: SandboxKey, name: &str) -> Result<()> {
        let cfg = &self.inner.cfg.docker;
        let ipc = self.prepare_ipc_dir(name)?;
        let labels = HashMap::from([
            (LABEL_OWNER.to_owned(), cfg.name_prefix.clone()),
            (LABEL_TENANT.to_owned(), key.tenant.to_string()),
            (LABEL_AGENT.to_owned(), key.agent.to_string()),
        ]);
        let tmpfs = HashMap::from([
            ("/tmp".to_owned(), format!("rw,nosuid,nodev,size={}m", cfg.tmpfs_mb)),
            ("/run".to_owned(), "rw,nosuid,nodev,noexec,size=16m".to_owned()),
        ]);
        let memory = i64::try_from(cfg.memory_mb.saturating_mul(1024 * 1024)).unwrap_or(i64::MAX);
        let host = HostConfig {
            cap_drop: Some(vec!["ALL".into()]),
            security_opt: Some(vec!["no-new-privileges".into()]),
            readonly_rootfs: Some(true),
            tmpfs: Some(tmpfs),
            pids_limit: Some(cfg.pids_limit),
            memory: Some(memory),
            memory_swap: Some(memory),
            nano_cpus: Some((cfg.cpus * 1e9) as i64),
            network_mode: Some("none".into()),
            init: Some(true),
            mounts: Some(vec![
                Mount {
                    target: Some(WORKSPACE.into()),
                    source: Some(self.volume_name(key)),
                    typ: Some(MountType::VOLUME),
                    read_only: Some(false),
                    ..Default::default()
                },
                Mount {
                    target: Some(IPC_MOUNT.into()),
                    source: Some(ipc.display().to_string()),
                    typ: Some(MountType::BIND),
                    read_only: Some(false),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        };
        let timeout = self.inner.cfg.exec_timeout_seconds.to_string();
        let body = ContainerCreateBody {
            image: Some(cfg.image.clone()),
            cmd: Some(vec![
                cfg.sandboxd_path.clone(),
                "--listen".into(),
                format!("unix:{IPC_MOUNT}/{SOCKET}"),
                "--workspace".into(),
                WORKSPACE.into(),
                "--default-timeout".into(),
                timeout,
            ]),
            user: Some("1000:1000".into()),
            working_dir: Some(WORKSPACE.into()),
            env: Some(vec![format!("HOME={WORKSPACE}"), "LANG=C.UTF-8".into(), "SANDBOXD_LOG=warn".into()]),
            labels: Some(labels),
            network_disabled: Some(true),
            host_config: Some(host),
            ..Default::default()
        };
        let options = CreateContainerOptions { name: Some(name.to_owned()), ..Default::default() };
        let docker = &self.inner.docker;
        match docker.create_container(Some(options), body).await {
            Ok(_) => {}
            // Another worker on this engine created it first: use theirs.
            Err(e) if status_of(&e) == Some(409) => {}
            Err(e) if status_of(&e) == Some(404) => {
                return Err(SandboxError::ImageMissing(cfg.image.clone()));
            }
            Err(e) => return Err(docker_err(e)),
        }
        match docker.start_container(name, None).await {
            Ok(()) => {}
            Err(e) if status_of(&e) == Some(304) => {}
            Err(e) => return Err(docker_err(e)),
        }
        tracing::info!(container = %name, tenant.id = %key.tenant, agent.id = %key.agent, "sandbox created");
        metrics::counter!("hermes_sandbox_created_total", "backend" => "docker").increment(1);
        Ok(())
    }

    async fn remove(&self, name: &str) {
        self.forget(name);
        let options = RemoveContainerOptions { force: true, ..Default::default() };
        if let Err(e) = self.inner.docker.remove_container(name, Some(options)).await
            && status_of(&e) != Some(404)
        {
            tracing::warn!(container = %name, error = %e, "cannot remove sandbox");
        }
        let _ = std::fs::remove_dir_all(self.ipc_dir(name));
    }

    async fn connect_daemon(&self, name: &str, wait: Duration) -> Result<SandboxClient> {
        let address = Address::Unix(self.ipc_dir(name).join(SOCKET));
        let client = SandboxClient::connect_within(&address, wait).await.map_err(|e| {
            SandboxError::Unavailable(format!(
                "sandboxd in {name} does not answer ({e}); the image must have {}",
                self.inner.cfg.docker.sandboxd_path
            ))
        })?;
        if let Ok(mut clients) = self.inner.clients.lock() {
            clients.insert(name.to_owned(), client.clone());
        }
        Ok(client)
    }

    /// Removes sandboxes whose daemon reports no request for `sandbox.idle_seconds` and no
    /// running command (whatever worker used them last). Background processes keep a sandbox
    /// up to four times that; a sandbox whose daemon does not answer is removed too (the next
    /// use recreates it, workspace intact).
    pub async fn reap_idle(&self) -> Result<usize> {
        let idle = self.inner.cfg.idle_seconds;
        let filters =
            HashMap::from([("label".to_owned(), vec![format!("{LABEL_OWNER}={}", self.inner.cfg.docker.name_prefix)])]);
        let options = ListContainersOptions { all: true, filters: Some(filters), ..Default::default() };
        let containers = self.inner.docker.list_containers(Some(options)).await.map_err(docker_err)?;
        let mut removed = 0;
        for c in containers {
            let Some(name) = c.names.and_then(|n| n.first().map(|s| s.trim_start_matches('/').to_owned())) else {
                continue;
            };
            let running = c.state == Some(ContainerSummaryStateEnum::RUNNING);
            let client = match self.cached(&name) {
                Some(c) => Ok(c),
                None if running => self.connect_daemon(&name, Duration::from_secs(2)).await,
                None => Err(SandboxError::Unavailable("not running".into())),
            };
            let reap = match client {
                Ok(client) => match client.status().await {
                    Ok(s) => {
                        s.running_execs == 0
                            && ((s.running_processes == 0 && s.idle_secs >= idle) || s.idle_secs >= idle * 4)
                    }
                    Err(_) => true,
                },
                Err(_) => true,
            };
            if reap {
                tracing::info!(container = %name, "removing idle or broken sandbox");
                self.remove(&name).await;
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Runs [`reap_idle`](Self::reap_idle) every `every` until `cancel`.
    pub async fn run_reaper(self, every: Duration, cancel: CancellationToken) {
        let mut tick = tokio::time::interval(every);
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                _ = tick.tick() => {
                    if let Err(e) = self.reap_idle().await {
                        tracing::warn!(error = %e, "sandbox reaper failed");
                    }
                }
            }
        }
    }
}

impl Sandboxes for DockerSandboxes {
    fn open(&self, key: SandboxKey) -> BoxFuture<'_, Result<SandboxClient>> {
        Box::pin(async move {
            let name = self.container_name(key);
            if let Some(client) = self.cached(&name) {
                return Ok(client);
            }
            self.ensure_running(key).await?;
            self.connect_daemon(&name, START_WAIT).await
        })
    }

    fn running(&self, key: SandboxKey) -> BoxFuture<'_, Result<Option<SandboxClient>>> {
        Box::pin(async move {
            let name = self.container_name(key);
            if !self.is_running(&name).await? {
                self.forget(&name);
                return Ok(None);
            }
            match self.cached(&name) {
                Some(c) => Ok(Some(c)),
                None => self.connect_daemon(&name, Duration::from_secs(2)).await.map(Some),
            }
        })
    }

    fn invalidate(&self, key: SandboxKey) {
        self.forget(&self.container_name(key));
    }

    fn ping(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            self.inner.docker.ping().await.map(|_| ()).map_err(|e| SandboxError::Unavailable(e.to_string()))
        })
    }
}
