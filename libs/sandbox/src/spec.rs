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

/// A certificate a sandbox trusts, as its programs need it.
#[derive(Debug, Clone, PartialEq)]
pub struct Trust {
    /// The certificate, PEM.
    pub pem: String,
    /// The base64 SHA-256 of its public key (SPKI): Chromium reads no CA variable, and takes
    /// a chain through this key by `--ignore-certificate-errors-spki-list`.
    pub spki_sha256: String,
}

/// Where a sandbox finds the trust files the backend writes (its socket directory), and the
/// variables that point the usual TLS clients at them.
pub const TRUST_BUNDLE: &str = "/hermes/ipc/ca-bundle.pem";
pub const TRUST_EXTRA: &str = "/hermes/ipc/egress-ca.pem";
/// The certificate's [`Trust::spki_sha256`], for the browser's launch script.
pub const TRUST_PIN: &str = "/hermes/ipc/egress-ca.spki";
pub const TRUST_ENV: [(&str, &str); 6] = [
    ("SSL_CERT_FILE", TRUST_BUNDLE),
    ("CURL_CA_BUNDLE", TRUST_BUNDLE),
    ("REQUESTS_CA_BUNDLE", TRUST_BUNDLE),
    ("GIT_SSL_CAINFO", TRUST_BUNDLE),
    ("PIP_CERT", TRUST_BUNDLE),
    ("NODE_EXTRA_CA_CERTS", TRUST_EXTRA),
];

/// The names of the trust files in the socket directory: [`TRUST_EXTRA`], [`TRUST_BUNDLE`]
/// and [`TRUST_PIN`].
const TRUST_FILES: [&str; 3] = ["egress-ca.pem", "ca-bundle.pem", "egress-ca.spki"];

/// The system's roots (the worker's), to which the sandbox's extra certificate is added.
const SYSTEM_BUNDLES: [&str; 3] =
    ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"];

/// Writes `trust` into `dir` (a sandbox's socket directory, seen inside as `/hermes/ipc`):
/// alone, after the system's roots as the bundle [`TRUST_ENV`] names, and its pin.
pub fn write_trust(dir: &std::path::Path, trust: &Trust) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let system = SYSTEM_BUNDLES.iter().find_map(|p| std::fs::read_to_string(p).ok()).unwrap_or_default();
    let pem = &trust.pem;
    let [extra, bundle, pin] = TRUST_FILES;
    let files = [(extra, pem.clone()), (bundle, format!("{system}\n{pem}")), (pin, trust.spki_sha256.clone())];
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))?;
    }
    Ok(())
}

/// Removes what [`write_trust`] wrote into `dir`, if anything (a spec without trust).
pub fn remove_trust(dir: &std::path::Path) {
    for name in TRUST_FILES {
        let _ = std::fs::remove_file(dir.join(name));
    }
}

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
    fn the_trust_files_are_where_the_socket_directory_is_mounted() {
        for path in super::TRUST_ENV.iter().map(|(_, path)| *path).chain([super::TRUST_PIN]) {
            assert!(path.starts_with(&format!("{}/", crate::common::IPC_MOUNT)), "{path}");
        }
        let named = [super::TRUST_EXTRA, super::TRUST_BUNDLE, super::TRUST_PIN].map(|p| p.rsplit('/').next().unwrap());
        assert_eq!(named, super::TRUST_FILES);
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
