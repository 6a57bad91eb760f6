//! Docker backend (bollard): one hardened container per tenant-agent, running sandboxd.
//!
//! Hardening: `no-new-privileges`, read-only root, tmpfs `/tmp` and `/run`, PID limit, memory
//! and CPU limits, no network, an init process reaping zombies, and a named volume as the only
//! persistent writable path (`/workspace`). Every program the agent runs is uid 1000 with no
//! capability; sandboxd alone is root, with only `CAP_SETUID`, `CAP_SETGID` and `CAP_KILL` (to
//! start and stop those programs), so they cannot kill it, read it or take its place. Stdio
//! MCP servers, which hold the tenant's secrets, run as uid 1001 (`--mcp-as`), with their home
//! in a tmpfs of their own, so the agent's programs cannot read their environment or memory,
//! nor change their code.
//! The daemon's socket is in a per-sandbox directory of `sandbox.docker.ipc_dir`, bind-mounted
//! at `/hermes/ipc`: sticky, so the sandbox user cannot remove or replace the socket, and
//! sandboxd refuses connections from that user.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bollard::Docker;
use bollard::errors::Error as DockerError;
use bollard::models::{
    ContainerCreateBody, ContainerSummaryStateEnum, HostConfig, Mount, MountType, VolumeCreateRequest,
};
use bollard::query_parameters::{CreateContainerOptions, ListContainersOptions, RemoveContainerOptions};
use futures_util::future::BoxFuture;

use hermes_config::SandboxConfig;

use crate::client::SandboxClient;
use crate::common::{self, Attached, EGRESS_SOCKET, IPC_MOUNT, SOCKET, START_WAIT};
use crate::{MCP_HOME_MOUNT, MCP_USER, Result, SandboxError, SandboxKey, Sandboxes, WORKSPACE};

/// The uid and gid programs in a sandbox run as (sandboxd itself is root, see `hermes-sandboxd`).
const SANDBOX_USER: u32 = 1000;
const LABEL_OWNER: &str = "io.hermes.sandbox.owner";
const LABEL_TENANT: &str = "io.hermes.tenant";
const LABEL_AGENT: &str = "io.hermes.agent";
const LABEL_WORKSPACE: &str = "io.hermes.workspace";
const LABEL_SPEC: &str = "io.hermes.spec";

/// Docker sandboxes of this worker's Docker engine.
#[derive(Clone)]
pub struct DockerSandboxes {
    inner: Arc<Inner>,
}

struct Inner {
    docker: Docker,
    cfg: SandboxConfig,
    attached: Attached,
    /// Set once the engine refused a volume size: quotas are not tried again.
    no_quota_support: AtomicBool,
    /// Each agent's image and limits.
    specs: crate::spec::Specs,
    /// The spec each sandbox this worker connected to was made for (by container name).
    made_for: std::sync::Mutex<HashMap<String, String>>,
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
        let no_quota_support = AtomicBool::new(false);
        Ok(Self {
            inner: Arc::new(Inner {
                docker,
                cfg: cfg.clone(),
                attached: Attached::default(),
                no_quota_support,
                specs: crate::spec::Specs::default(),
                made_for: std::sync::Mutex::default(),
            }),
        })
    }

    /// The container name of `key`'s sandbox.
    pub fn container_name(&self, key: SandboxKey) -> String {
        let (prefix, own) = (&self.inner.cfg.docker.name_prefix, key.workspace.suffix());
        format!("{prefix}-sbx-{}-{}{own}", key.tenant, key.agent)
    }

    fn volume_name(&self, key: SandboxKey) -> String {
        let (prefix, own) = (&self.inner.cfg.docker.name_prefix, key.workspace.suffix());
        format!("{prefix}-ws-{}-{}{own}", key.tenant, key.agent)
    }

    fn ipc_dir(&self, name: &str) -> std::path::PathBuf {
        common::ipc_dir(&self.inner.cfg.docker.ipc_dir, name)
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
        let _guard = self.inner.attached.daemons.start_lock(&name).await;
        let docker = &self.inner.docker;
        let spec = self.inner.specs.of(key).await;
        match docker.inspect_container(&name, None).await {
            Ok(info) => {
                let labels = info.config.as_ref().and_then(|c| c.labels.as_ref());
                // A container from before specs had labels was made with the defaults.
                let made_for = labels.and_then(|l| l.get(LABEL_SPEC)).cloned();
                let made_for = made_for.unwrap_or_else(|| crate::SandboxSpec::default().fingerprint());
                let running = info.state.as_ref().and_then(|s| s.running).unwrap_or(false);
                if made_for != spec.fingerprint() {
                    // The agent's image or limits changed: a new container on the same workspace.
                    tracing::info!(container = %name, "the agent's sandbox settings changed; recreating its sandbox");
                    self.inner.attached.daemons.forget(&name);
                    self.remove(&name).await;
                    self.create(key, &name, &spec).await?;
                } else if !running && let Err(e) = docker.start_container(&name, None).await {
                    tracing::warn!(container = %name, error = %e, "sandbox does not start; recreating it");
                    self.remove(&name).await;
                    self.create(key, &name, &spec).await?;
                }
            }
            Err(e) if status_of(&e) == Some(404) => self.create(key, &name, &spec).await?,
            Err(e) => return Err(docker_err(e)),
        }
        Ok(name)
    }

    /// Creates the workspace volume with its size limit, when one is configured and the
    /// engine's storage supports it (otherwise the container's mount creates it plainly).
    async fn create_workspace_volume(
        &self,
        key: SandboxKey,
        labels: &HashMap<String, String>,
        spec: &crate::SandboxSpec,
    ) -> Result<()> {
        let quota = spec.disk_mb.unwrap_or(self.inner.cfg.docker.workspace_quota_mb);
        if quota == 0 || self.inner.no_quota_support.load(Ordering::Relaxed) {
            return Ok(());
        }
        let request = VolumeCreateRequest {
            name: Some(self.volume_name(key)),
            driver_opts: Some(HashMap::from([("size".to_owned(), format!("{quota}m"))])),
            labels: Some(labels.clone()),
            ..Default::default()
        };
        match self.inner.docker.create_volume(request).await {
            Ok(_) => Ok(()),
            Err(e) if status_of(&e) == Some(409) || e.to_string().contains("already exists") => Ok(()),
            Err(e) if e.to_string().contains("quota") => {
                tracing::warn!(error = %e, "this Docker storage cannot limit volume sizes; workspaces have no quota");
                self.inner.no_quota_support.store(true, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => Err(docker_err(e)),
        }
    }

    async fn create(&self, key: SandboxKey, name: &str, spec: &crate::SandboxSpec) -> Result<()> {
        let cfg = &self.inner.cfg.docker;
        let image = spec.image.clone().unwrap_or_else(|| cfg.image.clone());
        let ipc = common::prepare_ipc_dir(&cfg.ipc_dir, name, common::IpcOwner::Worker)?;
        let labels = HashMap::from([
            (LABEL_OWNER.to_owned(), cfg.name_prefix.clone()),
            (LABEL_TENANT.to_owned(), key.tenant.to_string()),
            (LABEL_AGENT.to_owned(), key.agent.to_string()),
            (LABEL_WORKSPACE.to_owned(), key.workspace.label()),
        ]);
        self.create_workspace_volume(key, &labels, spec).await?;
        let labels = labels.into_iter().chain([(LABEL_SPEC.to_owned(), spec.fingerprint())]).collect();
        let body = ContainerCreateBody {
            image: Some(image.clone()),
            cmd: Some(self.sandboxd_command()),
            user: Some("0:0".into()),
            working_dir: Some(WORKSPACE.into()),
            env: Some(self.container_env(&ipc, spec)?),
            labels: Some(labels),
            network_disabled: Some(true),
            host_config: Some(self.host_config(key, &ipc, spec)),
            ..Default::default()
        };
        let options = CreateContainerOptions { name: Some(name.to_owned()), ..Default::default() };
        let docker = &self.inner.docker;
        match docker.create_container(Some(options), body).await {
            Ok(_) => {}
            // Another worker on this engine created it first: use theirs.
            Err(e) if status_of(&e) == Some(409) => {}
            Err(e) if status_of(&e) == Some(404) => {
                return Err(SandboxError::ImageMissing(image));
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

    /// The container's limits and mounts: no network, no capabilities but what sandboxd needs
    /// to start and stop the sandbox user's programs, a read-only root, the workspace volume
    /// and the socket directory.
    /// The container's variables: its own, the proxy's, and the spec's (secret placeholders,
    /// and the trust files written into `ipc` when the spec carries a certificate).
    fn container_env(&self, ipc: &std::path::Path, spec: &crate::SandboxSpec) -> Result<Vec<String>> {
        let mut env = vec![format!("HOME={WORKSPACE}"), "LANG=C.UTF-8".into(), "SANDBOXD_LOG=warn".into()];
        env.extend(crate::PROXY_ENV.iter().map(|(k, v)| format!("{k}={v}")));
        if let Some(trust) = &spec.trust {
            crate::spec::write_trust(ipc, trust)
                .map_err(|e| SandboxError::Backend(format!("cannot write the sandbox's trusted certificates: {e}")))?;
            env.extend(crate::spec::TRUST_ENV.iter().map(|(k, v)| format!("{k}={v}")));
        }
        env.extend(spec.env.iter().map(|(k, v)| format!("{k}={v}")));
        Ok(env)
    }

    fn host_config(&self, key: SandboxKey, ipc: &std::path::Path, spec: &crate::SandboxSpec) -> HostConfig {
        let cfg = &self.inner.cfg.docker;
        let (memory_mb, cpus, pids) = (
            spec.memory_mb.unwrap_or(cfg.memory_mb),
            spec.cpus.unwrap_or(cfg.cpus),
            spec.pids.unwrap_or(cfg.pids_limit),
        );
        let tmpfs = HashMap::from([
            ("/tmp".to_owned(), format!("rw,nosuid,nodev,size={}m", cfg.tmpfs_mb)),
            ("/run".to_owned(), "rw,nosuid,nodev,noexec,size=16m".to_owned()),
            // Open to all until sandboxd, first to run, has made the MCP user's home in it
            // and closed it; executable, for what `npx` installs there.
            (MCP_HOME_MOUNT.to_owned(), format!("rw,nosuid,nodev,exec,mode=1777,size={}m", cfg.tmpfs_mb)),
        ]);
        let memory = i64::try_from(memory_mb.saturating_mul(1024 * 1024)).unwrap_or(i64::MAX);
        HostConfig {
            // sandboxd runs as root with just enough to start programs as the sandbox user
            // (uid 1000) and stop them; they cannot signal it, read it or replace its socket.
            cap_drop: Some(vec!["ALL".into()]),
            cap_add: Some(vec!["SETUID".into(), "SETGID".into(), "KILL".into()]),
            security_opt: Some(vec!["no-new-privileges".into()]),
            readonly_rootfs: Some(true),
            tmpfs: Some(tmpfs),
            pids_limit: Some(pids),
            memory: Some(memory),
            memory_swap: Some(memory),
            nano_cpus: Some((cpus * 1e9) as i64),
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
        }
    }

    /// sandboxd's command line inside the container.
    fn sandboxd_command(&self) -> Vec<String> {
        let cfg = &self.inner.cfg.docker;
        let timeout = self.inner.cfg.exec_timeout_seconds.to_string();
        [
            cfg.sandboxd_path.clone(),
            "--listen".into(),
            format!("unix:{IPC_MOUNT}/{SOCKET}"),
            "--workspace".into(),
            WORKSPACE.into(),
            "--default-timeout".into(),
            timeout,
            "--egress-socket".into(),
            format!("{IPC_MOUNT}/{EGRESS_SOCKET}"),
            "--run-as".into(),
            format!("{SANDBOX_USER}:{SANDBOX_USER}"),
            "--mcp-as".into(),
            format!("{MCP_USER}:{MCP_USER}"),
        ]
        .into_iter()
        .chain(crate::span_relay::sandboxd_args(IPC_MOUNT))
        .collect()
    }

    async fn remove(&self, name: &str) {
        self.inner.attached.detach(name);
        let options = RemoveContainerOptions { force: true, ..Default::default() };
        if let Err(e) = self.inner.docker.remove_container(name, Some(options)).await
            && status_of(&e) != Some(404)
        {
            tracing::warn!(container = %name, error = %e, "cannot remove sandbox");
        }
        let _ = std::fs::remove_dir_all(self.ipc_dir(name));
    }

    async fn connect_daemon(&self, name: &str, wait: Duration) -> Result<SandboxClient> {
        let hint = format!("the image must have {}", self.inner.cfg.docker.sandboxd_path);
        self.inner.attached.daemons.connect(name, &self.ipc_dir(name), wait, &hint).await
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
        let seen = containers.len();
        let mut removed = 0;
        let mut kept = Vec::new();
        for c in containers {
            let Some(name) = c.names.and_then(|n| n.first().map(|s| s.trim_start_matches('/').to_owned())) else {
                continue;
            };
            let running = c.state == Some(ContainerSummaryStateEnum::RUNNING);
            let client = match self.inner.attached.daemons.cached(&name) {
                Some(c) => Ok(c),
                None if running => self.connect_daemon(&name, Duration::from_secs(2)).await,
                None => Err(SandboxError::Unavailable("not running".into())),
            };
            let status = match client {
                Ok(client) => client.status().await.ok(),
                Err(_) => None,
            };
            match status {
                Some(status) if !common::is_idle(&status, idle) => {
                    let label = |k: &str| c.labels.as_ref().and_then(|l| l.get(k)).and_then(|v| v.parse().ok());
                    if let (Some(tenant), Some(agent)) = (label(LABEL_TENANT), label(LABEL_AGENT)) {
                        kept.push(common::live_sandbox("docker", &name, (tenant, agent), &status));
                    }
                }
                _ => {
                    tracing::info!(container = %name, "removing idle or broken sandbox");
                    self.remove(&name).await;
                    removed += 1;
                }
            }
        }
        common::record_live("docker", seen - removed);
        self.inner.attached.census.replace(kept);
        Ok(removed)
    }
}

impl DockerSandboxes {
    /// The names of this installation's containers (`sbx`) or volumes (`ws`) that start
    /// with `{prefix}-{kind}-{rest}`.
    async fn named(&self, kind: &str, rest: &str) -> Result<(Vec<String>, Vec<String>)> {
        let start = format!("{}-{kind}-{rest}", self.inner.cfg.docker.name_prefix);
        let filters = HashMap::from([("name".to_owned(), vec![start.clone()])]);
        let options = ListContainersOptions { all: true, filters: Some(filters.clone()), ..Default::default() };
        let containers = self.inner.docker.list_containers(Some(options)).await.map_err(docker_err)?;
        let containers = containers
            .into_iter()
            .filter_map(|c| c.names.and_then(|n| n.first().map(|s| s.trim_start_matches('/').to_owned())))
            .filter(|n| n.starts_with(&start))
            .collect();
        let options = bollard::query_parameters::ListVolumesOptions { filters: Some(filters) };
        let volumes = self.inner.docker.list_volumes(Some(options)).await.map_err(docker_err)?;
        let volumes =
            volumes.volumes.unwrap_or_default().into_iter().map(|v| v.name).filter(|n| n.starts_with(&start)).collect();
        Ok((containers, volumes))
    }

    async fn tenants_kept(&self) -> Result<Vec<uuid::Uuid>> {
        let (containers, _) = self.named("sbx", "").await?;
        let (_, volumes) = self.named("ws", "").await?;
        let prefix = &self.inner.cfg.docker.name_prefix;
        let mut tenants: Vec<uuid::Uuid> = containers
            .iter()
            .filter_map(|n| n.strip_prefix(&format!("{prefix}-sbx-")).map(str::to_owned))
            .chain(volumes.iter().filter_map(|n| n.strip_prefix(&format!("{prefix}-ws-")).map(str::to_owned)))
            .filter_map(|rest| rest.get(..36).and_then(|id| id.parse().ok()))
            .collect();
        tenants.sort();
        tenants.dedup();
        Ok(tenants)
    }

    async fn remove_tenant(&self, tenant: hermes_core::TenantId) -> Result<usize> {
        let (containers, _) = self.named("sbx", &format!("{tenant}-")).await?;
        for name in &containers {
            tracing::info!(container = %name, "removing a deleted tenant's sandbox");
            self.remove(name).await;
        }
        let (_, volumes) = self.named("ws", &format!("{tenant}-")).await?;
        for name in &volumes {
            let options = bollard::query_parameters::RemoveVolumeOptions { force: true };
            match self.inner.docker.remove_volume(name, Some(options)).await {
                Ok(()) => tracing::info!(volume = %name, "removed a deleted tenant's workspace"),
                Err(e) if status_of(&e) == Some(404) => {}
                Err(e) => return Err(docker_err(e)),
            }
        }
        Ok(containers.len() + volumes.len())
    }
}

impl Sandboxes for DockerSandboxes {
    fn open(&self, key: SandboxKey) -> BoxFuture<'_, Result<SandboxClient>> {
        Box::pin(async move {
            let name = self.container_name(key);
            let wanted = self.inner.specs.of(key).await.fingerprint();
            let made_for = self.inner.made_for.lock().ok().and_then(|m| m.get(&name).cloned());
            if made_for.is_some_and(|made| made != wanted) {
                // The agent's image or limits changed since: ensure_running replaces it.
                self.inner.attached.daemons.forget(&name);
            }
            let start = async {
                self.ensure_running(key).await?;
                if let Ok(mut made) = self.inner.made_for.lock() {
                    made.insert(name.clone(), wanted.clone());
                }
                self.connect_daemon(&name, START_WAIT).await
            };
            self.inner.attached.open(&name, key, &self.ipc_dir(&name), start).await
        })
    }

    fn set_specs(&self, source: Arc<dyn crate::SpecSource>) {
        self.inner.specs.set(source);
    }

    fn running(&self, key: SandboxKey) -> BoxFuture<'_, Result<Option<SandboxClient>>> {
        Box::pin(async move {
            let name = self.container_name(key);
            // A daemon already connected answers for itself (a stale one fails its call, and
            // its caller goes on without the workspace): asking the engine first cost every
            // new session a `docker inspect`, serialised on the container by dockerd.
            let probe = async {
                if !self.is_running(&name).await? {
                    return Ok(None);
                }
                self.connect_daemon(&name, Duration::from_secs(2)).await.map(Some)
            };
            self.inner.attached.running(&name, probe).await
        })
    }

    common::attached_sandboxes!(container_name);

    fn ping(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            self.inner.docker.ping().await.map(|_| ()).map_err(|e| SandboxError::Unavailable(e.to_string()))
        })
    }

    fn tenants_kept(&self) -> BoxFuture<'_, Result<Vec<uuid::Uuid>>> {
        Box::pin(DockerSandboxes::tenants_kept(self))
    }

    fn remove_tenant(&self, tenant: hermes_core::TenantId) -> BoxFuture<'_, Result<usize>> {
        Box::pin(DockerSandboxes::remove_tenant(self, tenant))
    }
}
