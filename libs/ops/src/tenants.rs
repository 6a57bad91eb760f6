//! Tenants: made by an operator, with an invitation for their first owner when one is named.

use std::time::Duration;

use hermes_core::MemberRole;
use hermes_store::admin::{Audit, Change};
use hermes_store::{Store, Tenant};
use hermes_wire::admin::NewTenant;

use crate::Result;

/// A tenant just made, and the sign-in token of its first owner's invitation if one was asked
/// for (the front end turns it into a console link).
#[derive(Debug)]
pub struct Made {
    pub tenant: Tenant,
    pub owner_invitation: Option<String>,
}

/// Makes the tenant `new` names, recorded in the installation's log; its first owner, if
/// named, is invited for `invitation_valid_for`. `Conflict` when the name is taken.
pub async fn create(store: &Store, by: Audit, new: &NewTenant, invitation_valid_for: Duration) -> Result<Made> {
    let mut tx = store.audited_installation(by.clone()).await?;
    let tenant = tx.create_tenant(new.name.trim()).await?;
    tx.commit(Change::new("tenant.created", "tenant", tenant.id).after(&tenant)).await?;
    let owner_invitation = match new.owner_email.as_deref() {
        Some(email) => {
            let made =
                store.admin().create_invitation(tenant.id, email, MemberRole::Owner, invitation_valid_for, &by).await?;
            Some(made.1)
        }
        None => None,
    };
    Ok(Made { tenant, owner_invitation })
}
