//! Credentials a tenant hands out: admin API tokens (for automation of this API) and the
//! tenant's OpenAI-compatible API keys. Both are shown once, at creation.

use std::time::Duration;

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;

use hermes_core::access::{AdminOp, Standing};
use hermes_core::{AdminTokenId, ApiKeyId, ErrorCode, MemberRole};
use hermes_http::ApiError;
use hermes_wire::admin::{AdminToken, ApiKey, ApiKeyMade, NewApiKey, NewToken, TokenMade};
use hermes_wire::{ErrorBody, List};

use crate::admin::caller::Credential;
use crate::admin::errors::{Result, ops_error, path_id, store_error, store_error_for};
use crate::admin::tenant_call::{Body, TenantCall};
use crate::documented::{NoSuchTenantOrAgent, ObjectPath, TenantNotFound, TenantPath};

fn lifetime(days: Option<u32>) -> Result<Duration> {
    match days.unwrap_or(90) {
        d @ 1..=366 => Ok(Duration::from_secs(u64::from(d) * 86_400)),
        _ => Err(ApiError::invalid_request(ErrorCode::InvalidValue, "expires_in_days is 1 to 366")
            .with_param("expires_in_days")),
    }
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/tokens", tag = "admin: credentials", params(TenantPath),
    responses((status = 200, description = "The tenant's admin tokens (never their secrets)", body = List<AdminToken>),
        TenantNotFound))]
pub(crate) async fn list_tokens(call: TenantCall) -> Result<Json<List<AdminToken>>> {
    call.list(AdminOp::ViewTokens, async |store, t| store.admin().admin_tokens(t).await).await
}

#[utoipa::path(post, path = "/admin/v1/tenants/{tenant}/tokens", tag = "admin: credentials", request_body = NewToken,
    params(TenantPath),
    responses((status = 201, description = "The token and its secret, shown this once", body = TokenMade),
        (status = 400, description = "A bad name or lifetime", body = ErrorBody),
        (status = 403, description = "Above the caller's own role, or a role that may not make tokens", body = ErrorBody)))]
pub(crate) async fn create_token(call: TenantCall, body: Body<NewToken>) -> Result<(StatusCode, Json<TokenMade>)> {
    let (t, body) = call.allow_with_body(AdminOp::ManageTokens, body).await?;
    let role = body.role.unwrap_or(MemberRole::Member);
    if let Standing::Member(mine) = t.standing
        && role.rank() > mine.rank()
    {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "permission_error",
            Some(ErrorCode::PermissionDenied),
            format!("a token may not do more than its maker: your role is `{mine}`"),
        ));
    }
    let person = match (&call.caller.credential, body.service) {
        (_, true) => None,
        (Credential::Session { .. }, false) => call.caller.person.as_ref().map(|p| p.id),
        (Credential::Token(_), false) => {
            return Err(ApiError::invalid_request(
                ErrorCode::InvalidRequest,
                "a token makes only service tokens: set \"service\": true",
            ));
        }
    };
    let made = call
        .state
        .store
        .admin()
        .create_admin_token(t.id, person, body.name.trim(), role, lifetime(body.expires_in_days)?, &call.caller.audit())
        .await;
    let (token, secret) = made.map_err(store_error)?;
    Ok((StatusCode::CREATED, Json(TokenMade { token, secret })))
}

#[utoipa::path(delete, path = "/admin/v1/tenants/{tenant}/tokens/{id}", tag = "admin: credentials",
    params(TenantPath, ("id" = String, Path, description = "Token id")),
    responses((status = 204, description = "Revoked: it stops working at once"),
        (status = 404, description = "No such live token", body = ErrorBody)))]
pub(crate) async fn revoke_token(call: TenantCall, Path(ObjectPath { id }): Path<ObjectPath>) -> Result<StatusCode> {
    let t = call.allow(AdminOp::ManageTokens).await?;
    let id: AdminTokenId = path_id(&id, ErrorCode::NotFound, "token")?;
    call.state
        .store
        .admin()
        .revoke_admin_token(t.id, id, &call.caller.audit())
        .await
        .map_err(|e| store_error_for(e, ErrorCode::NotFound, "token"))?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/keys", tag = "admin: credentials", params(TenantPath),
    responses((status = 200, description = "The tenant's API keys (never their secrets)", body = List<ApiKey>),
        TenantNotFound))]
pub(crate) async fn list_keys(call: TenantCall) -> Result<Json<List<ApiKey>>> {
    call.list(AdminOp::ViewKeys, async |store, t| store.tenancy().api_keys(t).await).await
}

#[utoipa::path(post, path = "/admin/v1/tenants/{tenant}/keys", tag = "admin: credentials", request_body = NewApiKey,
    params(TenantPath),
    responses((status = 201, description = "The key and its secret, shown this once", body = ApiKeyMade),
        (status = 403, description = "The caller's role may not make keys", body = ErrorBody),
        NoSuchTenantOrAgent))]
pub(crate) async fn create_key(call: TenantCall, body: Body<NewApiKey>) -> Result<(StatusCode, Json<ApiKeyMade>)> {
    let (t, body) = call.allow_with_body(AdminOp::ManageKeys, body).await?;
    let made =
        hermes_ops::keys::create(&call.state.store, call.caller.audit(), t.id, &body).await.map_err(ops_error)?;
    Ok((StatusCode::CREATED, Json(made)))
}

#[utoipa::path(delete, path = "/admin/v1/tenants/{tenant}/keys/{id}", tag = "admin: credentials",
    params(TenantPath, ("id" = String, Path, description = "Key id")),
    responses((status = 204, description = "Revoked: requests with it get 401 at once"),
        (status = 404, description = "No such live key", body = ErrorBody)))]
pub(crate) async fn revoke_key(call: TenantCall, Path(ObjectPath { id }): Path<ObjectPath>) -> Result<StatusCode> {
    let t = call.allow(AdminOp::ManageKeys).await?;
    let id: ApiKeyId = path_id(&id, ErrorCode::NotFound, "key")?;
    hermes_ops::keys::revoke(&call.state.store, call.caller.audit(), t.id, id).await.map_err(ops_error)?;
    Ok(StatusCode::NO_CONTENT)
}
