//! Docker backend (bollard): one hardened container per tenant-agent.
//!
//! Hardening: all capabilities dropped, `no-new-privileges`, read-only root, tmpfs `/tmp`
//! and `/run`, PID limit, memory and CPU limits, no network, non-root user, an init process
//! reaping zombies, and a named volume as the only persistent writable path (`/workspace`).

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use bollard::Docker;
use bollard::errors::Error as DockerError;
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::models::{ContainerCreateBody, HostConfig, Mount, MountType};
use bollard::query_parameters::{CreateContainerOptions, ListContainersOptions, RemoveContainerOptions};
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use hermes_config::SandboxConfig;

mod files;

use crate::{ExecOutput, ExecRequest, RAW_OUTPUT_CAP, Result, SandboxError, SandboxKey, Sandboxes, WORKSPACE};

const LABEL_OWNER: &str = "io.hermes.sandbox.owner";
const LABEL_TENANT: &str = "io.hermes.tenant";
const LABEL_AGENT: &str = "io.hermes.agent";
const LOCK_STRIPES: usize = 64;

/// What this process knows of one container's use.
#[derive(Debug, Clone, Copy)]
struct Usage {
    last: Instant,
    in_flight: u32,
}

impl Usage {
    fn now() -> Self {
        Self { last: Instant::now(), in_flight: 0 }
    }
}

/// Docker sandboxes of this worker's Docker engine.
#[derive(Clone)]
pub struct DockerSandboxes {
    inner: Arc<Inner>,
}

struct Inner {
    docker: Docker,
    cfg: SandboxConfig,
    /// Containers this process has seen: when they were last used and how many commands run
    /// in them now (a container with a running command is never idle).
    usage: StdMutex<HashMap<String, Usage>>,
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
                usage: StdMutex::new(HashMap::new()),
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

    fn with_usage<T>(&self, f: impl FnOnce(&mut HashMap<String, Usage>) -> T) -> Option<T> {
        self.inner.usage.lock().ok().map(|mut map| f(&mut map))
    }

    fn touch(&self, name: &str) {
        self.with_usage(|m| m.entry(name.to_owned()).or_insert_with(Usage::now).last = Instant::now());
    }

    fn begin_use(&self, name: &str) {
        self.with_usage(|m| {
            let u = m.entry(name.to_owned()).or_insert_with(Usage::now);
            u.last = Instant::now();
            u.in_flight += 1;
        });
    }

    fn end_use(&self, name: &str) {
        self.with_usage(|m| {
            if let Some(u) = m.get_mut(name) {
                u.last = Instant::now();
                u.in_flight = u.in_flight.saturating_sub(1);
            }
        });
    }

    fn known(&self, name: &str) -> bool {
        self.with_usage(|m| m.contains_key(name)).unwrap_or(false)
    }

    fn forget(&self, name: &str) {
        self.with_usage(|m| {
            // Keep the in-flight count of commands still running; only the "known running" mark goes.
            if m.get(name).is_some_and(|u| u.in_flight == 0) {
                m.remove(name);
            }
        });
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
        self.touch(&name);
        Ok(name)
    }

    async fn create(&self, key: SandboxKey, name: &str) -> Result<()> {
        let cfg = &self.inner.cfg.docker;
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
            mounts: Some(vec![Mount {
                target: Some(WORKSPACE.into()),
                source: Some(self.volume_name(key)),
                typ: Some(MountType::VOLUME),
                read_only: Some(false),
                ..Default::default()
            }]),
            ..Default::default()
        };
        let body = ContainerCreateBody {
            image: Some(cfg.image.clone()),
            // A shell loop that sleeps and exits at once on SIGTERM, so stops are instant.
            cmd: Some(vec![
                "/bin/sh".into(),
                "-c".into(),
                "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done".into(),
            ]),
            user: Some("1000:1000".into()),
            working_dir: Some(WORKSPACE.into()),
            env: Some(vec![format!("HOME={WORKSPACE}"), "LANG=C.UTF-8".into()]),
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
        let options = RemoveContainerOptions { force: true, ..Default::default() };
        if let Err(e) = self.inner.docker.remove_container(name, Some(options)).await
            && status_of(&e) != Some(404)
        {
            tracing::warn!(container = %name, error = %e, "cannot remove sandbox");
        }
        self.forget(name);
    }

    async fn create_exec(&self, name: &str, request: &ExecRequest) -> std::result::Result<String, DockerError> {
        let secs = request.timeout.as_secs().max(1).to_string();
        let exec = self
            .inner
            .docker
            .create_exec(
                name,
                CreateExecOptions {
                    // `timeout` kills the command when it overruns; the daemon that replaces
                    // docker exec will kill the whole process group instead.
                    cmd: Some(vec!["timeout", "-s", "KILL", &secs, "/bin/sh", "-c", &request.command]),
                    attach_stdout: Some(true),
                    attach_stderr: Some(true),
                    working_dir: Some(request.workdir.as_deref().unwrap_or(WORKSPACE)),
                    ..Default::default()
                },
            )
            .await?;
        Ok(exec.id)
    }

    /// Starts a created exec and collects its output. Never retried: the command may have run.
    async fn start_and_collect(&self, name: &str, exec_id: &str, request: &ExecRequest) -> Result<ExecOutput> {
        let docker = &self.inner.docker;
        let started = Instant::now();
        let mut output = Vec::new();
        let mut truncated = false;
        let mut broken = None;
        if let StartExecResults::Attached { output: mut stream, .. } =
            docker.start_exec(exec_id, None).await.map_err(docker_err)?
        {
            let deadline = request.timeout + Duration::from_secs(5);
            let collect = async {
                while let Some(chunk) = stream.next().await {
                    let bytes = match chunk {
                        Ok(c) => c.into_bytes(),
                        Err(e) => {
                            broken = Some(e.to_string());
                            break;
                        }
                    };
                    let room = RAW_OUTPUT_CAP.saturating_sub(output.len());
                    truncated |= bytes.len() > room;
                    output.extend_from_slice(&bytes[..room.min(bytes.len())]);
                }
            };
            if tokio::time::timeout(deadline, collect).await.is_err() {
                tracing::warn!(container = %name, "exec output did not end after its timeout");
                broken = Some("no end of output after the timeout".into());
            }
        }
        let duration = started.elapsed();
        let exit_code = docker.inspect_exec(exec_id).await.map_err(docker_err)?.exit_code;
        let timed_out = exit_code == Some(137) && duration + Duration::from_millis(200) >= request.timeout;
        let mut text = String::from_utf8_lossy(&output).into_owned();
        if truncated {
            text.push_str("\n[output truncated]");
        }
        if let Some(why) = broken {
            text.push_str(&format!("\n[output incomplete: {why}]"));
        }
        Ok(ExecOutput { exit_code: if timed_out { None } else { exit_code }, output: text, timed_out, duration })
    }

    /// Removes sandboxes of this engine idle for longer than `sandbox.idle_seconds`.
    /// Containers this process has not used yet count as used now.
    pub async fn reap_idle(&self) -> Result<usize> {
        let idle = Duration::from_secs(self.inner.cfg.idle_seconds);
        let filters =
            HashMap::from([("label".to_owned(), vec![format!("{LABEL_OWNER}={}", self.inner.cfg.docker.name_prefix)])]);
        let options = ListContainersOptions { all: true, filters: Some(filters), ..Default::default() };
        let containers = self.inner.docker.list_containers(Some(options)).await.map_err(docker_err)?;
        let mut removed = 0;
        for c in containers {
            let Some(name) = c.names.and_then(|n| n.first().map(|s| s.trim_start_matches('/').to_owned())) else {
                continue;
            };
            let idle_now = self
                .with_usage(|m| {
                    let u = m.entry(name.clone()).or_insert_with(Usage::now);
                    u.in_flight == 0 && u.last.elapsed() >= idle
                })
                .unwrap_or(false);
            if idle_now {
                tracing::info!(container = %name, "removing idle sandbox");
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
    fn exec<'a>(&'a self, key: SandboxKey, request: ExecRequest) -> BoxFuture<'a, Result<ExecOutput>> {
        Box::pin(async move {
            let name = self.container_name(key);
            if !self.known(&name) {
                self.ensure_running(key).await?;
            }
            self.begin_use(&name);
            let exec_id = match self.create_exec(&name, &request).await {
                Ok(id) => Ok(id),
                // 404: the container is gone; 409: it is not running. Nothing ran yet, so
                // recreating it and trying once more is safe.
                Err(e) if matches!(status_of(&e), Some(404 | 409)) => {
                    tracing::info!(container = %name, error = %e, "sandbox vanished; recreating it");
                    self.forget(&name);
                    match self.ensure_running(key).await {
                        Ok(_) => self.create_exec(&name, &request).await.map_err(docker_err),
                        Err(e) => Err(e),
                    }
                }
                Err(e) => Err(docker_err(e)),
            };
            let out = match exec_id {
                Ok(id) => self.start_and_collect(&name, &id, &request).await,
                Err(e) => Err(e),
            };
            self.end_use(&name);
            let out = out?;
            metrics::histogram!("hermes_sandbox_exec_seconds", "backend" => "docker")
                .record(out.duration.as_secs_f64());
            Ok(out)
        })
    }

    fn is_running(&self, key: SandboxKey) -> BoxFuture<'_, Result<bool>> {
        Box::pin(self.container_running(key))
    }

    fn read_first_file<'a>(
        &'a self,
        key: SandboxKey,
        paths: &'a [String],
        max: usize,
    ) -> BoxFuture<'a, Result<Option<(String, String)>>> {
        Box::pin(self.read_first_workspace_file(key, paths, max))
    }

    fn list_dir<'a>(&'a self, key: SandboxKey, path: &'a str) -> BoxFuture<'a, Result<Vec<String>>> {
        Box::pin(self.list_workspace_dir(key, path))
    }

    fn ping(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            self.inner.docker.ping().await.map(|_| ()).map_err(|e| SandboxError::Unavailable(e.to_string()))
        })
    }
}
