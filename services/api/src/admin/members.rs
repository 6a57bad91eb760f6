//! A tenant's people: members and their roles, and invitations by link.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;

use hermes_core::access::{AdminOp, op_for_role_change};
use hermes_core::{ErrorCode, InvitationId, MemberRole, PersonId};
use hermes_http::ApiError;
use hermes_wire::List;
use hermes_wire::admin::{Invitation, InvitationMade, Invite, Member, RoleChanged};

use crate::admin::caller::Caller;
use crate::admin::errors::{store_error, store_error_for};
use crate::admin::state::AdminState;

type Result<T, E = ApiError> = std::result::Result<T, E>;

fn person_id(raw: &str) -> Result<PersonId> {
    raw.parse().map_err(|_| ApiError::not_found(ErrorCode::MemberNotFound, "no such member"))
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/members", tag = "admin: people",
    params(("tenant" = String, Path, description = "Tenant id")),
    responses((status = 200, description = "The tenant's members", body = List<Member>),
        (status = 404, description = "No such tenant (or not yours)", body = hermes_wire::ErrorBody)))]
pub(crate) async fn list(
    State(state): State<AdminState>,
    caller: Caller,
    Path(tenant): Path<String>,
) -> Result<Json<List<Member>>> {
    let t = caller.tenant(&state, &tenant, AdminOp::ViewMembers).await?;
    let members = state.store.members(t.id).await.map_err(store_error)?;
    Ok(Json(List::of(members)))
}

/// A member's new role.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RoleChange {
    #[schema(value_type = String, example = "admin")]
    role: MemberRole,
}

#[utoipa::path(patch, path = "/admin/v1/tenants/{tenant}/members/{person}", tag = "admin: people", request_body = RoleChange,
    params(("tenant" = String, Path, description = "Tenant id"), ("person" = String, Path, description = "Person id")),
    responses((status = 200, description = "The role before and after", body = RoleChanged),
        (status = 403, description = "The caller's role may not make this change", body = hermes_wire::ErrorBody),
        (status = 404, description = "No such tenant or member", body = hermes_wire::ErrorBody),
        (status = 409, description = "It would leave the tenant without an owner", body = hermes_wire::ErrorBody)))]
pub(crate) async fn change_role(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, person)): Path<(String, String)>,
    body: std::result::Result<hermes_http::ApiJson<RoleChange>, ApiError>,
) -> Result<Json<RoleChanged>> {
    let t = caller.tenant(&state, &tenant, AdminOp::ViewMembers).await?;
    // Whose it is first: another tenant's URL is a 404 whatever the body.
    let hermes_http::ApiJson(body) = body?;
    let who = person_id(&person)?;
    let now = state.store.member_role(t.id, who).await.map_err(store_error)?;
    let now = now.ok_or_else(|| ApiError::not_found(ErrorCode::MemberNotFound, "no such member"))?;
    t.check(op_for_role_change(Some(now), Some(body.role)))?;
    let before = state.store.set_member_role(t.id, who, body.role, &caller.audit()).await;
    let before = before.map_err(|e| store_error_for(e, ErrorCode::MemberNotFound, "member"))?;
    Ok(Json(RoleChanged { person_id: who, before, role: body.role }))
}

#[utoipa::path(delete, path = "/admin/v1/tenants/{tenant}/members/{person}", tag = "admin: people",
    params(("tenant" = String, Path, description = "Tenant id"), ("person" = String, Path, description = "Person id")),
    responses((status = 204, description = "Removed: their console access to the tenant and their tokens for it end at once"),
        (status = 403, description = "The caller's role may not remove this member", body = hermes_wire::ErrorBody),
        (status = 404, description = "No such tenant or member", body = hermes_wire::ErrorBody),
        (status = 409, description = "The last owner cannot be removed", body = hermes_wire::ErrorBody)))]
pub(crate) async fn remove(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, person)): Path<(String, String)>,
) -> Result<StatusCode> {
    let t = caller.tenant(&state, &tenant, AdminOp::ViewMembers).await?;
    let who = person_id(&person)?;
    let now = state.store.member_role(t.id, who).await.map_err(store_error)?;
    let now = now.ok_or_else(|| ApiError::not_found(ErrorCode::MemberNotFound, "no such member"))?;
    t.check(op_for_role_change(Some(now), None))?;
    state
        .store
        .remove_member(t.id, who, &caller.audit())
        .await
        .map_err(|e| store_error_for(e, ErrorCode::MemberNotFound, "member"))?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/invitations", tag = "admin: people",
    params(("tenant" = String, Path, description = "Tenant id")),
    responses((status = 200, description = "The tenant's invitations, newest first", body = List<Invitation>),
        (status = 404, description = "No such tenant (or not yours)", body = hermes_wire::ErrorBody)))]
pub(crate) async fn invitations(
    State(state): State<AdminState>,
    caller: Caller,
    Path(tenant): Path<String>,
) -> Result<Json<List<Invitation>>> {
    let t = caller.tenant(&state, &tenant, AdminOp::ViewMembers).await?;
    let list = state.store.invitations(t.id).await.map_err(store_error)?;
    Ok(Json(List::of(list)))
}

#[utoipa::path(post, path = "/admin/v1/tenants/{tenant}/invitations", tag = "admin: people", request_body = Invite,
    params(("tenant" = String, Path, description = "Tenant id")),
    responses((status = 201, description = "The invitation and its link (shown once)", body = InvitationMade),
        (status = 400, description = "Not an email address", body = hermes_wire::ErrorBody),
        (status = 403, description = "The caller's role may not invite (owners invite owners)", body = hermes_wire::ErrorBody)))]
pub(crate) async fn invite(
    State(state): State<AdminState>,
    caller: Caller,
    Path(tenant): Path<String>,
    body: std::result::Result<hermes_http::ApiJson<Invite>, ApiError>,
) -> Result<(StatusCode, Json<InvitationMade>)> {
    let t = caller.tenant(&state, &tenant, AdminOp::ViewMembers).await?;
    // Whose it is first: another tenant's URL is a 404 whatever the body.
    let hermes_http::ApiJson(body) = body?;
    t.check(op_for_role_change(None, Some(body.role)))?;
    let valid_for = std::time::Duration::from_secs(state.config.admin.invitation_days.max(1) * 86_400);
    let made = state.store.create_invitation(t.id, &body.email, body.role, valid_for, &caller.audit()).await;
    let (invitation, token) = made.map_err(store_error)?;
    let link = state.config.console_link("invite", &token);
    Ok((StatusCode::CREATED, Json(InvitationMade { invitation, link })))
}

#[utoipa::path(delete, path = "/admin/v1/tenants/{tenant}/invitations/{id}", tag = "admin: people",
    params(("tenant" = String, Path, description = "Tenant id"), ("id" = String, Path, description = "Invitation id")),
    responses((status = 204, description = "Revoked: the link stops working"),
        (status = 404, description = "No such open invitation", body = hermes_wire::ErrorBody)))]
pub(crate) async fn revoke_invitation(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, id)): Path<(String, String)>,
) -> Result<StatusCode> {
    let t = caller.tenant(&state, &tenant, AdminOp::InviteMembers).await?;
    let id: InvitationId = id.parse().map_err(|_| ApiError::not_found(ErrorCode::NotFound, "no such invitation"))?;
    state
        .store
        .revoke_invitation(t.id, id, &caller.audit())
        .await
        .map_err(|e| store_error_for(e, ErrorCode::NotFound, "invitation"))?;
    Ok(StatusCode::NO_CONTENT)
}
