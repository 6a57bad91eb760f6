//! Local passwords: argon2id with the crate's defaults (19 MiB, 2 passes, 1 lane: OWASP's
//! recommendation), hashed on the blocking pool so a sign-in never stalls other requests. An
//! unknown email is checked against a throwaway hash, so it takes as long as a wrong password.
//!
//! Requests hash through a [`PasswordGate`]: a few at a time (each holds 19 MiB and a core), a
//! bounded few waiting, and the rest refused at once, so a flood of sign-ins from anywhere
//! cannot exhaust an API pod's memory (security review 2026-12, M2).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Semaphore;

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
    #[error("too many sign-ins are being checked at once: try again in a moment")]
    Busy,
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
fn verify_now(password: &str, stored: Option<String>) -> bool {
    if password.chars().count() > MAX_LEN {
        return false;
    }
    let known = stored.is_some();
    let stored = stored.unwrap_or_else(|| throwaway().to_owned());
    let Ok(parsed) = PasswordHash::new(&stored) else { return false };
    Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok() && known
}

/// How many password hashes run at once, and how many more may wait for a turn.
pub struct PasswordGate {
    running: Semaphore,
    admitted: Semaphore,
    now: AtomicUsize,
    peak: AtomicUsize,
}

impl PasswordGate {
    /// `running` at once (at least one), `waiting` more queued; beyond that, [`PasswordError::Busy`].
    pub fn new(running: usize, waiting: usize) -> Self {
        let running = running.max(1);
        Self {
            running: Semaphore::new(running),
            admitted: Semaphore::new(running + waiting),
            now: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        }
    }

    /// One hash per core at once, four times as many waiting.
    pub fn for_this_machine() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
        Self::new(cores, cores * 4)
    }

    /// The most hashes that ever ran at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    async fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Result<T, PasswordError> {
        let _admitted = self.admitted.try_acquire().map_err(|_| PasswordError::Busy)?;
        let _running = self.running.acquire().await.map_err(|_| PasswordError::Busy)?;
        let now = self.now.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak.fetch_max(now, Ordering::Relaxed);
        let done = tokio::task::spawn_blocking(work).await.map_err(|e| PasswordError::Hash(e.to_string()));
        self.now.fetch_sub(1, Ordering::Relaxed);
        done
    }

    /// The PHC string of `password` (after [`acceptable`]).
    pub async fn hash(&self, password: String) -> Result<String, PasswordError> {
        acceptable(&password)?;
        self.run(move || hash_now(&password)).await?
    }

    /// Whether `password` matches `stored` (see [`verify_now`]); `Busy` when the gate is full.
    pub async fn verify(&self, password: String, stored: Option<String>) -> Result<bool, PasswordError> {
        self.run(move || verify_now(&password, stored)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hash_is_argon2id_salted_and_verifies_only_its_password() {
        let gate = PasswordGate::new(2, 2);
        let a = hash("correct horse battery".into()).await.unwrap();
        let b = gate.hash("correct horse battery".into()).await.unwrap();
        assert!(a.starts_with("$argon2id$"), "{a}");
        assert_ne!(a, b, "every hash has its own salt");
        assert!(gate.verify("correct horse battery".into(), Some(a.clone())).await.unwrap());
        assert!(gate.verify("correct horse battery".into(), Some(b)).await.unwrap());
        assert!(!gate.verify("correct horse battery!".into(), Some(a)).await.unwrap());
        assert!(!gate.verify("anything at all".into(), None).await.unwrap(), "no account: no");
        assert!(matches!(hash("short".into()).await, Err(PasswordError::TooShort)));
        assert!(matches!(hash("x".repeat(MAX_LEN + 1)).await, Err(PasswordError::TooLong)));
    }

    /// A flood of sign-ins: at most `running` hashes at once (each 19 MiB), at most `waiting`
    /// more queued, and the rest refused at once rather than piling up.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_flood_runs_a_few_hashes_at_once_and_refuses_the_rest_at_once() {
        let gate = std::sync::Arc::new(PasswordGate::new(2, 3));
        let stored = hash("the right passphrase".into()).await.unwrap();
        let tries = (0..40).map(|_| {
            let (gate, stored) = (gate.clone(), stored.clone());
            hermes_telemetry::tasks::spawn("test_password_verify", async move {
                gate.verify("a wrong passphrase".into(), Some(stored)).await
            })
        });
        let answers = futures_util::future::join_all(tries).await;
        let busy = answers.iter().filter(|a| matches!(a, Ok(Err(PasswordError::Busy)))).count();
        let checked = answers.iter().filter(|a| matches!(a, Ok(Ok(false)))).count();
        assert_eq!(busy + checked, 40, "every try is answered");
        assert!(gate.peak() <= 2, "at most two hashes at once, saw {}", gate.peak());
        assert!(busy >= 40 - 5 - 5, "beyond the running and the waiting, refused at once: {busy} refused");
        assert!(checked >= 2, "the admitted ones are checked: {checked}");
    }
}
