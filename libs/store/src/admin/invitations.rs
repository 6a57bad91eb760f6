//! Invitations into a tenant, by link. The link is handed to whoever invited, not delivered to
//! the address, so holding it proves nothing about the address (security review 2026-12, H1):
//! - an address that has an account joins only when its owner accepts signed in as it;
//! - otherwise the link makes a new account, unproven ([`super::proof`]) until its address is;
//! - an operator's address is never invited, and a link never sets an existing account's
//!   password or signs anyone in as an existing person.
//!
//! Accepting is recorded in the tenant's log and in the installation's.

use std::time::Duration;

use sqlx::PgConnection;

use hermes_core::{InvitationId, MemberRole, PersonId, TenantId};

use super::audit::{self, ActorKind, Audit, Change};
use super::people::{Person, email_error, person_columns};
use crate::{Result, StoreError, views::Admin};

/// An invitation (never its token, which is shown once), as the admin API shows it.
pub use hermes_wire::admin::Invitation;

/// What an operator's address answers when invited.
pub const OPERATOR_NOT_INVITED: &str = "this address cannot be invited: it signs in as an operator of the installation";

/// Who accepts an invitation.
#[derive(Debug, Clone, Copy)]
pub enum Acceptor<'a> {
    /// The person signed in: the invitation must be for their address.
    SignedIn(PersonId),
    /// Nobody signed in: a new account for the invited address, with a name and, optionally, a
    /// password hash.
    NewAccount { display_name: &'a str, password_hash: Option<&'a str> },
}

/// What accepting did.
#[derive(Debug, Clone)]
pub enum Acceptance {
    /// Joined `tenant` as `role` (an existing member keeps theirs).
    Joined { person: Person, tenant: TenantId, role: MemberRole, new_account: bool },
    /// The invited address has an account: its owner accepts signed in as it. The link still
    /// works.
    SignInFirst { email: String },
    /// The signed-in person is not the invited address. The link still works.
    NotYours,
    /// The link is unknown, used, revoked or expired, or its address is an operator's or a
    /// disabled account's.
    Invalid,
}

/// The open invitation a token names, locked.
#[derive(sqlx::FromRow)]
struct Open {
    id: uuid::Uuid,
    #[sqlx(try_from = "crate::rows::Id")]
    tenant_id: TenantId,
    email: String,
    #[sqlx(try_from = "String")]
    role: MemberRole,
}

impl Admin<'_> {
    /// Invites `email` into `tenant` as `role`, for `valid_for`; the invitation and the link
    /// token (shown once). An operator's address is refused.
    pub async fn create_invitation(
        self,
        tenant: TenantId,
        email: &str,
        role: MemberRole,
        valid_for: Duration,
        by: &Audit,
    ) -> Result<(Invitation, String)> {
        let email = super::normalize_email(email);
        let operator: Option<bool> = sqlx::query_scalar("SELECT operator FROM people WHERE email = $1")
            .bind(&email)
            .fetch_optional(self.system_pool())
            .await?;
        if operator == Some(true) {
            return Err(StoreError::Invalid(OPERATOR_NOT_INVITED.into()));
        }
        let (token, hash) = super::new_secret()?;
        let invited_by =
            (by.actor.kind == ActorKind::Person).then(|| uuid::Uuid::parse_str(&by.actor.id).ok()).flatten();
        let mut tx = self.tenant_tx(tenant).await?;
        let made: Invitation = sqlx::query_as(
            "INSERT INTO invitations (id, tenant_id, email, role, hash, invited_by, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7))
             RETURNING id, email, role, expires_at, accepted_at, revoked_at, created_at",
        )
        .bind(InvitationId::new().as_uuid())
        .bind(tenant.as_uuid())
        .bind(&email)
        .bind(role.as_str())
        .bind(hash)
        .bind(invited_by)
        .bind(valid_for.as_secs_f64())
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| email_error(e, &email))?;
        let change = Change::new("invitation.created", "invitation", made.id).after(&made);
        audit::record(&mut tx, Some(tenant), by, change).await?;
        tx.commit().await?;
        Ok((made, token))
    }

    /// `tenant`'s invitations, newest first (open, accepted and revoked).
    pub async fn invitations(self, tenant: TenantId) -> Result<Vec<Invitation>> {
        let rows: Vec<Invitation> = sqlx::query_as(
            "SELECT id, email, role, expires_at, accepted_at, revoked_at, created_at FROM invitations
             WHERE tenant_id = $1 ORDER BY created_at DESC LIMIT 500",
        )
        .bind(tenant.as_uuid())
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?;
        Ok(rows)
    }

    /// Revokes an open invitation: its link stops working.
    pub async fn revoke_invitation(self, tenant: TenantId, id: InvitationId, by: &Audit) -> Result<()> {
        let sql = "UPDATE invitations SET revoked_at = now()
                   WHERE tenant_id = $1 AND id = $2 AND accepted_at IS NULL AND revoked_at IS NULL";
        self.revoke(tenant, sql, id.as_uuid(), by, Change::new("invitation.revoked", "invitation", id)).await
    }

    /// Accepts an invitation by its link token (see the module's rules). The link names no
    /// tenant, so this runs as the system role; the entries (by the person who joined, from
    /// `request_id` and `source_address`) are the tenant's and the installation's.
    pub async fn accept_invitation(
        self,
        token: &str,
        who: Acceptor<'_>,
        request_id: Option<String>,
        source_address: Option<String>,
    ) -> Result<Acceptance> {
        let mut tx = self.system_pool().begin().await?;
        let Some(open) = open_invitation(&mut tx, token).await? else {
            return Ok(Acceptance::Invalid);
        };
        let existing = person_by_email(&mut tx, &open.email).await?;
        let (who, new_account) = match (who, existing) {
            (_, Some(p)) if p.disabled || p.operator => return Ok(Acceptance::Invalid),
            (Acceptor::SignedIn(id), Some(p)) if p.id == id => (p, false),
            (Acceptor::SignedIn(_), _) => return Ok(Acceptance::NotYours),
            (Acceptor::NewAccount { .. }, Some(p)) => return Ok(Acceptance::SignInFirst { email: p.email }),
            (Acceptor::NewAccount { display_name, password_hash }, None) => {
                match new_account_for(&mut tx, &open.email, display_name, password_hash).await? {
                    Some(made) => (made, true),
                    // Made a moment ago by someone else: theirs to accept, signed in.
                    None => return Ok(Acceptance::SignInFirst { email: open.email }),
                }
            }
        };
        let role = join(&mut tx, &open, &who).await?;
        let by = Audit { actor: super::person_actor(&who), request_id, source_address };
        let id = InvitationId::from_uuid(open.id);
        let after = serde_json::json!({"role": role, "tenant_id": open.tenant_id, "new_account": new_account});
        audit::record(
            &mut tx,
            Some(open.tenant_id),
            &by,
            Change::new("invitation.accepted", "invitation", id).after(&after),
        )
        .await?;
        audit::record(&mut tx, None, &by, Change::new("invitation.accepted", "invitation", id).after(&after)).await?;
        tx.commit().await?;
        Ok(Acceptance::Joined { person: who, tenant: open.tenant_id, role, new_account })
    }
}

/// The open invitation `token` names, locked; `None` when it is unknown, used, revoked or
/// expired.
async fn open_invitation(db: &mut PgConnection, token: &str) -> Result<Option<Open>> {
    Ok(sqlx::query_as::<_, Open>(
        "SELECT id, tenant_id, email, role FROM invitations
         WHERE hash = $1 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > now()
         FOR UPDATE",
    )
    .bind(super::secret_hash(token))
    .fetch_optional(&mut *db)
    .await?)
}

/// The account of `email`, if there is one, locked.
async fn person_by_email(db: &mut PgConnection, email: &str) -> Result<Option<Person>> {
    Ok(sqlx::query_as(concat!("SELECT ", person_columns!(), " FROM people p WHERE p.email = $1 FOR UPDATE"))
        .bind(email)
        .fetch_optional(&mut *db)
        .await?)
}

/// A new account for `email`, its address unproven; `None` when one was made for it meanwhile.
async fn new_account_for(
    db: &mut PgConnection,
    email: &str,
    display_name: &str,
    password_hash: Option<&str>,
) -> Result<Option<Person>> {
    Ok(sqlx::query_as(concat!(
        "INSERT INTO people AS p (id, email, display_name, password_hash, email_proven)
         VALUES ($1, $2, $3, $4, false) ON CONFLICT (email) DO NOTHING RETURNING ",
        person_columns!()
    ))
    .bind(PersonId::new().as_uuid())
    .bind(email)
    .bind(display_name.chars().take(200).collect::<String>())
    .bind(password_hash)
    .fetch_optional(&mut *db)
    .await?)
}

/// Marks the invitation accepted by `who` and makes them a member with its role (an existing
/// member keeps theirs); the role they now have.
async fn join(db: &mut PgConnection, open: &Open, who: &Person) -> Result<MemberRole> {
    sqlx::query("UPDATE invitations SET accepted_at = now(), accepted_by = $2 WHERE id = $1")
        .bind(open.id)
        .bind(who.id.as_uuid())
        .execute(&mut *db)
        .await?;
    sqlx::query("INSERT INTO memberships (tenant_id, person_id, role) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")
        .bind(open.tenant_id.as_uuid())
        .bind(who.id.as_uuid())
        .bind(open.role.as_str())
        .execute(&mut *db)
        .await?;
    let role: String = sqlx::query_scalar("SELECT role FROM memberships WHERE tenant_id = $1 AND person_id = $2")
        .bind(open.tenant_id.as_uuid())
        .bind(who.id.as_uuid())
        .fetch_one(&mut *db)
        .await?;
    crate::rows::vocab(&role)
}
