//! Credentials a tenant hands out: admin API tokens (for automation of this API) and the
//! tenant's OpenAI-compatible API keys. Both are shown once, at creation.

use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;

use hermes_core::access::{AdminOp, Standing};
use hermes_core::{AdminTokenId, ApiKeyId, ErrorCode, MemberRole};
use hermes_http::ApiError;
use hermes_wire::admin::{AdminToken, ApiKey, ApiKeyMade, NewApiKey, NewToken, TokenMade};
use hermes_wire::{ErrorBody, List};

use crate::admin::caller::{Caller, Credential};
use crate::admin::errors::{ops_error, store_error, store_error_for};
use crate::admin::state::AdminState;

type Result<T, E = ApiError> = std::result::Result<T, E>;

fn lifetime(days: Option<u32>) -> Result<Duration> {
    match days.unwrap_or(90) {
        d @ 1..=366 => Ok(Duration::from_secs(u64::from(d) * 86_400)),
        _ => Err(ApiError::invalid_request(ErrorCode::InvalidValue, "expires_in_days is 1 to 366")
            .with_param("expires_in_days")),
    }
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/tokens", tag = "admin: credentials",
    params(("tenant" = String, Path, description = "Tenant id")),
    responses((status = 200, description = "The tenant's admin tokens (never their secrets)", body = List<AdminToken>),
        (status = 404, description = "No such tenant (or not yours)", body = ErrorBody)))]
pub(crate) async fn list_tokens(
    State(state): State<AdminState>,
    caller: Caller,
    Path(tenant): Path<String>,
) -> Result<Json<List<AdminToken>>> {
    let t = caller.tenant(&state, &tenant, AdminOp::ViewTokens).await?;
    let tokens = state.store.admin_tokens(t.id).await.map_err(store_error)?;
    Ok(Json(List::of(tokens)))
}

#[utoipa::path(post, path = "/admin/v1/tenants/{tenant}/tokens", tag = "admin: credentials", request_body = NewToken,
    params(("tenant" = String, Path, description = "Tenant id")),
    responses((status = 201, description = "The token and its secret, shown this once", body = TokenMade),
        (status = 400, description = "A bad name or lifetime", body = ErrorBody),
        (status = 403, description = "Above the caller's own role, or a role that may not make tokens", body = ErrorBody)))]
pub(crate) async fn create_token(
    State(state): State<AdminState>,
    caller: Caller,
    Path(tenant): Path<String>,
    body: std::result::Result<hermes_http::ApiJson<NewToken>, ApiError>,
) -> Result<(StatusCode, Json<TokenMade>)> {
    let t = caller.tenant(&state, &tenant, AdminOp::ManageTokens).await?;
    // Whose it is first: another tenant's URL is a 404 whatever the body.
    let hermes_http::ApiJson(body) = body?;
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
    let person = match (&caller.credential, body.service) {
        (_, true) => None,
        (Credential::Session { .. }, false) => caller.person.as_ref().map(|p| p.id),
        (Credential::Token(_), false) => {
            return Err(ApiError::invalid_request(
                ErrorCode::InvalidRequest,
                "a token makes only service tokens: set \"service\": true",
            ));
        }
    };
    let made = state
        .store
        .create_admin_token(t.id, person, body.name.trim(), role, lifetime(body.expires_in_days)?, &caller.audit())
        .await;
    let (token, secret) = made.map_err(store_error)?;
    Ok((StatusCode::CREATED, Json(TokenMade { token, secret })))
}

#[utoipa::path(delete, path = "/admin/v1/tenants/{tenant}/tokens/{id}", tag = "admin: credentials",
    params(("tenant" = String, Path, description = "Tenant id"), ("id" = String, Path, description = "Token id")),
    responses((status = 204, description = "Revoked: it stops working at once"),
        (status = 404, description = "No such live token", body = ErrorBody)))]
pub(crate) async fn revoke_token(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, id)): Path<(String, String)>,
) -> Result<StatusCode> {
    let t = caller.tenant(&state, &tenant, AdminOp::ManageTokens).await?;
    let id: AdminTokenId = id.parse().map_err(|_| ApiError::not_found(ErrorCode::NotFound, "no such token"))?;
    state
        .store
        .revoke_admin_token(t.id, id, &caller.audit())
        .await
        .map_err(|e| store_error_for(e, ErrorCode::NotFound, "token"))?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/keys", tag = "admin: credentials",
    params(("tenant" = String, Path, description = "Tenant id")),
    responses((status = 200, description = "The tenant's API keys (never their secrets)", body = List<ApiKey>),
        (status = 404, description = "No such tenant (or not yours)", body = ErrorBody)))]
pub(crate) async fn list_keys(
    State(state): State<AdminState>,
    caller: Caller,
    Path(tenant): Path<String>,
) -> Result<Json<List<ApiKey>>> {
    let t = caller.tenant(&state, &tenant, AdminOp::ViewKeys).await?;
    let keys = state.store.api_keys(t.id).await.map_err(store_error)?;
    Ok(Json(List::of(keys)))
}

#[utoipa::path(post, path = "/admin/v1/tenants/{tenant}/keys", tag = "admin: credentials", request_body = NewApiKey,
    params(("tenant" = String, Path, description = "Tenant id")),
    responses((status = 201, description = "The key and its secret, shown this once", body = ApiKeyMade),
        (status = 403, description = "The caller's role may not make keys", body = ErrorBody),
        (status = 404, description = "No such tenant or agent", body = ErrorBody)))]
pub(crate) async fn create_key(
    State(state): State<AdminState>,
    caller: Caller,
    Path(tenant): Path<String>,
    body: std::result::Result<hermes_http::ApiJson<NewApiKey>, ApiError>,
) -> Result<(StatusCode, Json<ApiKeyMade>)> {
    let t = caller.tenant(&state, &tenant, AdminOp::ManageKeys).await?;
    // Whose it is first: another tenant's URL is a 404 whatever the body.
    let hermes_http::ApiJson(body) = body?;
    let made = hermes_ops::keys::create(&state.store, caller.audit(), t.id, &body).await.map_err(ops_error)?;
    Ok((StatusCode::CREATED, Json(made)))
}

#[utoipa::path(delete, path = "/admin/v1/tenants/{tenant}/keys/{id}", tag = "admin: credentials",
    params(("tenant" = String, Path, description = "Tenant id"), ("id" = String, Path, description = "Key id")),
    responses((status = 204, description = "Revoked: requests with it get 401 at once"),
        (status = 404, description = "No such live key", body = ErrorBody)))]
pub(crate) async fn revoke_key(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, id)): Path<(String, String)>,
) -> Result<StatusCode> {
    let t = caller.tenant(&state, &tenant, AdminOp::ManageKeys).await?;
    let id: ApiKeyId = id.parse().map_err(|_| ApiError::not_found(ErrorCode::NotFound, "no such key"))?;
    hermes_ops::keys::revoke(&state.store, caller.audit(), t.id, id).await.map_err(ops_error)?;
    Ok(StatusCode::NO_CONTENT)
}
