//! A tenant's members and invitations. Changes are audited in their own transaction, and a
//! tenant always keeps at least one owner.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, Row};

use hermes_core::{InvitationId, MemberRole, PersonId, TenantId};

use super::audit::{self, Actor, ActorKind, Audit, Change};
use super::people::{Person, person, person_columns};
use crate::{Result, Store, StoreError};

/// A member of a tenant.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Member {
    #[serde(flatten)]
    pub person: Person,
    pub role: MemberRole,
    pub member_since: DateTime<Utc>,
}

/// An invitation (never its token, which is shown once).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Invitation {
    pub id: InvitationId,
    pub email: String,
    pub role: MemberRole,
    pub expires_at: DateTime<Utc>,
    pub accepted_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

/// What the refusal to leave a tenant without an owner says.
pub const LAST_OWNER: &str = "a tenant keeps at least one owner: make someone else owner first";

fn invitation(row: &sqlx::postgres::PgRow) -> Result<Invitation> {
    Ok(Invitation {
        id: InvitationId::from_uuid(row.try_get("id")?),
        email: row.try_get("email")?,
        role: crate::rows::vocab(row.try_get("role")?)?,
        expires_at: row.try_get("expires_at")?,
        accepted_at: row.try_get("accepted_at")?,
        revoked_at: row.try_get("revoked_at")?,
        created_at: row.try_get("created_at")?,
    })
}

/// Locks `tenant`'s owners and the member's row; the member's current role.
async fn lock_member(conn: &mut PgConnection, tenant: TenantId, who: PersonId) -> Result<(MemberRole, usize)> {
    let owners: Vec<uuid::Uuid> = sqlx::query_scalar(
        "SELECT person_id FROM memberships WHERE tenant_id = $1 AND (role = 'owner' OR person_id = $2) FOR UPDATE",
    )
    .bind(tenant.as_uuid())
    .bind(who.as_uuid())
    .fetch_all(&mut *conn)
    .await?;
    let role: String = sqlx::query_scalar("SELECT role FROM memberships WHERE tenant_id = $1 AND person_id = $2")
        .bind(tenant.as_uuid())
        .bind(who.as_uuid())
        .fetch_optional(&mut *conn)
        .await?
        .ok_or(StoreError::NotFound)?;
    let role: MemberRole = crate::rows::vocab(&role)?;
    let owner_count = owners.len() - usize::from(role != MemberRole::Owner);
    Ok((role, owner_count))
}

impl Store {
    /// `tenant`'s members, by email.
    pub async fn members(&self, tenant: TenantId) -> Result<Vec<Member>> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            person_columns!(),
            ", m.role, m.created_at AS member_since
             FROM memberships m JOIN people p ON p.id = m.person_id WHERE m.tenant_id = $1 ORDER BY p.email"
        ))
        .bind(tenant.as_uuid())
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(Member {
                    person: person(r)?,
                    role: crate::rows::vocab(r.try_get("role")?)?,
                    member_since: r.try_get("member_since")?,
                })
            })
            .collect()
    }

    /// Makes `who` a member of `tenant` as `role` (or changes their role), with no owner check:
    /// the operator's CLI and the first owner of a new tenant.
    pub async fn add_member(&self, tenant: TenantId, who: PersonId, role: MemberRole, by: &Audit) -> Result<()> {
        let mut tx = self.tenant_tx(tenant).await?;
        sqlx::query(
            "INSERT INTO memberships (tenant_id, person_id, role) VALUES ($1, $2, $3)
             ON CONFLICT (tenant_id, person_id) DO UPDATE SET role = EXCLUDED.role",
        )
        .bind(tenant.as_uuid())
        .bind(who.as_uuid())
        .bind(role.as_str())
        .execute(&mut *tx)
        .await
        .map_err(|e| match &e {
            sqlx::Error::Database(db) if db.is_foreign_key_violation() => StoreError::NotFound,
            _ => StoreError::from(e),
        })?;
        let change = Change::new("member.added", "person", who).after(serde_json::json!({"role": role}));
        audit::record(&mut tx, Some(tenant), by, change).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Changes a member's role; the role before. `Busy` when it would leave no owner.
    pub async fn set_member_role(
        &self,
        tenant: TenantId,
        who: PersonId,
        role: MemberRole,
        by: &Audit,
    ) -> Result<MemberRole> {
        let mut tx = self.tenant_tx(tenant).await?;
        let (before, owners) = lock_member(&mut tx, tenant, who).await?;
        if before == MemberRole::Owner && role != MemberRole::Owner && owners <= 1 {
            return Err(StoreError::Busy(LAST_OWNER.into()));
        }
        sqlx::query("UPDATE memberships SET role = $3 WHERE tenant_id = $1 AND person_id = $2")
            .bind(tenant.as_uuid())
            .bind(who.as_uuid())
            .bind(role.as_str())
            .execute(&mut *tx)
            .await?;
        let change = Change::new("member.role_changed", "person", who)
            .before(serde_json::json!({"role": before}))
            .after(serde_json::json!({"role": role}));
        audit::record(&mut tx, Some(tenant), by, change).await?;
        tx.commit().await?;
        Ok(before)
    }

    /// Removes a member (their tokens for the tenant go with them); the role they had.
    /// `Busy` when they are the last owner.
    pub async fn remove_member(&self, tenant: TenantId, who: PersonId, by: &Audit) -> Result<MemberRole> {
        let mut tx = self.tenant_tx(tenant).await?;
        let (before, owners) = lock_member(&mut tx, tenant, who).await?;
        if before == MemberRole::Owner && owners <= 1 {
            return Err(StoreError::Busy(LAST_OWNER.into()));
        }
        sqlx::query("DELETE FROM memberships WHERE tenant_id = $1 AND person_id = $2")
            .bind(tenant.as_uuid())
            .bind(who.as_uuid())
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "UPDATE admin_tokens SET revoked_at = now() WHERE tenant_id = $1 AND person_id = $2 AND revoked_at IS NULL",
        )
        .bind(tenant.as_uuid())
        .bind(who.as_uuid())
        .execute(&mut *tx)
        .await?;
        let change = Change::new("member.removed", "person", who).before(serde_json::json!({"role": before}));
        audit::record(&mut tx, Some(tenant), by, change).await?;
        tx.commit().await?;
        Ok(before)
    }

    /// The role `who` has in `tenant`, if any.
    pub async fn member_role(&self, tenant: TenantId, who: PersonId) -> Result<Option<MemberRole>> {
        let role: Option<String> =
            sqlx::query_scalar("SELECT role FROM memberships WHERE tenant_id = $1 AND person_id = $2")
                .bind(tenant.as_uuid())
                .bind(who.as_uuid())
                .fetch_optional(&mut *self.as_tenant(tenant).await?)
                .await?;
        role.as_deref().map(crate::rows::vocab).transpose()
    }

    /// Invites `email` into `tenant` as `role`, for `valid_for`; the invitation and the link
    /// token (shown once).
    pub async fn create_invitation(
        &self,
        tenant: TenantId,
        email: &str,
        role: MemberRole,
        valid_for: Duration,
        by: &Audit,
    ) -> Result<(Invitation, String)> {
        let email = super::normalize_email(email);
        let (token, hash) = super::new_secret()?;
        let invited_by =
            (by.actor.kind == ActorKind::Person).then(|| uuid::Uuid::parse_str(&by.actor.id).ok()).flatten();
        let mut tx = self.tenant_tx(tenant).await?;
        let row = sqlx::query(
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
        .map_err(|e| match &e {
            sqlx::Error::Database(db) if db.is_check_violation() => {
                StoreError::Invalid(format!("{email:?} is not an email address"))
            }
            _ => StoreError::from(e),
        })?;
        let made = invitation(&row)?;
        let change = Change::new("invitation.created", "invitation", made.id).after(&made);
        audit::record(&mut tx, Some(tenant), by, change).await?;
        tx.commit().await?;
        Ok((made, token))
    }

    /// `tenant`'s invitations, newest first (open, accepted and revoked).
    pub async fn invitations(&self, tenant: TenantId) -> Result<Vec<Invitation>> {
        let rows = sqlx::query(
            "SELECT id, email, role, expires_at, accepted_at, revoked_at, created_at FROM invitations
             WHERE tenant_id = $1 ORDER BY created_at DESC LIMIT 500",
        )
        .bind(tenant.as_uuid())
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?;
        rows.iter().map(invitation).collect()
    }

    /// Revokes an open invitation: its link stops working.
    pub async fn revoke_invitation(&self, tenant: TenantId, id: InvitationId, by: &Audit) -> Result<()> {
        let mut tx = self.tenant_tx(tenant).await?;
        let done = sqlx::query(
            "UPDATE invitations SET revoked_at = now()
             WHERE tenant_id = $1 AND id = $2 AND accepted_at IS NULL AND revoked_at IS NULL",
        )
        .bind(tenant.as_uuid())
        .bind(id.as_uuid())
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        audit::record(&mut tx, Some(tenant), by, Change::new("invitation.revoked", "invitation", id)).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Accepts an invitation by its link token: the person with the invited email (made if
    /// new, named `display_name`) joins the tenant in the invited role (an existing member
    /// keeps theirs). `None` when the link is unknown, used, revoked or expired. The link
    /// names no tenant, so this runs as the system role; the entry is the tenant's.
    pub async fn accept_invitation(
        &self,
        token: &str,
        display_name: &str,
        request_id: Option<String>,
        source_address: Option<String>,
    ) -> Result<Option<(Person, TenantId, MemberRole)>> {
        let mut tx = self.system().begin().await?;
        let Some(row) = sqlx::query(
            "UPDATE invitations SET accepted_at = now()
             WHERE hash = $1 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > now()
             RETURNING id, tenant_id, email, role",
        )
        .bind(super::secret_hash(token))
        .fetch_optional(&mut *tx)
        .await?
        else {
            return Ok(None);
        };
        let tenant = crate::rows::tenant_of(&row)?;
        let invited: MemberRole = crate::rows::vocab(row.try_get("role")?)?;
        let email: String = row.try_get("email")?;
        let id = InvitationId::from_uuid(row.try_get("id")?);
        let joined = sqlx::query(concat!(
            "INSERT INTO people AS p (id, email, display_name) VALUES ($1, $2, $3)
             ON CONFLICT (email) DO UPDATE SET email = EXCLUDED.email RETURNING ",
            person_columns!()
        ))
        .bind(PersonId::new().as_uuid())
        .bind(&email)
        .bind(display_name.chars().take(200).collect::<String>())
        .fetch_one(&mut *tx)
        .await?;
        let who = person(&joined)?;
        if who.disabled {
            return Ok(None);
        }
        sqlx::query("INSERT INTO memberships (tenant_id, person_id, role) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")
            .bind(tenant.as_uuid())
            .bind(who.id.as_uuid())
            .bind(invited.as_str())
            .execute(&mut *tx)
            .await?;
        sqlx::query("UPDATE invitations SET accepted_by = $2 WHERE id = $1")
            .bind(id.as_uuid())
            .bind(who.id.as_uuid())
            .execute(&mut *tx)
            .await?;
        let role: String = sqlx::query_scalar("SELECT role FROM memberships WHERE tenant_id = $1 AND person_id = $2")
            .bind(tenant.as_uuid())
            .bind(who.id.as_uuid())
            .fetch_one(&mut *tx)
            .await?;
        let role: MemberRole = crate::rows::vocab(&role)?;
        let by = Audit {
            actor: Actor { kind: ActorKind::Person, id: who.id.to_string(), label: who.email.clone() },
            request_id,
            source_address,
        };
        let change = Change::new("invitation.accepted", "invitation", id).after(serde_json::json!({"role": role}));
        audit::record(&mut tx, Some(tenant), &by, change).await?;
        tx.commit().await?;
        Ok(Some((who, tenant, role)))
    }
}
