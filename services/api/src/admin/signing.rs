//! The keys that sign console session tokens (HS256 JWTs with a key id). The first key signs;
//! every configured key verifies, so rotating is: put the new key first, remove the old one
//! once the tokens it signed have expired (`admin.session_minutes`). Without configured keys,
//! one key is derived from the installation's master key, so every `api` pod agrees on it.

use std::collections::HashMap;

use base64::Engine;
use hermes_core::{ConsoleSessionId, PersonId};
use hmac::{Hmac, Mac};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use sha2::Sha256;

use hermes_config::HermesConfig;

/// Who issues (and accepts) console tokens.
const ISSUER: &str = "hermes-console";
/// The key id of the key derived from the master key.
const DERIVED_KID: &str = "mk1";

/// The configured keys cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("admin.session_keys: {0}")]
    Invalid(String),
}

/// What a console session token says: the person, the server-side session it belongs to, and
/// the session's CSRF token (which the console sends back in a header).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SessionClaims {
    pub sub: PersonId,
    pub sid: ConsoleSessionId,
    pub csrf: String,
    pub iat: i64,
    pub exp: i64,
    pub iss: String,
}

impl SessionClaims {
    pub fn new(person: PersonId, session: ConsoleSessionId, csrf: String, lifetime: std::time::Duration) -> Self {
        let now = chrono::Utc::now().timestamp();
        let secs = i64::try_from(lifetime.as_secs()).unwrap_or(i64::MAX / 2);
        Self { sub: person, sid: session, csrf, iat: now, exp: now.saturating_add(secs), iss: ISSUER.into() }
    }
}

/// The signing key and every verifying key, by key id.
pub struct SessionKeys {
    kid: String,
    signing: EncodingKey,
    verifying: HashMap<String, DecodingKey>,
}

impl std::fmt::Debug for SessionKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionKeys").field("kid", &self.kid).field("keys", &self.verifying.len()).finish()
    }
}

impl SessionKeys {
    /// The keys `config` names (`admin.session_keys`), else one derived from
    /// `secrets.master_key`; `None` when there is neither (the console is then off).
    pub fn from_config(config: &HermesConfig) -> Result<Option<Self>, KeyError> {
        if let Some(list) = config.admin.session_keys.as_deref().filter(|s| !s.trim().is_empty()) {
            return Self::parse(list).map(Some);
        }
        let Some(master) = config.secrets.master_key.as_deref() else { return Ok(None) };
        let master = base64::engine::general_purpose::STANDARD
            .decode(master.trim())
            .map_err(|_| KeyError::Invalid("secrets.master_key is not base64".into()))?;
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&master)
            .map_err(|_| KeyError::Invalid("secrets.master_key is empty".into()))?;
        mac.update(b"hermes console session signing key v1");
        Self::from_secrets(vec![(DERIVED_KID.to_owned(), mac.finalize().into_bytes().to_vec())]).map(Some)
    }

    /// `kid:base64,kid:base64`: every secret at least 32 bytes, every id once.
    pub fn parse(list: &str) -> Result<Self, KeyError> {
        let mut keys = Vec::new();
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (kid, secret) =
                item.split_once(':').ok_or_else(|| KeyError::Invalid("each key is kid:base64-secret".into()))?;
            let kid = kid.trim();
            if kid.is_empty() || kid.len() > 64 || keys.iter().any(|(k, _): &(String, Vec<u8>)| k == kid) {
                return Err(KeyError::Invalid(format!("key id {kid:?} is empty, too long or listed twice")));
            }
            let secret = base64::engine::general_purpose::STANDARD
                .decode(secret.trim())
                .map_err(|_| KeyError::Invalid(format!("key {kid:?} is not base64")))?;
            if secret.len() < 32 {
                return Err(KeyError::Invalid(format!(
                    "key {kid:?} has {} bytes; at least 32 are needed",
                    secret.len()
                )));
            }
            keys.push((kid.to_owned(), secret));
        }
        if keys.is_empty() {
            return Err(KeyError::Invalid("no key listed".into()));
        }
        Self::from_secrets(keys)
    }

    fn from_secrets(keys: Vec<(String, Vec<u8>)>) -> Result<Self, KeyError> {
        let unusable = |e: jsonwebtoken::errors::Error| KeyError::Invalid(e.to_string());
        let (kid, first) = keys.first().ok_or_else(|| KeyError::Invalid("no key listed".into()))?;
        let signing = EncodingKey::from_secret(first).map_err(unusable)?;
        let mut verifying = HashMap::new();
        for (k, s) in &keys {
            verifying.insert(k.clone(), DecodingKey::from_secret(s).map_err(unusable)?);
        }
        Ok(Self { kid: kid.clone(), signing, verifying })
    }

    /// A signed token for `claims`, with the signing key's id.
    pub fn sign(&self, claims: &SessionClaims) -> Result<String, jsonwebtoken::errors::Error> {
        self.sign_any(claims)
    }

    /// The claims of a session token signed by one of the keys, unexpired; `None` for
    /// anything else (unknown key id, another algorithm, a bad signature, expired, or a token
    /// of another kind, such as a sign-in flow's).
    pub fn verify(&self, token: &str) -> Option<SessionClaims> {
        self.verify_any(token, ISSUER, &["exp", "iss", "sub"])
    }

    /// Signs any claims (they name their own `iss`, which [`Self::verify_any`] checks).
    pub(crate) fn sign_any<T: serde::Serialize>(&self, claims: &T) -> Result<String, jsonwebtoken::errors::Error> {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.signing)
    }

    pub(crate) fn verify_any<T: serde::de::DeserializeOwned>(
        &self,
        token: &str,
        issuer: &str,
        required: &[&str],
    ) -> Option<T> {
        let header = jsonwebtoken::decode_header(token).ok()?;
        if header.alg != Algorithm::HS256 {
            return None;
        }
        let key = self.verifying.get(header.kid.as_deref()?)?;
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[issuer]);
        validation.set_required_spec_claims(required);
        validation.leeway = 0;
        jsonwebtoken::decode::<T>(token, key, &validation).ok().map(|data| data.claims)
    }
}

/// 32 random bytes, URL-safe base64.
pub(crate) fn random_token() -> Result<String, ring::error::Unspecified> {
    use base64::Engine;
    use ring::rand::SecureRandom;
    let mut raw = [0u8; 32];
    ring::rand::SystemRandom::new().fill(&mut raw)?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(byte: u8) -> String {
        base64::engine::general_purpose::STANDARD.encode([byte; 32])
    }

    fn claims(lifetime: u64) -> SessionClaims {
        SessionClaims::new(
            PersonId::new(),
            ConsoleSessionId::new(),
            "c".into(),
            std::time::Duration::from_secs(lifetime),
        )
    }

    #[test]
    fn a_rotated_key_still_verifies_until_it_is_removed() {
        let old = SessionKeys::parse(&format!("k1:{}", secret(1))).unwrap();
        let token = old.sign(&claims(60)).unwrap();
        let rotated = SessionKeys::parse(&format!("k2:{},k1:{}", secret(2), secret(1))).unwrap();
        assert_eq!(rotated.verify(&token), old.verify(&token), "the old key still verifies");
        assert!(rotated.verify(&token).is_some());
        let fresh = rotated.sign(&claims(60)).unwrap();
        assert_eq!(jsonwebtoken::decode_header(&fresh).unwrap().kid.as_deref(), Some("k2"), "the first key signs");
        let removed = SessionKeys::parse(&format!("k2:{}", secret(2))).unwrap();
        assert!(removed.verify(&token).is_none(), "a removed key verifies nothing");
        assert!(removed.verify(&fresh).is_some());
    }

    #[test]
    fn forged_expired_and_unsigned_tokens_are_refused() {
        let keys = SessionKeys::parse(&format!("k1:{}", secret(1))).unwrap();
        let other = SessionKeys::parse(&format!("k1:{}", secret(9))).unwrap();
        assert!(keys.verify(&other.sign(&claims(60)).unwrap()).is_none(), "another secret under the same kid");
        let mut expired = claims(60);
        expired.exp = chrono::Utc::now().timestamp() - 1;
        assert!(keys.verify(&keys.sign(&expired).unwrap()).is_none(), "expired");
        let token = keys.sign(&claims(60)).unwrap();
        let parts: Vec<&str> = token.split('.').collect();
        let none_header = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"{"alg":"none","kid":"k1"}"#);
        assert!(keys.verify(&format!("{none_header}.{}.", parts[1])).is_none(), "alg none");
        assert!(keys.verify("garbage").is_none());
    }

    #[test]
    fn bad_key_lists_are_refused_with_the_reason() {
        for (list, says) in [
            ("k1", "kid:base64"),
            (&*format!("k1:{}", base64::engine::general_purpose::STANDARD.encode([1u8; 8])), "at least 32"),
            (&*format!("k1:{0},k1:{0}", secret(1)), "twice"),
            ("k1:!!", "not base64"),
        ] {
            let err = SessionKeys::parse(list).unwrap_err().to_string();
            assert!(err.contains(says), "{list}: {err}");
        }
    }
}
