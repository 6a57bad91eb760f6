//! Encryption of tenant secrets at rest (provider keys now, bot tokens later):
//! AES-256-GCM with a random 96-bit nonce and the owning row named in the associated data,
//! so a ciphertext copied to another row or tenant does not decrypt.

use base64::Engine;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};

use crate::{Result, StoreError};

/// Seals and opens secrets with the installation's master key.
#[derive(Clone)]
pub struct SecretBox {
    key: std::sync::Arc<LessSafeKey>,
}

impl std::fmt::Debug for SecretBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretBox(..)")
    }
}

impl SecretBox {
    /// Builds the box from the base64 master key (32 bytes).
    pub fn from_base64(master_key: &str) -> Result<Self> {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(master_key.trim())
            .map_err(|_| StoreError::Secret("secrets.master_key is not valid base64".into()))?;
        let unbound = UnboundKey::new(&AES_256_GCM, &raw)
            .map_err(|_| StoreError::Secret("secrets.master_key must be 32 bytes".into()))?;
        Ok(Self { key: std::sync::Arc::new(LessSafeKey::new(unbound)) })
    }

    /// The box for an optional configured key (`secrets.master_key`); `None` when unset.
    pub fn from_config(master_key: Option<&str>) -> Result<Option<Self>> {
        master_key.map(Self::from_base64).transpose()
    }

    /// The configured box, or an error saying `what` needs `secrets.master_key`.
    pub fn required<'a>(secrets: Option<&'a SecretBox>, what: &str) -> Result<&'a SecretBox> {
        secrets
            .ok_or_else(|| StoreError::Secret(format!("{what} needs secrets.master_key (HERMES__SECRETS__MASTER_KEY)")))
    }

    /// A fresh random master key, base64-encoded (for installers).
    pub fn generate_master_key() -> Result<String> {
        let mut raw = [0u8; 32];
        SystemRandom::new().fill(&mut raw).map_err(|_| StoreError::Secret("no system randomness".into()))?;
        Ok(base64::engine::general_purpose::STANDARD.encode(raw))
    }

    /// Encrypts `plaintext` for the row described by `context`.
    pub fn seal(&self, context: &str, plaintext: &[u8]) -> Result<Vec<u8>> {
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new().fill(&mut nonce).map_err(|_| StoreError::Secret("no system randomness".into()))?;
        let mut data = plaintext.to_vec();
        self.key
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(context.as_bytes()), &mut data)
            .map_err(|_| StoreError::Secret("encryption failed".into()))?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&data);
        Ok(out)
    }

    /// Decrypts what [`seal`](Self::seal) produced for the same `context`.
    pub fn open(&self, context: &str, sealed: &[u8]) -> Result<Vec<u8>> {
        if sealed.len() < NONCE_LEN {
            return Err(StoreError::Secret("sealed secret is truncated".into()));
        }
        let (nonce, body) = sealed.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| StoreError::Secret("bad nonce".into()))?;
        let mut data = body.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(context.as_bytes()), &mut data)
            .map_err(|_| StoreError::Secret("secret does not decrypt with this master key".into()))?;
        Ok(plain.to_vec())
    }
}

/// A new HMAC signing secret: 32 random bytes, and how the tenant is shown them,
/// `whsec_<base64>` (the Standard Webhooks form: its libraries sign with the decoded bytes;
/// GitHub- and GitLab-style senders use the string as it is).
pub(crate) fn signing_secret() -> Result<(Vec<u8>, String)> {
    let mut key = vec![0u8; 32];
    SystemRandom::new().fill(&mut key).map_err(|_| StoreError::Secret("no system randomness".into()))?;
    let shown = format!("whsec_{}", base64::engine::general_purpose::STANDARD.encode(&key));
    Ok((key, shown))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_secrets_open_only_with_the_same_key_and_row() {
        let key = SecretBox::from_base64(&SecretBox::generate_master_key().unwrap()).unwrap();
        let sealed = key.seal("agent:t1:a1", b"sk-live").unwrap();
        assert!(!sealed.windows(7).any(|w| w == b"sk-live"), "plaintext must not be visible");
        assert_eq!(key.open("agent:t1:a1", &sealed).unwrap(), b"sk-live");
        assert!(key.open("agent:t2:a1", &sealed).is_err(), "another row's context must fail");
        let other = SecretBox::from_base64(&SecretBox::generate_master_key().unwrap()).unwrap();
        assert!(other.open("agent:t1:a1", &sealed).is_err());
        assert!(SecretBox::from_base64("c2hvcnQ=").is_err());
    }
}
