//! The certificate a sandbox's programs trust beside the system's roots (the egress CA, when
//! its agent has bound secrets), as files in the sandbox's socket directory and the variables
//! that point the usual TLS clients at them. The worker writes them (Docker, local) or sandboxd
//! does from its environment (`--trust-dir`, Kubernetes).

/// The directory the trust files are in, inside the sandbox.
pub const TRUST_DIR: &str = "/hermes/ipc";
/// The variables sandboxd takes the certificate (PEM) and its pin from with `--trust-dir`.
pub const TRUST_VARIABLES: [&str; 2] = ["HERMES_SANDBOX_TRUST_PEM", "HERMES_SANDBOX_TRUST_SPKI"];

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

/// The system's roots (where the files are written), to which the extra certificate is added.
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_trust_files_are_in_the_trust_directory() {
        for path in super::TRUST_ENV.iter().map(|(_, path)| *path).chain([super::TRUST_PIN]) {
            assert!(path.starts_with(&format!("{}/", super::TRUST_DIR)), "{path}");
        }
        let named = [super::TRUST_EXTRA, super::TRUST_BUNDLE, super::TRUST_PIN].map(|p| p.rsplit('/').next().unwrap());
        assert_eq!(named, super::TRUST_FILES);
    }

    #[test]
    fn the_written_files_hold_the_certificate_alone_after_the_system_roots_and_its_pin() {
        let dir = std::env::temp_dir().join(format!("hermes-trust-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let trust = super::Trust { pem: "-----BEGIN CERTIFICATE-----\nX\n".into(), spki_sha256: "pin=".into() };
        super::write_trust(&dir, &trust).unwrap();
        let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
        assert_eq!(read("egress-ca.pem"), trust.pem);
        assert!(read("ca-bundle.pem").ends_with(&trust.pem));
        assert_eq!(read("egress-ca.spki"), "pin=");
        super::remove_trust(&dir);
        assert!(std::fs::read_dir(&dir).unwrap().next().is_none(), "removed again");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
