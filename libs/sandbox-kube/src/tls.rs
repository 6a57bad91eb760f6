//! TLS between the worker and each sandbox's daemon, without a cluster-wide PKI: every sandbox
//! gets its own key and a certificate self-signed for its pod's name, kept in a Secret of its
//! own. sandboxd presents them; the worker reads the certificate from the same Secret and
//! trusts it alone (`hermes_sandbox::PinnedCert`), so the pod network sees neither the token
//! nor the work, and no other listener (another sandbox's, or one that answers in plaintext)
//! gets them. The worker is authenticated by the sandbox's token, inside that channel.
//!
//! The key reaches sandboxd as an environment variable, like the token: with `fsGroup` a
//! Secret's files are readable by the sandbox's group, and sandboxd hides these variables
//! from every program it starts.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, EnvVar, EnvVarSource, Pod, Secret, SecretKeySelector};

use hermes_config::KubernetesSandboxConfig;
use hermes_sandbox::{SandboxError, SandboxKey};

use crate::names::{Names, labels, meta};

/// The variables sandboxd reads its certificate and key from (`--tls-cert-env`, `--tls-key-env`).
pub const CERT_ENV: &str = "HERMES_SANDBOX_TLS_CERT";
pub const KEY_ENV: &str = "HERMES_SANDBOX_TLS_KEY";
/// The keys of a `kubernetes.io/tls` Secret.
pub const CERT_KEY: &str = "tls.crt";
pub const KEY_KEY: &str = "tls.key";
const CERT_FLAG: &str = "--tls-cert-env";

/// One sandbox's key and certificate, PEM.
#[derive(Clone)]
pub struct SandboxTls {
    pub cert_pem: String,
    pub key_pem: String,
}

impl std::fmt::Debug for SandboxTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxTls").field("cert_pem", &self.cert_pem).finish_non_exhaustive()
    }
}

impl SandboxTls {
    /// A fresh P-256 key and a certificate self-signed for `name` (the pod's name, which the
    /// worker checks).
    pub fn generate(name: &str) -> Result<Self, SandboxError> {
        let failed = |e: rcgen::Error| SandboxError::Backend(format!("cannot make the sandbox's certificate: {e}"));
        let key = rcgen::KeyPair::generate().map_err(failed)?;
        let mut params = rcgen::CertificateParams::new(vec![name.to_owned()]).map_err(failed)?;
        params.distinguished_name.push(rcgen::DnType::CommonName, name);
        let cert = params.self_signed(&key).map_err(failed)?;
        Ok(Self { cert_pem: cert.pem(), key_pem: key.serialize_pem() })
    }
}

/// The name of the Secret holding the sandbox's key and certificate.
pub fn secret_name(names: &Names) -> String {
    format!("{}-tls", names.pod)
}

/// The sandbox's TLS Secret.
pub fn secret(cfg: &KubernetesSandboxConfig, key: SandboxKey, names: &Names, tls: &SandboxTls) -> Secret {
    Secret {
        metadata: meta(&secret_name(names), &labels(cfg, key, names)),
        string_data: Some(BTreeMap::from([
            (CERT_KEY.to_owned(), tls.cert_pem.clone()),
            (KEY_KEY.to_owned(), tls.key_pem.clone()),
        ])),
        type_: Some("kubernetes.io/tls".into()),
        ..Default::default()
    }
}

/// Has sandboxd serve TLS with the sandbox's key and certificate, given from its Secret.
pub fn serve_tls(container: &mut Container, names: &Names) {
    let flags = [CERT_FLAG, CERT_ENV, "--tls-key-env", KEY_ENV].map(str::to_owned);
    container.command.get_or_insert_default().extend(flags);
    let from_secret = |name: &str, key: &str| EnvVar {
        name: name.into(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: secret_name(names),
                key: key.into(),
                optional: Some(false),
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    container.env.get_or_insert_default().extend([from_secret(CERT_ENV, CERT_KEY), from_secret(KEY_ENV, KEY_KEY)]);
}

/// Whether `pod`'s sandboxd was started to serve TLS.
pub fn serves_tls(pod: &Pod) -> bool {
    let sandbox = pod.spec.as_ref().and_then(|s| s.containers.first());
    sandbox.and_then(|c| c.command.as_ref()).is_some_and(|command| command.iter().any(|a| a == CERT_FLAG))
}
