//! Whose an address is (migration 0053). An invitation's link is handed to the inviter, so an
//! account made from one proves nothing about its address: it stays unproven until an identity
//! provider that verified the address, or an operator's sign-in link, signs it in. Whatever
//! was set on an unproven account before (its password, console sessions and admin tokens) is
//! dropped then, and when a membership is granted to it from outside: a pre-claimed address
//! never carries its claimer's password into its owner's teams.
//!
//! An identity at a provider (`iss`, `sub`) is bound to one person at its first sign-in.

use sqlx::PgConnection;

use hermes_core::PersonId;

use super::audit::{self, Audit, Change};
use crate::{Result, views::Admin};

/// What checking an identity against its binding found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdentityBinding {
    /// The person was bound to this identity before.
    Known,
    /// Bound now: the person's first sign-in through this provider.
    New,
    /// The person is bound to another subject at this provider, or this subject to another
    /// person: a reassigned address or a provider asserting someone else's.
    Mismatch,
}

/// Drops what was set on an unproven account: its password, console sessions and tokens. `Ok(false)`
/// when the account is proven (nothing is dropped).
pub(super) async fn drop_unvouched(conn: &mut PgConnection, person: PersonId, prove: bool) -> Result<bool> {
    let dropped = sqlx::query(
        "UPDATE people SET password_hash = NULL, failed_sign_ins = 0, locked_until = NULL,
                email_proven = email_proven OR $2
         WHERE id = $1 AND NOT email_proven",
    )
    .bind(person.as_uuid())
    .bind(prove)
    .execute(&mut *conn)
    .await?;
    if dropped.rows_affected() == 0 {
        return Ok(false);
    }
    sqlx::query("UPDATE console_sessions SET ended_at = now() WHERE person_id = $1 AND ended_at IS NULL")
        .bind(person.as_uuid())
        .execute(&mut *conn)
        .await?;
    sqlx::query("UPDATE admin_tokens SET revoked_at = now() WHERE person_id = $1 AND revoked_at IS NULL")
        .bind(person.as_uuid())
        .execute(&mut *conn)
        .await?;
    Ok(true)
}

impl Admin<'_> {
    /// Records that `person`'s address is proven (`how`: by what). An unproven account loses
    /// what was set on it before. Whether it was unproven. In the installation's log.
    pub async fn prove_email(self, person: PersonId, how: &str, by: &Audit) -> Result<bool> {
        let mut tx = self.system_pool().begin().await?;
        if !drop_unvouched(&mut tx, person, true).await? {
            return Ok(false);
        }
        let change = Change::new("person.email_proven", "person", person)
            .after(serde_json::json!({ "proven_by": how, "password_sessions_and_tokens": "dropped" }));
        audit::record(&mut tx, None, by, change).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Before a membership is granted to `person` from outside (an operator, a tenant's
    /// provider): an unproven account loses what was set on it, and signs in again by a way
    /// that proves its address. Whether anything was dropped. In the installation's log.
    pub async fn drop_unproven_credentials(self, person: PersonId, why: &str, by: &Audit) -> Result<bool> {
        let mut tx = self.system_pool().begin().await?;
        if !drop_unvouched(&mut tx, person, false).await? {
            return Ok(false);
        }
        let change =
            Change::new("person.credentials_dropped", "person", person).after(serde_json::json!({ "why": why }));
        audit::record(&mut tx, None, by, change).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Lets an operator sign in through the installation's identity provider (or not). `NotFound`
    /// when `person` is not an operator. In the installation's log.
    pub async fn set_operator_sso(self, person: PersonId, allowed: bool, by: &Audit) -> Result<()> {
        let mut tx = self.system_pool().begin().await?;
        let done = sqlx::query("UPDATE people SET operator_sso = $2 WHERE id = $1 AND operator")
            .bind(person.as_uuid())
            .bind(allowed)
            .execute(&mut *tx)
            .await?;
        crate::require_changed(&done)?;
        let change = Change::new("person.operator_sso_set", "person", person)
            .after(serde_json::json!({ "operator_sso": allowed }));
        audit::record(&mut tx, None, by, change).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Checks `person`'s identity at `issuer` against its binding, binding it on the first
    /// sign-in.
    pub async fn bind_identity(self, person: PersonId, issuer: &str, subject: &str) -> Result<IdentityBinding> {
        let mut tx = self.system_pool().begin().await?;
        let bound: Option<String> =
            sqlx::query_scalar("SELECT subject FROM person_identities WHERE person_id = $1 AND issuer = $2")
                .bind(person.as_uuid())
                .bind(issuer)
                .fetch_optional(&mut *tx)
                .await?;
        let found = match bound {
            Some(known) if known == subject => IdentityBinding::Known,
            Some(_) => IdentityBinding::Mismatch,
            None => {
                let made = sqlx::query(
                    "INSERT INTO person_identities (issuer, subject, person_id) VALUES ($1, $2, $3)
                     ON CONFLICT DO NOTHING",
                )
                .bind(issuer)
                .bind(subject)
                .bind(person.as_uuid())
                .execute(&mut *tx)
                .await?;
                if made.rows_affected() == 1 { IdentityBinding::New } else { IdentityBinding::Mismatch }
            }
        };
        tx.commit().await?;
        Ok(found)
    }
}
