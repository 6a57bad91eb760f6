//! The certificate authority the egress proxy signs its stand-in certificates with, one per
//! secret host, made when first needed and kept. Sandboxes trust its certificate; its key stays
//! with the proxy and never enters a sandbox.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::SetupError;

const COMMON_NAME: &str = "Hermes Cloud egress CA";

fn failed(what: &str) -> impl Fn(rcgen::Error) -> SetupError + '_ {
    move |e| SetupError(format!("{what}: {e}"))
}

/// The CA's parameters; the same ones rebuild its issuer from a stored key.
fn ca_params() -> Result<CertificateParams, SetupError> {
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(failed("the CA's parameters"))?;
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, COMMON_NAME);
    name.push(DnType::OrganizationName, "Hermes Cloud");
    params.distinguished_name = name;
    // It signs leaves only, never another CA.
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    Ok(params)
}

/// The egress CA and the stand-in certificates it has made.
pub struct Authority {
    cert_pem: String,
    cert_der: CertificateDer<'static>,
    key_pem: String,
    spki_sha256: String,
    issuer: Issuer<'static, KeyPair>,
    leaves: Mutex<HashMap<String, Arc<ServerConfig>>>,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority").field("cert_pem", &self.cert_pem).finish_non_exhaustive()
    }
}

impl Authority {
    /// A new CA with a fresh P-256 key.
    pub fn generate() -> Result<Self, SetupError> {
        let key = KeyPair::generate().map_err(failed("the CA's key"))?;
        let cert = ca_params()?.self_signed(&key).map_err(failed("the CA's certificate"))?;
        Self::from_pem(&cert.pem(), &key.serialize_pem())
    }

    /// The CA from its certificate and key (as [`Authority::cert_pem`] and
    /// [`Authority::key_pem`] gave them).
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self, SetupError> {
        let key = KeyPair::from_pem(key_pem).map_err(failed("the CA's key"))?;
        let spki = ring::digest::digest(&ring::digest::SHA256, &rcgen::PublicKeyData::subject_public_key_info(&key));
        let spki_sha256 = base64::engine::general_purpose::STANDARD.encode(spki.as_ref());
        let cert_der = rustls::pki_types::pem::PemObject::from_pem_slice(cert_pem.as_bytes())
            .map_err(|e| SetupError(format!("the CA's certificate: {e}")))?;
        Ok(Self {
            cert_pem: cert_pem.to_owned(),
            cert_der,
            key_pem: key_pem.to_owned(),
            spki_sha256,
            issuer: Issuer::new(ca_params()?, key),
            leaves: Mutex::new(HashMap::new()),
        })
    }

    /// The certificate sandboxes trust.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The base64 SHA-256 of the CA's public key (SPKI), which the stand-in certificates'
    /// chains carry: how a browser, which reads no CA file, is told to take them.
    pub fn spki_sha256(&self) -> &str {
        &self.spki_sha256
    }

    /// The key, to keep (sealed) where every proxy finds it. Never for a sandbox.
    pub fn key_pem(&self) -> &str {
        &self.key_pem
    }

    /// The key placeholders are made with ([`crate::placeholder`]): derived from the CA's key,
    /// so every worker has it once the CA is stored, and nothing else need be kept.
    pub fn placeholder_key(&self) -> Vec<u8> {
        let mut context = ring::digest::Context::new(&ring::digest::SHA256);
        context.update(b"hermes placeholder key\0");
        context.update(self.key_pem.as_bytes());
        context.finish().as_ref().to_vec()
    }

    /// The TLS configuration that answers a sandbox's connection to `host` (HTTP/2 or
    /// HTTP/1.1), with a certificate for `host` this CA signed.
    pub fn server_config(&self, host: &str) -> Result<Arc<ServerConfig>, SetupError> {
        let host = host.to_ascii_lowercase();
        if let Some(found) = self.leaves.lock().map_err(|_| SetupError("poisoned".into()))?.get(&host) {
            return Ok(found.clone());
        }
        let made = Arc::new(self.make(&host)?);
        let mut leaves = self.leaves.lock().map_err(|_| SetupError("poisoned".into()))?;
        Ok(leaves.entry(host).or_insert(made).clone())
    }

    fn make(&self, host: &str) -> Result<ServerConfig, SetupError> {
        let key = KeyPair::generate().map_err(failed("a leaf key"))?;
        let mut params = CertificateParams::new(vec![host.to_owned()]).map_err(failed("a leaf's name"))?;
        params.distinguished_name.push(DnType::CommonName, host);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let leaf = params.signed_by(&key, &self.issuer).map_err(failed("a leaf certificate"))?;
        let chain = vec![leaf.der().clone(), self.cert_der.clone()];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| SetupError(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| SetupError(format!("a leaf certificate: {e}")))?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(config)
    }
}
