//! A tenant's people: a member's role changed, a member removed, a person invited, and the
//! operator's direct add. Who may do which is decided here from the caller's [`Standing`]
//! (owners are the owners' to make and unmake: `op_for_role_change`), so the console, the
//! admin API and `hermesctl` (an operator, who may do all of it) keep one rule. The store
//! keeps the rule no caller may break: a tenant always has an owner.

use std::time::Duration;

use hermes_core::access::{Standing, op_for_role_change};
use hermes_core::{ErrorCode, MemberRole, PersonId, TenantId};
use hermes_store::Store;
use hermes_store::admin::Audit;
use hermes_wire::admin::{Invitation, Invite, Person, RoleChanged};

use crate::{OpsError, Result, check};

/// A tenant and where the caller stands in it.
pub type InTenant = (TenantId, Standing);

/// Gives `who` the role `role`: the role before and after. The caller needs the right to
/// change between the two roles; the tenant's last owner keeps being one (`Busy`).
pub async fn change_role(
    store: &Store,
    by: &Audit,
    (tenant, standing): InTenant,
    who: PersonId,
    role: MemberRole,
) -> Result<RoleChanged> {
    let now = role_of(store, tenant, who).await?;
    check(standing, op_for_role_change(Some(now), Some(role)))?;
    let before = store.admin().set_member_role(tenant, who, role, by).await.map_err(not_a_member)?;
    Ok(RoleChanged { person_id: who, before, role })
}

/// Removes `who` from the tenant (their console access and tokens for it end at once); the
/// role they had. The tenant's last owner cannot be removed (`Busy`).
pub async fn remove(store: &Store, by: &Audit, (tenant, standing): InTenant, who: PersonId) -> Result<MemberRole> {
    let now = role_of(store, tenant, who).await?;
    check(standing, op_for_role_change(Some(now), None))?;
    store.admin().remove_member(tenant, who, by).await.map_err(not_a_member)
}

/// Invites `invite.email` as `invite.role` for `valid_for`: the invitation and its link token
/// (shown once). Inviting an owner takes an owner's right.
pub async fn invite(
    store: &Store,
    by: &Audit,
    (tenant, standing): InTenant,
    invite: &Invite,
    valid_for: Duration,
) -> Result<(Invitation, String)> {
    check(standing, op_for_role_change(None, Some(invite.role)))?;
    Ok(store.admin().create_invitation(tenant, &invite.email, invite.role, valid_for, by).await?)
}

/// Makes `email` a member of `tenant` as `role` (a person made if new), with no invitation:
/// the operator's direct path, which may grant any role.
pub async fn add(
    store: &Store,
    by: &Audit,
    tenant: TenantId,
    (email, name): (&str, &str),
    role: MemberRole,
) -> Result<Person> {
    let person = store.admin().ensure_person(email, name, false, by).await?;
    store.admin().add_member(tenant, person.id, role, by).await?;
    Ok(person)
}

/// The role `who` has in the tenant, or not found.
async fn role_of(store: &Store, tenant: TenantId, who: PersonId) -> Result<MemberRole> {
    store
        .admin()
        .member_role(tenant, who)
        .await?
        .ok_or(OpsError::NotFound { code: ErrorCode::MemberNotFound, what: "member" })
}

fn not_a_member(err: hermes_store::StoreError) -> OpsError {
    OpsError::missing(err, ErrorCode::MemberNotFound, "member")
}
