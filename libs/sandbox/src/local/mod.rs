//! Local backend (bubblewrap): a sandbox is a set of fresh namespaces on the worker's own
//! machine, for one machine without Docker.
//!
//! Each sandbox runs sandboxd under `bwrap` with its own namespaces (so no network but
//! loopback, its own PID tree, no host IPC), a new session, the host's `/usr` read-only and
//! only a short list of `/etc` files (never the worker's config), tmpfs `/tmp` and `/run`,
//! and the tenant-agent's workspace directory as the only persistent writable path. A
//! per-sandbox cgroup bounds processes and memory when the machine lets the worker write one;
//! otherwise an RLIMIT_NPROC on the sandbox user does.
//!
//! A worker running as root starts sandboxd as in a container: root, without a user namespace
//! (which could map one uid only), with only `CAP_SETUID`, `CAP_SETGID` and `CAP_KILL`, running
//! the agent's programs as `sandbox.local.uid` and stdio MCP servers as [`MCP_USER`], whose
//! home is a tmpfs of its own: the agent cannot read the servers' secrets nor change their
//! code. Any other worker runs the sandbox in a user namespace as itself, every program with
//! sandboxd's uid: there the agent can read everything sandboxd's programs hold.
//!
//! Sandboxes live as long as the worker that started them (`--die-with-parent`); their
//! workspaces stay. Other workers on the same machine reach a running one through its
//! socket, and a file lock keeps two of them from starting the same sandbox twice.

mod cgroup;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};

use hermes_config::SandboxConfig;

use crate::client::SandboxClient;
use crate::common::{self, Attached, EGRESS_SOCKET, IPC_MOUNT, SOCKET, START_WAIT};
use crate::{MCP_HOME_MOUNT, MCP_USER, Result, SandboxError, SandboxKey, SandboxSpec, Sandboxes, WORKSPACE};
use cgroup::{CgroupParent, SandboxCgroup};

/// Where sandboxd is mounted inside the sandbox.
const SANDBOXD_MOUNT: &str = "/hermes/bin/hermes-sandboxd";
/// Host directories shown read-only (or recreated as the same symlink).
const SYSTEM_DIRS: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"];
/// The only host `/etc` entries a sandbox sees: enough for users, DNS, TLS and the
/// dynamic linker, and nothing that could hold the worker's configuration.
const ETC_ENTRIES: &[&str] = &[
    "/etc/passwd",
    "/etc/group",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/localtime",
    "/etc/mime.types",
];

/// bubblewrap sandboxes on this machine.
#[derive(Clone)]
pub struct LocalSandboxes {
    inner: Arc<Inner>,
}

struct Inner {
    cfg: SandboxConfig,
    attached: Attached,
    sandboxd: PathBuf,
    cgroups: Option<CgroupParent>,
    /// The user sandboxes run as, when the worker is root and can switch to it.
    run_as: Option<(u32, u32)>,
    /// The sandboxes this worker started.
    started: StdMutex<HashMap<String, Started>>,
    /// Each sandbox's variables and trust (of an agent's spec, the rest does not apply here).
    specs: crate::spec::Specs,
}

/// The file in a sandbox's socket directory naming the spec it was started with.
const SPEC_FILE: &str = "spec";

/// What of a spec applies to this backend, which runs on the host's files under its own
/// limits: the variables and trust (an agent's bound secrets).
fn applied(spec: SandboxSpec) -> SandboxSpec {
    SandboxSpec { env: spec.env, trust: spec.trust, ..Default::default() }
}

/// The fingerprint of the spec the sandbox with socket directory `ipc` was started with.
fn made_for(ipc: &Path) -> String {
    std::fs::read_to_string(ipc.join(SPEC_FILE)).unwrap_or_else(|_| SandboxSpec::default().fingerprint())
}

struct Started {
    child: Child,
    cgroup: Option<SandboxCgroup>,
    key: SandboxKey,
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> SandboxError {
    SandboxError::Backend(format!("{what} {}: {e}", path.display()))
}

impl LocalSandboxes {
    /// Checks sandboxd is where the config says and finds the cgroup hierarchy to use.
    pub fn new(cfg: &SandboxConfig) -> Result<Self> {
        let local = &cfg.local;
        let sandboxd = if local.sandboxd_path.is_empty() {
            let exe = std::env::current_exe().map_err(|e| SandboxError::Unavailable(e.to_string()))?;
            exe.with_file_name("hermes-sandboxd")
        } else {
            PathBuf::from(&local.sandboxd_path)
        };
        if !sandboxd.is_file() {
            return Err(SandboxError::Unavailable(format!(
                "sandboxd not found at {}; build it (cargo build -p hermes-sandboxd) or set sandbox.local.sandboxd_path",
                sandboxd.display()
            )));
        }
        let run_as = (common::current_ids().0 == 0).then_some((local.uid, local.gid));
        if run_as.is_some_and(|(uid, gid)| uid == MCP_USER || gid == MCP_USER || uid == 0) {
            return Err(SandboxError::Unavailable(format!(
                "sandbox.local.uid and gid must be neither root nor {MCP_USER} (the MCP servers' user)"
            )));
        }
        let cgroups = CgroupParent::detect(&local.cgroup, &format!("{}-sandboxes", local.name_prefix));
        Ok(Self {
            inner: Arc::new(Inner {
                cfg: cfg.clone(),
                attached: Attached::default(),
                sandboxd,
                cgroups,
                run_as,
                started: StdMutex::new(HashMap::new()),
                specs: crate::spec::Specs::default(),
            }),
        })
    }

    /// The sandbox name of `key` (cgroup and socket directory names derive from it).
    pub fn sandbox_name(&self, key: SandboxKey) -> String {
        let (prefix, own) = (&self.inner.cfg.local.name_prefix, key.workspace.suffix());
        format!("{prefix}-sbx-{}-{}{own}", key.tenant, key.agent)
    }

    /// `key`'s workspace on the host.
    pub fn workspace_dir(&self, key: SandboxKey) -> PathBuf {
        let agent = format!("{}{}", key.agent, key.workspace.suffix());
        Path::new(&self.inner.cfg.local.workspaces_dir).join(key.tenant.to_string()).join(agent)
    }

    fn ipc_dir(&self, name: &str) -> PathBuf {
        common::ipc_dir(&self.inner.cfg.local.ipc_dir, name)
    }

    /// Connects to `key`'s daemon, starting the sandbox when none answers.
    async fn open_uncached(&self, key: SandboxKey, name: &str, spec: &SandboxSpec) -> Result<SandboxClient> {
        let _guard = self.inner.attached.daemons.start_lock(name).await;
        if let Some(client) = self.inner.attached.daemons.cached(name) {
            return Ok(client);
        }
        let ipc = self.ipc_dir(name);
        let _machine_lock = machine_lock(&self.inner.cfg.local.ipc_dir, &ipc).await?;
        if ipc.join(SOCKET).exists()
            && made_for(&ipc) == spec.fingerprint()
            && let Ok(client) = self.inner.attached.daemons.connect(name, &ipc, Duration::from_millis(300), "").await
        {
            return Ok(client);
        }
        self.start(key, name, spec).await?;
        let hint = format!("see the worker's log for sandboxd's own ({})", self.inner.sandboxd.display());
        self.inner.attached.daemons.connect(name, &ipc, START_WAIT, &hint).await
    }

    async fn start(&self, key: SandboxKey, name: &str, spec: &SandboxSpec) -> Result<()> {
        let local = &self.inner.cfg.local;
        let (uid, gid) = self.inner.run_as.unwrap_or_else(common::current_ids);
        let workspace = self.workspace_dir(key);
        std::fs::create_dir_all(&workspace).map_err(|e| io_err("cannot create", &workspace, e))?;
        if self.inner.run_as.is_some() {
            std::os::unix::fs::chown(&workspace, Some(uid), Some(gid))
                .map_err(|e| io_err("cannot hand over", &workspace, e))?;
        }
        // As root, sandboxd is root in the sandbox and keeps its socket in a directory of the
        // worker's (as in a container); otherwise it is the sandbox user, who owns it.
        let owner =
            if self.inner.run_as.is_some() { common::IpcOwner::Worker } else { common::IpcOwner::User { uid, gid } };
        let ipc = common::prepare_ipc_dir(&local.ipc_dir, name, owner)?;
        self.stop(name).await;
        write_spec_files(&ipc, spec)?;
        let cgroup = match &self.inner.cgroups {
            Some(parent) => Some(parent.create(name, local.pids_limit, local.memory_mb.saturating_mul(1024 * 1024))?),
            None => None,
        };
        let mut command = self.command(&workspace, &ipc, cgroup.is_some(), spec);
        let mut child = command.spawn().map_err(|e| {
            SandboxError::Unavailable(format!("cannot run {} (is bubblewrap installed?): {e}", local.bwrap_path))
        })?;
        if let Some(cgroup) = &cgroup {
            // The child waits on its stdin until it is in the cgroup, so nothing it starts
            // escapes the limits.
            let attached = child.id().ok_or_else(|| SandboxError::Backend("sandbox exited at once".into()));
            if let Err(e) = attached.and_then(|pid| cgroup.attach(pid)) {
                let _ = child.start_kill();
                return Err(e);
            }
            if let Some(mut stdin) = child.stdin.take() {
                stdin.write_all(b"go\n").await.map_err(|e| SandboxError::Backend(e.to_string()))?;
            }
        }
        if let Ok(mut started) = self.inner.started.lock() {
            started.insert(name.to_owned(), Started { child, cgroup, key });
        }
        tracing::info!(sandbox = %name, tenant.id = %key.tenant, agent.id = %key.agent, "sandbox created");
        metrics::counter!("hermes_sandbox_created_total", "backend" => "local").increment(1);
        Ok(())
    }

    fn command(&self, workspace: &Path, ipc: &Path, wait_for_cgroup: bool, spec: &SandboxSpec) -> Command {
        let local = &self.inner.cfg.local;
        let mut args: Vec<String> = Vec::new();
        let mut arg = |parts: &[&str]| args.extend(parts.iter().map(|p| (*p).to_owned()));
        arg(&["--die-with-parent", "--new-session", "--hostname", "sandbox", "--cap-drop", "ALL"]);
        if self.inner.run_as.is_some() {
            // Every namespace but the user's, and just what starting the two users' programs
            // (and stopping them) takes.
            arg(&["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]);
            arg(&["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_KILL"]);
        } else {
            arg(&["--unshare-all"]);
        }
        arg(&["--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "HOME", WORKSPACE]);
        arg(&["--setenv", "LANG", "C.UTF-8", "--setenv", "SANDBOXD_LOG", "warn"]);
        for (name, value) in crate::PROXY_ENV {
            arg(&["--setenv", name, value]);
        }
        let trust_env = spec.trust.as_ref().map(|_| crate::spec::TRUST_ENV.as_slice()).unwrap_or_default();
        for (name, value) in trust_env.iter().copied().chain(spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str()))) {
            arg(&["--setenv", name, value]);
        }
        for dir in SYSTEM_DIRS.iter().chain(ETC_ENTRIES) {
            let path = Path::new(dir);
            match std::fs::read_link(path) {
                Ok(target) => arg(&["--symlink", &target.to_string_lossy(), dir]),
                Err(_) if path.exists() => arg(&["--ro-bind", dir, dir]),
                Err(_) => {}
            }
        }
        let tmp_bytes = local.tmpfs_mb.saturating_mul(1024 * 1024).to_string();
        arg(&["--proc", "/proc", "--dev", "/dev", "--perms", "01777", "--size", &tmp_bytes, "--tmpfs", "/tmp"]);
        arg(&["--size", "16777216", "--tmpfs", "/run"]);
        if self.inner.run_as.is_some() {
            // Open to all until sandboxd, first to run, has made the MCP user's home in it.
            arg(&["--perms", "01777", "--size", &tmp_bytes, "--tmpfs", MCP_HOME_MOUNT]);
        }
        arg(&["--bind", &workspace.to_string_lossy(), WORKSPACE, "--bind", &ipc.to_string_lossy(), IPC_MOUNT]);
        arg(&["--ro-bind", &self.inner.sandboxd.to_string_lossy(), SANDBOXD_MOUNT, "--chdir", WORKSPACE]);
        // Everything but the mounts above is read-only, as in a container.
        arg(&["--remount-ro", "/"]);
        let timeout = self.inner.cfg.exec_timeout_seconds.to_string();
        let listen = format!("unix:{IPC_MOUNT}/{SOCKET}");
        arg(&[SANDBOXD_MOUNT, "--listen", &listen, "--workspace", WORKSPACE, "--default-timeout", &timeout]);
        if let Some((uid, gid)) = self.inner.run_as {
            arg(&["--run-as", &format!("{uid}:{gid}"), "--mcp-as", &format!("{MCP_USER}:{MCP_USER}")]);
        }
        arg(&["--egress-socket", &format!("{IPC_MOUNT}/{EGRESS_SOCKET}")]);
        let span_args = crate::span_relay::sandboxd_args(IPC_MOUNT);
        arg(&span_args.iter().map(String::as_str).collect::<Vec<_>>());

        let mut command = if wait_for_cgroup {
            let mut c = Command::new("/bin/sh");
            c.args(["-c", "read -r _ && exec \"$@\"", "hermes-sandbox", &local.bwrap_path]).stdin(Stdio::piped());
            c
        } else {
            // Without a cgroup, the sandbox user's process count is the only fork-bomb bound.
            let mut c = Command::new("prlimit");
            c.arg(format!("--nproc={0}:{0}", local.pids_limit)).arg("--").arg(&local.bwrap_path).stdin(Stdio::null());
            c
        };
        // Nothing of the worker's environment or working directory reaches the sandbox (the
        // namespace's init keeps the environment bwrap started with).
        command
            .args(args)
            .env_clear()
            .current_dir("/")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .process_group(0)
            .kill_on_drop(true);
        command
    }

    /// Kills sandbox `name` if this worker started it, and removes its cgroup.
    async fn stop(&self, name: &str) {
        self.inner.attached.detach(name);
        let started = self.inner.started.lock().ok().and_then(|mut s| s.remove(name));
        if let Some(mut started) = started {
            let _ = started.child.kill().await;
            if let Some(cgroup) = started.cgroup.take() {
                cgroup.remove().await;
            }
        }
    }

    /// Removes this worker's sandboxes that exited, or whose daemon reports them idle (see
    /// [`common::is_idle`]) or does not answer. Each worker reaps the ones it started.
    pub async fn reap_idle(&self) -> Result<usize> {
        let names: Vec<(String, SandboxKey, bool)> = match self.inner.started.lock() {
            Ok(mut started) => started
                .iter_mut()
                .map(|(name, s)| (name.clone(), s.key, matches!(s.child.try_wait(), Ok(Some(_)))))
                .collect(),
            Err(_) => return Ok(0),
        };
        let seen = names.len();
        let mut removed = 0;
        let mut kept = Vec::new();
        for (name, key, exited) in names {
            let status = if exited {
                None
            } else {
                let client = match self.inner.attached.daemons.cached(&name) {
                    Some(c) => Ok(c),
                    None => {
                        self.inner
                            .attached
                            .daemons
                            .connect(&name, &self.ipc_dir(&name), Duration::from_secs(2), "")
                            .await
                    }
                };
                match client {
                    Ok(client) => client.status().await.ok(),
                    Err(_) => None,
                }
            };
            match status {
                Some(status) if !common::is_idle(&status, self.inner.cfg.idle_seconds) => {
                    let ids = (key.tenant.as_uuid(), key.agent.as_uuid());
                    kept.push(common::live_sandbox("local", &name, ids, &status));
                }
                _ => {
                    tracing::info!(sandbox = %name, "removing idle or exited sandbox");
                    self.stop(&name).await;
                    let _ = std::fs::remove_dir_all(self.ipc_dir(&name));
                    removed += 1;
                }
            }
        }
        self.inner.attached.census.replace(kept);
        common::record_live("local", seen - removed);
        Ok(removed)
    }
}

impl LocalSandboxes {
    /// The tenants with a workspace folder, or a sandbox this worker started.
    fn tenants_kept(&self) -> Vec<uuid::Uuid> {
        let root = Path::new(&self.inner.cfg.local.workspaces_dir);
        let mut tenants: Vec<uuid::Uuid> = std::fs::read_dir(root)
            .map(|dir| dir.flatten().filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok())).collect())
            .unwrap_or_default();
        if let Ok(started) = self.inner.started.lock() {
            tenants.extend(started.values().map(|s| s.key.tenant.as_uuid()));
        }
        tenants.sort();
        tenants.dedup();
        tenants
    }

    /// Stops `tenant`'s sandboxes this worker started and removes its workspaces.
    async fn remove_tenant(&self, tenant: hermes_core::TenantId) -> Result<usize> {
        let names: Vec<String> = match self.inner.started.lock() {
            Ok(started) => started.iter().filter(|(_, s)| s.key.tenant == tenant).map(|(n, _)| n.clone()).collect(),
            Err(_) => Vec::new(),
        };
        for name in &names {
            self.stop(name).await;
            let _ = std::fs::remove_dir_all(self.ipc_dir(name));
        }
        let workspaces = Path::new(&self.inner.cfg.local.workspaces_dir).join(tenant.to_string());
        let folders = usize::from(workspaces.exists());
        match std::fs::remove_dir_all(&workspaces) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err("cannot remove", &workspaces, e)),
        }
        Ok(names.len() + folders)
    }
}

/// An exclusive lock on `ipc`'s start, shared by every worker on this machine (released
/// when dropped).
async fn machine_lock(root: &str, ipc: &Path) -> Result<std::fs::File> {
    std::fs::create_dir_all(root).map_err(|e| io_err("cannot create", Path::new(root), e))?;
    let path = ipc.with_extension("lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| io_err("cannot open", &path, e))?;
    tokio::task::spawn_blocking(move || file.lock().map(|()| file))
        .await
        .map_err(|e| SandboxError::Backend(e.to_string()))?
        .map_err(|e| io_err("cannot lock", &path, e))
}

/// Writes `spec`'s trust files (or removes a former spec's) and its fingerprint into `ipc`.
fn write_spec_files(ipc: &Path, spec: &SandboxSpec) -> Result<()> {
    match &spec.trust {
        Some(trust) => crate::spec::write_trust(ipc, trust).map_err(|e| io_err("cannot write trust into", ipc, e))?,
        None => crate::spec::remove_trust(ipc),
    }
    let path = ipc.join(SPEC_FILE);
    std::fs::write(&path, spec.fingerprint()).map_err(|e| io_err("cannot write", &path, e))
}

impl Sandboxes for LocalSandboxes {
    fn open(&self, key: SandboxKey) -> BoxFuture<'_, Result<SandboxClient>> {
        Box::pin(async move {
            let name = self.sandbox_name(key);
            let spec = applied(self.inner.specs.of(key).await);
            let ipc = self.ipc_dir(&name);
            if made_for(&ipc) != spec.fingerprint() {
                // The agent's bound secrets changed since: open_uncached starts it again.
                self.inner.attached.daemons.forget(&name);
            }
            self.inner.attached.open(&name, key, &ipc, self.open_uncached(key, &name, &spec)).await
        })
    }

    fn set_specs(&self, source: Arc<dyn crate::SpecSource>) {
        self.inner.specs.set(source);
    }

    fn running(&self, key: SandboxKey) -> BoxFuture<'_, Result<Option<SandboxClient>>> {
        Box::pin(async move {
            let name = self.sandbox_name(key);
            let ipc = self.ipc_dir(&name);
            let probe = async {
                if !ipc.join(SOCKET).exists() {
                    return Ok(None);
                }
                Ok(self.inner.attached.daemons.connect(&name, &ipc, Duration::from_millis(300), "").await.ok())
            };
            self.inner.attached.running(&name, probe).await
        })
    }

    common::attached_sandboxes!(sandbox_name);

    fn tenants_kept(&self) -> BoxFuture<'_, Result<Vec<uuid::Uuid>>> {
        Box::pin(async move { Ok(LocalSandboxes::tenants_kept(self)) })
    }

    fn remove_tenant(&self, tenant: hermes_core::TenantId) -> BoxFuture<'_, Result<usize>> {
        Box::pin(LocalSandboxes::remove_tenant(self, tenant))
    }

    fn ping(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            let bwrap = &self.inner.cfg.local.bwrap_path;
            let out = Command::new(bwrap).arg("--version").stdin(Stdio::null()).output().await;
            match out {
                Ok(o) if o.status.success() => Ok(()),
                Ok(o) => Err(SandboxError::Unavailable(format!("{bwrap} --version failed: {}", o.status))),
                Err(e) => Err(SandboxError::Unavailable(format!("cannot run {bwrap}: {e}"))),
            }
        })
    }
}
