//! A tenant's members (invitations: [`super::invitations`]). Changes are audited in their own
//! transaction, and a tenant always keeps at least one owner.

use sqlx::PgConnection;

use hermes_core::{MemberRole, PersonId, TenantId};

use super::audit::{self, Audit, Change};
use super::people::person_columns;
use crate::{Result, StoreError, views::Admin};

/// A member of a tenant, as the admin API shows them.
pub use hermes_wire::admin::Member;

/// What the refusal to leave a tenant without an owner says.
pub const LAST_OWNER: &str = "a tenant keeps at least one owner: make someone else owner first";

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

impl Admin<'_> {
    /// `tenant`'s members, by email.
    pub async fn members(self, tenant: TenantId) -> Result<Vec<Member>> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            person_columns!(),
            ", m.role, m.created_at AS member_since
             FROM memberships m JOIN people p ON p.id = m.person_id WHERE m.tenant_id = $1 ORDER BY p.email"
        ))
        .bind(tenant.as_uuid())
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?;
        // A role outside its vocabulary is `Corrupt`.
        rows.iter().map(crate::rows::read::<Member>).collect()
    }

    /// Makes `who` a member of `tenant` as `role` (or changes their role), with no owner check:
    /// the operator's CLI, the first owner of a new tenant, a tenant provider's `join_as`. A
    /// membership granted to an unproven account first drops what was set on it
    /// ([`super::proof`]).
    pub async fn add_member(self, tenant: TenantId, who: PersonId, role: MemberRole, by: &Audit) -> Result<()> {
        self.drop_unproven_credentials(who, "a membership was granted to the address", by).await?;
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
        .map_err(StoreError::not_found_on_foreign_key)?;
        let change = Change::new("member.added", "person", who).after(serde_json::json!({"role": role}));
        audit::record(&mut tx, Some(tenant), by, change).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Changes a member's role; the role before. `Busy` when it would leave no owner.
    pub async fn set_member_role(
        self,
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

    /// Removes a member (their tokens for the tenant, and the service tokens they made, go with
    /// them); the role they had.
    /// `Busy` when they are the last owner.
    pub async fn remove_member(self, tenant: TenantId, who: PersonId, by: &Audit) -> Result<MemberRole> {
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
        // Their own tokens, and the service tokens they made (they saw those secrets).
        sqlx::query(
            "UPDATE admin_tokens SET revoked_at = now()
             WHERE tenant_id = $1 AND (person_id = $2 OR made_by = $2) AND revoked_at IS NULL",
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
    pub async fn member_role(self, tenant: TenantId, who: PersonId) -> Result<Option<MemberRole>> {
        let role: Option<String> =
            sqlx::query_scalar("SELECT role FROM memberships WHERE tenant_id = $1 AND person_id = $2")
                .bind(tenant.as_uuid())
                .bind(who.as_uuid())
                .fetch_optional(&mut *self.as_tenant(tenant).await?)
                .await?;
        role.as_deref().map(crate::rows::vocab).transpose()
    }
}
