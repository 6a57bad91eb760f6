//! What an agent asks of its sandboxes: one of the images the operator lists
//! (`sandbox.images`: `default`, `node`, `browser`, `data`, ...) and CPU, memory, disk and
//! process limits within the operator's maxima (`sandbox.max`). Unset fields take the
//! installation's defaults. Checked where agents are changed (`libs/ops/src/agents.rs`),
//! applied when a sandbox is created (`libs/sandbox`, `libs/sandbox-kube`).

use serde::{Deserialize, Serialize};

/// An agent's sandbox image and limits (`agents.sandbox`, migration 0063).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxChoice {
    /// The name of one of the operator's images; unset: `default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// CPUs (fractions allowed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u64>,
    /// The workspace volume's size, where the backend can limit it (set when it is created).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_mb: Option<u64>,
    /// Processes at once. Docker applies it per container; a Kubernetes pod's process limit
    /// is the kubelet's `podPidsLimit`, a node setting no pod can ask for, so it is not
    /// applied there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pids: Option<i64>,
}

impl SandboxChoice {
    /// Whether nothing is asked: the installation's defaults.
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}
