//! Sandbox backends' settings (`[sandbox]`).

use serde::{Deserialize, Serialize};

use crate::SandboxBackend;

/// Where tools that touch a shell or files run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// `docker` (a container per tenant-agent), `local` (bubblewrap on the worker's machine)
    /// or `kubernetes` (a pod per tenant-agent).
    pub backend: SandboxBackend,
    pub docker: DockerSandboxConfig,
    pub local: LocalSandboxConfig,
    pub kubernetes: KubernetesSandboxConfig,
    /// A sandbox unused this long is removed (its workspace volume stays).
    pub idle_seconds: u64,
    /// Default timeout of a terminal command.
    pub exec_timeout_seconds: u64,
    /// Address ranges sandboxes with internet access may reach although they are not public
    /// (an internal package mirror), as `a.b.c.d/n`.
    pub egress_allow_cidrs: Vec<String>,
    /// The ports sandboxes with internet access may connect to (web only by default: no mail
    /// relaying, no SSH to strangers).
    pub egress_ports: Vec<u16>,
    /// Connections one sandbox may hold open through the egress proxy at once.
    pub egress_max_connections: usize,
    /// An egress connection with no bytes either way for this long is closed.
    pub egress_idle_seconds: u64,
    /// Whether the egress proxy trusts the system's roots on its own TLS to a secret's host.
    pub egress_system_roots: bool,
    /// PEM files of more roots it trusts there (a company CA, a test CA).
    pub egress_trusted_ca_files: Vec<String>,
    /// Start an agent's sandbox when its turn starts, alongside the first model call, rather
    /// than when the first tool asks for it.
    pub prewarm: bool,
    /// The images agents may pick (`sandbox` setting's `image`), by name. `default` is the
    /// backend's own `image` unless listed. The local backend runs on the host's own files,
    /// so it has no images, and it ignores an agent's image and limits.
    pub images: Vec<SandboxImage>,
    /// The most an agent may ask for.
    pub max: SandboxMaxima,
    /// What the files people send may take per tenant, over all its workspaces' inboxes, in
    /// MB (0: unlimited); a tenant's own quota (`PUT .../quotas`) overrides it.
    pub file_storage_mb: u64,
}

/// A sandbox image agents may pick.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SandboxImage {
    /// What agents name it by: `default`, `node`, `browser`, `data`, ...
    pub name: String,
    /// The image reference the backend runs (`hermes-sandbox:node`, `registry/x@sha256:...`).
    pub reference: String,
    /// What it carries, for people choosing (`Node 20 and npx`).
    #[serde(default)]
    pub carries: String,
}

/// The most an agent may ask of a sandbox.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxMaxima {
    pub cpus: f64,
    pub memory_mb: u64,
    pub disk_mb: u64,
    pub pids: i64,
}

impl Default for SandboxMaxima {
    fn default() -> Self {
        Self { cpus: 4.0, memory_mb: 8192, disk_mb: 51_200, pids: 4096 }
    }
}

impl SandboxConfig {
    /// The images agents may pick: the listed ones, with `default` (the backend's `image`)
    /// first unless the operator listed one of that name.
    pub fn images_offered(&self) -> Vec<SandboxImage> {
        let own = match self.backend {
            SandboxBackend::Kubernetes => &self.kubernetes.image,
            _ => &self.docker.image,
        };
        let mut offered = Vec::new();
        if !self.images.iter().any(|i| i.name == "default") {
            let carries = "The installation's sandbox image".to_owned();
            offered.push(SandboxImage { name: "default".into(), reference: own.clone(), carries });
        }
        offered.extend(self.images.iter().cloned());
        offered
    }

    /// The reference of the image named `name` (`None`: `default`); `None` when not offered.
    pub fn image_reference(&self, name: Option<&str>) -> Option<String> {
        let name = name.unwrap_or("default");
        self.images_offered().into_iter().find(|i| i.name == name).map(|i| i.reference)
    }
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            backend: SandboxBackend::Docker,
            docker: DockerSandboxConfig::default(),
            local: LocalSandboxConfig::default(),
            kubernetes: KubernetesSandboxConfig::default(),
            idle_seconds: 1800,
            exec_timeout_seconds: 180,
            egress_allow_cidrs: Vec::new(),
            egress_ports: vec![80, 443],
            egress_max_connections: 64,
            egress_idle_seconds: 300,
            egress_system_roots: true,
            egress_trusted_ca_files: Vec::new(),
            prewarm: true,
            file_storage_mb: 1024,
            images: Vec::new(),
            max: SandboxMaxima::default(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct DockerSandboxConfig {
    /// Docker socket; empty uses `DOCKER_HOST` or the default socket.
    pub socket: String,
    pub image: String,
    pub memory_mb: u64,
    pub cpus: f64,
    pub pids_limit: i64,
    pub tmpfs_mb: u64,
    /// Prefix of container and volume names.
    pub name_prefix: String,
    /// sandboxd's path inside the image.
    pub sandboxd_path: String,
    /// Host directory holding one socket directory per sandbox (bind-mounted into it).
    pub ipc_dir: String,
    /// Size limit of each workspace volume in MiB (0: none). Docker enforces it only where
    /// its storage allows (xfs with project quotas); elsewhere it is skipped with a warning.
    pub workspace_quota_mb: u64,
}

impl Default for DockerSandboxConfig {
    fn default() -> Self {
        Self {
            socket: String::new(),
            image: "hermes-sandbox:latest".into(),
            memory_mb: 1024,
            cpus: 1.0,
            pids_limit: 256,
            tmpfs_mb: 256,
            name_prefix: "hermes".into(),
            sandboxd_path: "/opt/hermes/bin/hermes-sandboxd".into(),
            ipc_dir: "/tmp/hermes-sandboxes".into(),
            workspace_quota_mb: 0,
        }
    }
}

/// The Kubernetes backend: a pod per tenant-agent with a PVC workspace, reached on the pod's
/// IP with a per-sandbox token; a NetworkPolicy lets only the workers in.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct KubernetesSandboxConfig {
    /// Namespace of the sandboxes; empty: the worker's own (from the service account).
    pub namespace: String,
    pub image: String,
    /// sandboxd's path inside the image.
    pub sandboxd_path: String,
    /// The port sandboxd listens on in the pod.
    pub port: u16,
    /// The worker reaches sandboxd over TLS: each sandbox gets its own key and self-signed
    /// certificate (in a Secret), which the worker pins, refusing any other and plaintext.
    pub tls: bool,
    /// gVisor, Kata, ...: the pods' RuntimeClass; empty for the cluster's default.
    pub runtime_class: String,
    /// The PVC's storage class; empty for the cluster's default.
    pub storage_class: String,
    pub workspace_gb: u64,
    pub memory_mb: u64,
    /// CPU limit in millicores.
    pub cpu_millis: u64,
    pub tmpfs_mb: u64,
    /// Labels of the worker pods: the only pods the NetworkPolicy lets reach a sandbox.
    pub worker_labels: std::collections::BTreeMap<String, String>,
    /// The workers' namespace when it is not the sandboxes' (the chart sets it from the pod's
    /// own): a NetworkPolicy's pod selector alone matches pods of its own namespace only.
    /// Empty: the workers run in the sandbox namespace.
    pub worker_namespace: String,
    /// Prefix of the objects' names.
    pub name_prefix: String,
    /// How long a new pod may take to be scheduled, pulled and answer.
    pub start_timeout_seconds: u64,
}

impl Default for KubernetesSandboxConfig {
    fn default() -> Self {
        Self {
            namespace: String::new(),
            image: "hermes-sandbox:latest".into(),
            sandboxd_path: "/opt/hermes/bin/hermes-sandboxd".into(),
            port: 7070,
            tls: true,
            runtime_class: String::new(),
            storage_class: String::new(),
            workspace_gb: 5,
            memory_mb: 1024,
            cpu_millis: 1000,
            tmpfs_mb: 256,
            worker_labels: [("app.kubernetes.io/component".to_owned(), "worker".to_owned())].into(),
            worker_namespace: String::new(),
            name_prefix: "hermes".into(),
            start_timeout_seconds: 120,
        }
    }
}

/// The bubblewrap backend: sandboxes as namespaces on the worker's own machine, for one
/// machine without Docker. They live as long as the worker that started them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct LocalSandboxConfig {
    pub bwrap_path: String,
    /// sandboxd on the host; empty means `hermes-sandboxd` beside the running executable.
    pub sandboxd_path: String,
    /// One workspace directory per tenant-agent under here.
    pub workspaces_dir: String,
    /// Host directory holding one socket directory per sandbox.
    pub ipc_dir: String,
    /// The user sandboxes run as when the worker runs as root (else the worker's own).
    pub uid: u32,
    pub gid: u32,
    pub pids_limit: i64,
    pub memory_mb: u64,
    pub tmpfs_mb: u64,
    /// Parent cgroup for per-sandbox limits: `auto` (`/sys/fs/cgroup`, v2 or v1), a path, or
    /// `off` (then only an RLIMIT_NPROC for the sandbox user bounds processes).
    pub cgroup: String,
    /// Prefix of sandbox and cgroup names.
    pub name_prefix: String,
}

impl Default for LocalSandboxConfig {
    fn default() -> Self {
        Self {
            bwrap_path: "bwrap".into(),
            sandboxd_path: String::new(),
            workspaces_dir: "/var/lib/hermes/workspaces".into(),
            ipc_dir: "/tmp/hermes-local-sandboxes".into(),
            uid: 1000,
            gid: 1000,
            pids_limit: 256,
            memory_mb: 1024,
            tmpfs_mb: 256,
            cgroup: "auto".into(),
            name_prefix: "hermes".into(),
        }
    }
}
