//! What one sandbox runs: its agent's image and limits ([`hermes_core::SandboxChoice`]), as
//! the worker resolves them ([`SpecSource`]); unset fields take the backend's configured
//! defaults. A sandbox carries its spec's [`SandboxSpec::fingerprint`] as a label, so one
//! made under another spec is replaced when next opened (its workspace stays).

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use futures_util::future::BoxFuture;

use crate::SandboxKey;

/// A sandbox's image reference and limits; `None`: the backend's default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SandboxSpec {
    pub image: Option<String>,
    pub cpus: Option<f64>,
    pub memory_mb: Option<u64>,
    pub disk_mb: Option<u64>,
    pub pids: Option<i64>,
    /// Variables every program of the sandbox gets: the placeholders of its agent's bound
    /// secrets (issue 39). Never a secret's value.
    pub env: BTreeMap<String, String>,
    /// A certificate the sandbox's programs trust beside the system's: the egress CA, when
    /// the agent has bound secrets.
    pub trust: Option<Trust>,
}

pub use hermes_sandbox_proto::trust::{
    TRUST_BUNDLE, TRUST_DIR, TRUST_ENV, TRUST_EXTRA, TRUST_PIN, TRUST_VARIABLES, Trust, remove_trust, write_trust,
};

impl SandboxSpec {
    /// 16 hex digits naming this spec (a label value on containers and pods).
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        let text = format!(
            "{:?}|{:?}|{:?}|{:?}|{:?}",
            self.image,
            self.cpus.map(f64::to_bits),
            self.memory_mb,
            self.disk_mb,
            self.pids
        );
        // Specs from before secrets (no env, no trust) keep their fingerprint: nothing is
        // remade on upgrade.
        let text = if self.env.is_empty() && self.trust.is_none() {
            text
        } else {
            format!("{text}|{:?}|{:?}", self.env, self.trust)
        };
        Sha256::digest(text.as_bytes()).iter().take(8).map(|b| format!("{b:02x}")).collect()
    }
}

/// Where a backend learns the spec of a sandbox it is about to create (the worker reads the
/// agent's setting).
pub trait SpecSource: Send + Sync {
    fn spec(&self, key: SandboxKey) -> BoxFuture<'static, SandboxSpec>;
}

/// A backend's spec source, set once the worker starts; none: every sandbox is the default.
#[derive(Default)]
pub struct Specs(RwLock<Option<Arc<dyn SpecSource>>>);

impl Specs {
    pub fn set(&self, source: Arc<dyn SpecSource>) {
        if let Ok(mut slot) = self.0.write() {
            *slot = Some(source);
        }
    }

    /// `key`'s spec now.
    pub async fn of(&self, key: SandboxKey) -> SandboxSpec {
        let source = self.0.read().ok().and_then(|s| s.clone());
        match source {
            Some(source) => source.spec(key).await,
            None => SandboxSpec::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SandboxSpec;

    #[test]
    fn the_trust_files_are_in_the_socket_directory() {
        assert_eq!(super::TRUST_DIR, crate::common::IPC_MOUNT);
    }

    #[test]
    fn a_changed_image_or_limit_changes_the_fingerprint_and_nothing_else_does() {
        let base = SandboxSpec { image: Some("hermes-sandbox:node".into()), cpus: Some(2.0), ..Default::default() };
        assert_eq!(base.fingerprint(), base.clone().fingerprint());
        assert_eq!(base.fingerprint().len(), 16);
        for other in [
            SandboxSpec { image: Some("hermes-sandbox:data".into()), ..base.clone() },
            SandboxSpec { cpus: Some(2.5), ..base.clone() },
            SandboxSpec { memory_mb: Some(2048), ..base.clone() },
            SandboxSpec { pids: Some(512), ..base.clone() },
        ] {
            assert_ne!(other.fingerprint(), base.fingerprint(), "{other:?}");
        }
    }
}
