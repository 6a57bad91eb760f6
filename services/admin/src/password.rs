//! Local passwords: argon2id with the crate's defaults (19 MiB, 2 passes, 1 lane: OWASP's
//! recommendation), hashed on the blocking pool so a sign-in never stalls other requests. An
//! unknown email is checked against a throwaway hash, so it takes as long as a wrong password.

use std::sync::OnceLock;

use argon2::password_hash::SaltString;
use argon2::{Argon2, PasswordHash, PasswordHasher, PasswordVerifier};
use ring::rand::{SecureRandom, SystemRandom};

/// The shortest password accepted.
pub const MIN_LEN: usize = 12;
/// The longest: hashing is costly, and nobody types more.
pub const MAX_LEN: usize = 256;

/// Why a password cannot be set.
#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    #[error("a password needs at least {MIN_LEN} characters")]
    TooShort,
    #[error("a password has at most {MAX_LEN} characters")]
    TooLong,
    #[error("cannot hash: {0}")]
    Hash(String),
}

/// Checks a new password's length.
pub fn acceptable(password: &str) -> Result<(), PasswordError> {
    match password.chars().count() {
        n if n < MIN_LEN => Err(PasswordError::TooShort),
        n if n > MAX_LEN => Err(PasswordError::TooLong),
        _ => Ok(()),
    }
}

fn hash_now(password: &str) -> Result<String, PasswordError> {
    let mut salt = [0u8; 16];
    SystemRandom::new().fill(&mut salt).map_err(|_| PasswordError::Hash("no system randomness".into()))?;
    let salt = SaltString::encode_b64(&salt).map_err(|e| PasswordError::Hash(e.to_string()))?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| PasswordError::Hash(e.to_string()))
}

/// The PHC string of `password` (after [`acceptable`]).
pub async fn hash(password: String) -> Result<String, PasswordError> {
    acceptable(&password)?;
    tokio::task::spawn_blocking(move || hash_now(&password)).await.map_err(|e| PasswordError::Hash(e.to_string()))?
}

fn throwaway() -> &'static str {
    static HASH: OnceLock<String> = OnceLock::new();
    HASH.get_or_init(|| hash_now("throwaway password for unknown accounts").unwrap_or_default())
}

/// Whether `password` matches `stored` (a PHC string); with no stored hash it checks against a
/// throwaway one and says no, in the same time.
pub async fn verify(password: String, stored: Option<String>) -> bool {
    if password.chars().count() > MAX_LEN {
        return false;
    }
    tokio::task::spawn_blocking(move || {
        let known = stored.is_some();
        let stored = stored.unwrap_or_else(|| throwaway().to_owned());
        let Ok(parsed) = PasswordHash::new(&stored) else { return false };
        Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok() && known
    })
    .await
    .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hash_is_argon2id_salted_and_verifies_only_its_password() {
        let a = hash("correct horse battery".into()).await.unwrap();
        let b = hash("correct horse battery".into()).await.unwrap();
        assert!(a.starts_with("$argon2id$"), "{a}");
        assert_ne!(a, b, "every hash has its own salt");
        assert!(verify("correct horse battery".into(), Some(a.clone())).await);
        assert!(!verify("correct horse battery!".into(), Some(a)).await);
        assert!(!verify("anything at all".into(), None).await, "no account: no");
        assert!(matches!(hash("short".into()).await, Err(PasswordError::TooShort)));
        assert!(matches!(hash("x".repeat(MAX_LEN + 1)).await, Err(PasswordError::TooLong)));
    }
}
