//! The objects of one sandbox, as typed Kubernetes API objects: a token Secret, a workspace
//! PVC, the pod (hardened like the Docker backend's container) and a NetworkPolicy that lets
//! only the workers in and nothing out (egress goes through the worker's proxy, over the
//! worker's own connection: `hermes_sandbox::egress_tunnel`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EmptyDirVolumeSource, EnvVar, EnvVarSource, PersistentVolumeClaim,
    PersistentVolumeClaimSpec, PersistentVolumeClaimVolumeSource, Pod, PodSecurityContext, PodSpec,
    ResourceRequirements, SeccompProfile, Secret, SecretKeySelector, SecurityContext, Volume, VolumeMount,
    VolumeResourceRequirements,
};
use k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort, NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use hermes_config::KubernetesSandboxConfig;
use hermes_sandbox::spec::{TRUST_DIR, TRUST_ENV, TRUST_VARIABLES};
use hermes_sandbox::{MCP_HOME_MOUNT, MCP_USER, PROXY_ENV, SandboxKey, SandboxSpec, WORKSPACE};

pub use crate::names::{LABEL_AGENT, LABEL_OWNER, LABEL_SANDBOX, LABEL_TENANT, LABEL_WORKSPACE, Names};
use crate::names::{labels, meta};

/// The variable sandboxd reads its token from (`--token-env`), filled from the token Secret. An
/// environment, not a file: with `fsGroup` a Secret's files are readable by the sandbox's group.
pub const TOKEN_ENV: &str = "HERMES_SANDBOX_TOKEN";
/// The uid and gid of every program in the sandbox (sandboxd itself is root: see below).
const SANDBOX_UID: i64 = 1000;

pub fn secret(cfg: &KubernetesSandboxConfig, key: SandboxKey, names: &Names, token: &str) -> Secret {
    Secret {
        metadata: meta(&names.secret, &labels(cfg, key, names)),
        string_data: Some(BTreeMap::from([("token".to_owned(), token.to_owned())])),
        type_: Some("Opaque".into()),
        ..Default::default()
    }
}

/// The label naming the spec (image and limits) a pod was made for.
pub const LABEL_SPEC: &str = "hermes.io/spec";

/// `cfg` with an agent's image and limits in place of the defaults.
pub fn with_spec(cfg: &KubernetesSandboxConfig, spec: &hermes_sandbox::SandboxSpec) -> KubernetesSandboxConfig {
    let mut shaped = cfg.clone();
    if let Some(image) = &spec.image {
        shaped.image.clone_from(image);
    }
    if let Some(cpus) = spec.cpus {
        shaped.cpu_millis = (cpus * 1000.0).round() as u64;
    }
    if let Some(mb) = spec.memory_mb {
        shaped.memory_mb = mb;
    }
    if let Some(mb) = spec.disk_mb {
        shaped.workspace_gb = mb.div_ceil(1024).max(1);
    }
    shaped
}

/// The spec a pod was made for (pods from before specs: the defaults').
pub fn spec_of(pod: &Pod) -> String {
    let label = pod.metadata.labels.as_ref().and_then(|l| l.get(LABEL_SPEC)).cloned();
    label.unwrap_or_else(|| hermes_sandbox::SandboxSpec::default().fingerprint())
}

pub fn pvc(cfg: &KubernetesSandboxConfig, key: SandboxKey, names: &Names) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: meta(&names.pvc, &labels(cfg, key, names)),
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            storage_class_name: Some(cfg.storage_class.clone()).filter(|s| !s.is_empty()),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([("storage".to_owned(), Quantity(format!("{}Gi", cfg.workspace_gb)))])),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn mount(name: &str, path: &str, read_only: bool) -> VolumeMount {
    VolumeMount { name: name.into(), mount_path: path.into(), read_only: Some(read_only), ..Default::default() }
}

fn scratch(name: &str, mb: u64) -> Volume {
    Volume {
        name: name.into(),
        empty_dir: Some(EmptyDirVolumeSource {
            medium: Some("Memory".into()),
            size_limit: Some(Quantity(format!("{mb}Mi"))),
        }),
        ..Default::default()
    }
}

/// The sandbox's pod, its programs given `spec`'s variables and trust.
pub fn pod(
    cfg: &KubernetesSandboxConfig,
    key: SandboxKey,
    names: &Names,
    spec: &SandboxSpec,
    exec_timeout_secs: u64,
) -> Pod {
    let mut container = sandbox_container(cfg, names, exec_timeout_secs);
    if cfg.tls {
        crate::tls::serve_tls(&mut container, names);
    }
    with_spec_env(&mut container, spec);
    Pod {
        metadata: meta(&names.pod, &labels(cfg, key, names)),
        spec: Some(PodSpec {
            containers: vec![container],
            runtime_class_name: Some(cfg.runtime_class.clone()).filter(|s| !s.is_empty()),
            automount_service_account_token: Some(false),
            enable_service_links: Some(false),
            host_network: Some(false),
            host_pid: Some(false),
            host_ipc: Some(false),
            restart_policy: Some("Always".into()),
            security_context: Some(PodSecurityContext {
                // The workspace volume is the sandbox group's.
                fs_group: Some(SANDBOX_UID),
                seccomp_profile: Some(SeccompProfile { type_: "RuntimeDefault".into(), localhost_profile: None }),
                ..Default::default()
            }),
            volumes: Some(pod_volumes(cfg, names)),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The one container of the pod: sandboxd, limited to the configured memory, CPU and scratch.
fn sandbox_container(cfg: &KubernetesSandboxConfig, names: &Names, exec_timeout_secs: u64) -> Container {
    let limits = BTreeMap::from([
        ("memory".to_owned(), Quantity(format!("{}Mi", cfg.memory_mb))),
        ("cpu".to_owned(), Quantity(format!("{}m", cfg.cpu_millis))),
        ("ephemeral-storage".to_owned(), Quantity(format!("{}Mi", cfg.tmpfs_mb))),
    ]);
    Container {
        name: "sandbox".into(),
        image: Some(cfg.image.clone()),
        command: Some(sandboxd_command(cfg, exec_timeout_secs)),
        ports: Some(vec![ContainerPort {
            container_port: i32::from(cfg.port),
            name: Some("sandboxd".into()),
            ..Default::default()
        }]),
        working_dir: Some(WORKSPACE.into()),
        env: Some(sandbox_env(names)),
        resources: Some(ResourceRequirements {
            limits: Some(limits.clone()),
            requests: Some(limits),
            ..Default::default()
        }),
        security_context: Some(sandboxd_security()),
        volume_mounts: Some(vec![
            mount("workspace", WORKSPACE, false),
            mount("tmp", "/tmp", false),
            mount("run", "/run", false),
            mount("mcp", MCP_HOME_MOUNT, false),
            mount("ipc", TRUST_DIR, false),
        ]),
        ..Default::default()
    }
}

/// The egress variables every sandbox has, and `spec`'s: its placeholders, and its trust,
/// which sandboxd writes into [`TRUST_DIR`] from its own environment (no worker can write
/// into the pod). sandboxd closes that directory to programs in every pod.
fn with_spec_env(container: &mut Container, spec: &SandboxSpec) {
    let value =
        |(name, value): (&str, &str)| EnvVar { name: name.into(), value: Some(value.into()), ..Default::default() };
    let env = container.env.get_or_insert_default();
    env.extend(PROXY_ENV.into_iter().map(value));
    env.extend(spec.env.iter().map(|(name, v)| value((name, v))));
    if let Some(trust) = &spec.trust {
        env.extend(TRUST_ENV.into_iter().map(value));
        let [pem, spki] = TRUST_VARIABLES;
        env.extend([value((pem, &trust.pem)), value((spki, &trust.spki_sha256))]);
    }
    container.command.get_or_insert_default().extend(["--trust-dir".to_owned(), TRUST_DIR.to_owned()]);
}

/// Whether `pod`'s sandboxd hands its programs' egress to the worker (pods of releases before
/// it went out through their NetworkPolicy, which is now closed: they are replaced).
pub fn tunnels_egress(pod: &Pod) -> bool {
    let sandbox = pod.spec.as_ref().and_then(|s| s.containers.first());
    sandbox.and_then(|c| c.command.as_ref()).is_some_and(|command| command.iter().any(|a| a == EGRESS_TUNNEL_FLAG))
}

const EGRESS_TUNNEL_FLAG: &str = "--egress-tunnel";

/// sandboxd's command line: where it listens, whom it runs programs as, and their default timeout.
fn sandboxd_command(cfg: &KubernetesSandboxConfig, exec_timeout_secs: u64) -> Vec<String> {
    vec![
        cfg.sandboxd_path.clone(),
        "--listen".into(),
        format!("tcp:0.0.0.0:{}", cfg.port),
        "--token-env".into(),
        TOKEN_ENV.into(),
        "--run-as".into(),
        format!("{SANDBOX_UID}:{SANDBOX_UID}"),
        // MCP servers: another uid, so the sandbox user can neither read their secrets nor
        // change their code; their home is made in the `mcp` volume.
        "--mcp-as".into(),
        format!("{MCP_USER}:{MCP_USER}"),
        "--workspace".into(),
        WORKSPACE.into(),
        "--default-timeout".into(),
        exec_timeout_secs.to_string(),
        // Its proxy port hands connections to the worker (the pod cannot reach one).
        EGRESS_TUNNEL_FLAG.into(),
    ]
}

/// The container's environment: home and locale, and the token from the sandbox's Secret.
fn sandbox_env(names: &Names) -> Vec<EnvVar> {
    vec![
        EnvVar { name: "HOME".into(), value: Some(WORKSPACE.into()), ..Default::default() },
        EnvVar { name: "LANG".into(), value: Some("C.UTF-8".into()), ..Default::default() },
        EnvVar {
            name: TOKEN_ENV.into(),
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: names.secret.clone(),
                    key: "token".into(),
                    optional: Some(false),
                }),
                ..Default::default()
            }),
            ..Default::default()
        },
    ]
}

/// sandboxd is root with only what starting and stopping the sandbox user's programs takes;
/// those programs (uid 1000, no capability) cannot stop it, read its token or take its port.
/// (Pod Security "baseline" allows exactly these capabilities.)
fn sandboxd_security() -> SecurityContext {
    SecurityContext {
        run_as_non_root: Some(false),
        run_as_user: Some(0),
        run_as_group: Some(0),
        read_only_root_filesystem: Some(true),
        allow_privilege_escalation: Some(false),
        privileged: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".into()]),
            add: Some(vec!["SETUID".into(), "SETGID".into(), "KILL".into()]),
        }),
        seccomp_profile: Some(SeccompProfile { type_: "RuntimeDefault".into(), localhost_profile: None }),
        ..Default::default()
    }
}

/// The workspace PVC and the in-memory scratch volumes the container mounts.
fn pod_volumes(cfg: &KubernetesSandboxConfig, names: &Names) -> Vec<Volume> {
    vec![
        Volume {
            name: "workspace".into(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: names.pvc.clone(),
                read_only: Some(false),
            }),
            ..Default::default()
        },
        scratch("tmp", cfg.tmpfs_mb),
        scratch("run", 16),
        scratch("mcp", cfg.tmpfs_mb),
        // The trust files: sandboxd writes them and closes the directory to programs.
        scratch("ipc", 1),
    ]
}

/// The sandbox's NetworkPolicy: only the workers come in, on sandboxd's port, and nothing goes
/// out (not even DNS): programs' egress reaches the worker through sandboxd.
pub fn network_policy(cfg: &KubernetesSandboxConfig, key: SandboxKey, names: &Names) -> NetworkPolicy {
    NetworkPolicy {
        metadata: meta(&names.pod, &labels(cfg, key, names)),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([(LABEL_SANDBOX.to_owned(), names.pod.clone())])),
                ..Default::default()
            }),
            // Both directions are governed, so the empty egress list means no way out.
            policy_types: Some(vec!["Ingress".into(), "Egress".into()]),
            ingress: Some(vec![NetworkPolicyIngressRule {
                from: Some(vec![NetworkPolicyPeer {
                    pod_selector: Some(LabelSelector {
                        match_labels: Some(cfg.worker_labels.clone()),
                        ..Default::default()
                    }),
                    // Workers in another namespace: without this the pod selector would look
                    // for them in the sandbox namespace only.
                    namespace_selector: (!cfg.worker_namespace.is_empty()).then(|| LabelSelector {
                        match_labels: Some(BTreeMap::from([(
                            "kubernetes.io/metadata.name".to_owned(),
                            cfg.worker_namespace.clone(),
                        )])),
                        ..Default::default()
                    }),
                    ..Default::default()
                }]),
                ports: Some(vec![NetworkPolicyPort {
                    port: Some(IntOrString::Int(i32::from(cfg.port))),
                    protocol: Some("TCP".into()),
                    ..Default::default()
                }]),
            }]),
            egress: Some(Vec::new()),
        }),
    }
}
