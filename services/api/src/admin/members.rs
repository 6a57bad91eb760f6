//! A tenant's people: members and their roles, and invitations by link.

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;

use hermes_core::access::AdminOp;
use hermes_core::{ErrorCode, InvitationId, PersonId};
use hermes_ops::members;
use hermes_wire::List;
use hermes_wire::admin::{Invitation, InvitationMade, Invite, Member, RoleChange, RoleChanged};

use crate::admin::errors::{Result, ops_error, path_id, store_error_for};
use crate::admin::tenant_call::{Body, TenantCall};
use crate::documented::{NoSuchTenantOrMember, ObjectPath, PersonPath, TenantNotFound, TenantPath};

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/members", tag = "admin: people", params(TenantPath),
    responses((status = 200, description = "The tenant's members", body = List<Member>),
        TenantNotFound))]
pub(crate) async fn list(call: TenantCall) -> Result<Json<List<Member>>> {
    call.list(AdminOp::ViewMembers, async |store, t| store.admin().members(t).await).await
}

#[utoipa::path(patch, path = "/admin/v1/tenants/{tenant}/members/{person}", tag = "admin: people", request_body = RoleChange,
    params(TenantPath, PersonPath),
    responses((status = 200, description = "The role before and after", body = RoleChanged),
        (status = 403, description = "The caller's role may not make this change", body = hermes_wire::ErrorBody),
        NoSuchTenantOrMember,
        (status = 409, description = "It would leave the tenant without an owner", body = hermes_wire::ErrorBody)))]
pub(crate) async fn change_role(
    call: TenantCall,
    Path((_, person)): Path<(String, String)>,
    body: Body<RoleChange>,
) -> Result<Json<RoleChanged>> {
    let (t, body) = call.allow_with_body(AdminOp::ViewMembers, body).await?;
    let who: PersonId = path_id(&person, ErrorCode::MemberNotFound, "member")?;
    let changed =
        members::change_role(&call.state.store, &call.caller.audit(), (t.id, t.standing), who, body.role).await;
    Ok(Json(changed.map_err(ops_error)?))
}

#[utoipa::path(delete, path = "/admin/v1/tenants/{tenant}/members/{person}", tag = "admin: people",
    params(TenantPath, PersonPath),
    responses((status = 204, description = "Removed: their console access to the tenant and their tokens for it end at once"),
        (status = 403, description = "The caller's role may not remove this member", body = hermes_wire::ErrorBody),
        NoSuchTenantOrMember,
        (status = 409, description = "The last owner cannot be removed", body = hermes_wire::ErrorBody)))]
pub(crate) async fn remove(call: TenantCall, Path((_, person)): Path<(String, String)>) -> Result<StatusCode> {
    let t = call.allow(AdminOp::ViewMembers).await?;
    let who: PersonId = path_id(&person, ErrorCode::MemberNotFound, "member")?;
    members::remove(&call.state.store, &call.caller.audit(), (t.id, t.standing), who).await.map_err(ops_error)?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/invitations", tag = "admin: people", params(TenantPath),
    responses((status = 200, description = "The tenant's invitations, newest first", body = List<Invitation>),
        TenantNotFound))]
pub(crate) async fn invitations(call: TenantCall) -> Result<Json<List<Invitation>>> {
    call.list(AdminOp::ViewMembers, async |store, t| store.admin().invitations(t).await).await
}

#[utoipa::path(post, path = "/admin/v1/tenants/{tenant}/invitations", tag = "admin: people", request_body = Invite,
    params(TenantPath),
    responses((status = 201, description = "The invitation and its link (shown once)", body = InvitationMade),
        (status = 400, description = "Not an email address", body = hermes_wire::ErrorBody),
        (status = 403, description = "The caller's role may not invite (owners invite owners)", body = hermes_wire::ErrorBody)))]
pub(crate) async fn invite(call: TenantCall, body: Body<Invite>) -> Result<(StatusCode, Json<InvitationMade>)> {
    let (t, body) = call.allow_with_body(AdminOp::ViewMembers, body).await?;
    let valid_for = std::time::Duration::from_secs(call.state.config.admin.invitation_days.max(1) * 86_400);
    let made = members::invite(&call.state.store, &call.caller.audit(), (t.id, t.standing), &body, valid_for).await;
    let (invitation, token) = made.map_err(ops_error)?;
    let link = call.state.config.console_link("invite", &token);
    Ok((StatusCode::CREATED, Json(InvitationMade { invitation, link })))
}

#[utoipa::path(delete, path = "/admin/v1/tenants/{tenant}/invitations/{id}", tag = "admin: people",
    params(TenantPath, ("id" = String, Path, description = "Invitation id")),
    responses((status = 204, description = "Revoked: the link stops working"),
        (status = 404, description = "No such open invitation", body = hermes_wire::ErrorBody)))]
pub(crate) async fn revoke_invitation(
    call: TenantCall,
    Path(ObjectPath { id }): Path<ObjectPath>,
) -> Result<StatusCode> {
    let t = call.allow(AdminOp::InviteMembers).await?;
    let id: InvitationId = path_id(&id, ErrorCode::NotFound, "invitation")?;
    call.state
        .store
        .admin()
        .revoke_invitation(t.id, id, &call.caller.audit())
        .await
        .map_err(|e| store_error_for(e, ErrorCode::NotFound, "invitation"))?;
    Ok(StatusCode::NO_CONTENT)
}
