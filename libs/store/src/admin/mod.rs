//! The admin plane's storage (migration 0045): people and how they sign in ([`people`]),
//! console sessions and one-time links ([`console`]), tenants' members and invitations
//! ([`members`]), admin API tokens ([`tokens`]), tenants' own identity providers ([`sso`], migration
//! 0047), the append-only audit log ([`audit`]) and changes audited in their own transaction
//! ([`audited`]).
//!
//! Signing in comes before any tenant is known, so [`people`], [`console`] and token
//! authentication run as the system role, like API-key authentication; what a person does in
//! a tenant afterwards is tenant-scoped like everything else. Every admin write records its
//! entry in the same transaction as the change: the methods here take an [`Audit`], and the
//! admin API's and chat commands' other writes go through an [`AuditedTx`].

pub mod audit;
pub mod audited;
pub mod console;
pub mod invitations;
pub mod members;
pub mod people;
pub mod proof;
pub mod rollups;
pub mod sso;
pub mod tokens;
pub mod turns;

pub use audit::{Actor, ActorKind, Audit, AuditEntry, AuditFilter, AuditPage, Change};
pub use audited::{AuditedTx, Installation};
pub use console::LiveSession;
pub use invitations::{Acceptance, Acceptor, Invitation};
pub use members::Member;
pub use people::{Membership, Person, SignInRecord};
pub use proof::IdentityBinding;
pub use rollups::{RollupGroup, RollupLine};
pub use sso::{SsoProvider, SsoSettings, TenantSso};
pub use tokens::{AdminToken, TokenAuth};
pub use turns::{OpenTurn, WaitingQuestion};

use ring::rand::{SecureRandom, SystemRandom};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use hermes_core::TenantId;

use crate::{Result, StoreError, views::Admin};

/// A fresh secret of 32 random bytes, URL-safe, and the SHA-256 it is stored as.
pub(crate) fn new_secret() -> Result<(String, Vec<u8>)> {
    use base64::Engine;
    let mut raw = [0u8; 32];
    SystemRandom::new().fill(&mut raw).map_err(|_| StoreError::Secret("no system randomness".into()))?;
    let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw);
    let hash = secret_hash(&token);
    Ok((token, hash))
}

/// How a presented secret is looked up (it carries 256 random bits: a fast hash is enough).
pub(crate) fn secret_hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// An email as stored: trimmed and lower-cased (the column's CHECK refuses anything else).
pub fn normalize_email(email: &str) -> String {
    email.trim().to_lowercase()
}

impl Admin<'_> {
    /// Revokes `tenant`'s object `id` with `sql` (the tenant is `$1`, the id `$2`) and records
    /// `change` in the same transaction; `NotFound` when `sql` revoked nothing (unknown, or
    /// revoked or used already).
    async fn revoke(self, tenant: TenantId, sql: &'static str, id: Uuid, by: &Audit, change: Change) -> Result<()> {
        let mut tx = self.tenant_tx(tenant).await?;
        let done = sqlx::query(sql).bind(tenant.as_uuid()).bind(id).execute(&mut *tx).await?;
        crate::require_changed(&done)?;
        audit::record(&mut tx, Some(tenant), by, change).await?;
        tx.commit().await?;
        Ok(())
    }
}

/// A person acting for themselves, as the audit log records them.
pub(crate) fn person_actor(person: &Person) -> Actor {
    Actor { kind: ActorKind::Person, id: person.id.to_string(), label: person.email.clone() }
}
