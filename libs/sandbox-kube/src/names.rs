//! The names and labels of one sandbox's objects ([`Names`], [`labels`], [`meta`]). Its own
//! file because every object carries them, those of `manifests.rs` and the TLS Secret of
//! `tls.rs` alike, and the pod manifest in turn asks `tls.rs` to serve TLS.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use hermes_config::KubernetesSandboxConfig;
use hermes_sandbox::SandboxKey;

/// The labels the worker finds a sandbox's objects by.
pub const LABEL_OWNER: &str = "hermes.io/sandbox-owner";
pub const LABEL_SANDBOX: &str = "hermes.io/sandbox";
pub const LABEL_TENANT: &str = "hermes.io/tenant";
pub const LABEL_AGENT: &str = "hermes.io/agent";
pub const LABEL_WORKSPACE: &str = "hermes.io/workspace";

/// The names of one sandbox's objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// The pod and the NetworkPolicy (DNS-1123, at most 63 characters).
    pub pod: String,
    pub secret: String,
    pub pvc: String,
}

impl Names {
    /// Short and stable per tenant-agent: the ids themselves go in labels.
    pub fn of(prefix: &str, key: SandboxKey) -> Self {
        use sha2::{Digest, Sha256};
        // The shared workspace keeps the names it had before workspaces had owners.
        let digest = Sha256::digest(format!("{}:{}{}", key.tenant, key.agent, key.workspace.suffix()));
        let short: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        let pod = format!("{prefix}-sbx-{short}");
        Self { secret: format!("{pod}-token"), pvc: format!("{pod}-ws"), pod }
    }
}

/// The labels every object of the sandbox carries: whose it is, by owner, pod, tenant, agent
/// and workspace.
pub(crate) fn labels(cfg: &KubernetesSandboxConfig, key: SandboxKey, names: &Names) -> BTreeMap<String, String> {
    BTreeMap::from([
        (LABEL_OWNER.to_owned(), cfg.name_prefix.clone()),
        (LABEL_SANDBOX.to_owned(), names.pod.clone()),
        (LABEL_TENANT.to_owned(), key.tenant.to_string()),
        (LABEL_AGENT.to_owned(), key.agent.to_string()),
        (LABEL_WORKSPACE.to_owned(), key.workspace.label()),
    ])
}

/// An object's name and labels.
pub(crate) fn meta(name: &str, labels: &BTreeMap<String, String>) -> ObjectMeta {
    ObjectMeta { name: Some(name.to_owned()), labels: Some(labels.clone()), ..Default::default() }
}
