//! Tenants' own identity providers: an operator sets one for a tenant's email domains (the
//! domains are the operator's to give: a tenant claiming `gmail.com` would sign in strangers),
//! the tenant's people see it, and the sign-in flow (`oidc.rs`, `oidc_person.rs`) goes through it.

use axum::Json;
use axum::http::StatusCode;
use serde::Deserialize;

use hermes_core::access::AdminOp;
use hermes_core::{ErrorCode, MemberRole};
use hermes_http::ApiError;
use hermes_store::admin::SsoSettings;

use crate::admin::errors::{Result, store_error, store_error_for, value_conflict};
use crate::admin::tenant_call::{Body, TenantCall};
use crate::documented::{NoOwnProvider, NoSuchTenant, OperatorsOnly, TenantPath};

/// A tenant's provider.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SsoBody {
    /// The provider's issuer URL (its discovery document is at `/.well-known/openid-configuration`).
    issuer: String,
    client_id: String,
    /// Write-only; absent keeps the stored one, `""` removes it (a public client).
    client_secret: Option<String>,
    /// Default `openid email profile`.
    scopes: Option<String>,
    /// 1 to 20 domains (`acme.com`); a domain is one tenant's at most.
    email_domains: Vec<String>,
    /// `member` or `admin`: someone at these domains who is not a member yet joins as that on
    /// signing in. Absent: only existing members sign in.
    #[schema(value_type = Option<String>)]
    join_as: Option<MemberRole>,
    /// Accept ID tokens that do not say `email_verified: true` (default false). Only for a
    /// provider that never sends the claim and whose users cannot choose their email.
    #[serde(default)]
    trust_unverified_email: bool,
}

fn bad(param: &'static str, msg: impl Into<String>) -> ApiError {
    ApiError::invalid_request(ErrorCode::InvalidValue, msg.into()).with_param(param)
}

fn valid_domain(domain: &str) -> bool {
    let labels: Vec<&str> = domain.split('.').collect();
    labels.len() >= 2
        && domain.len() <= 253
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        })
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/sso", tag = "admin: sign-in", params(TenantPath),
    responses((status = 200, description = "The tenant's own identity provider (its secret never shown)", body = Object),
        NoOwnProvider))]
pub(crate) async fn get(call: TenantCall) -> Result<Json<hermes_store::admin::TenantSso>> {
    let t = call.allow(AdminOp::ViewTenant).await?;
    let sso = call.state.store.admin().tenant_sso(t.id).await;
    let sso = sso.map_err(|e| store_error_for(e, ErrorCode::NotFound, "identity provider"))?;
    Ok(Json(sso))
}

#[utoipa::path(put, path = "/admin/v1/tenants/{tenant}/sso", tag = "admin: sign-in", request_body = SsoBody,
    params(TenantPath),
    responses((status = 200, description = "Set: people at these domains sign in through it from now on", body = Object),
        (status = 400, description = "A bad issuer URL, domain or role", body = hermes_wire::ErrorBody),
        OperatorsOnly,
        NoSuchTenant,
        (status = 409, description = "A domain is another tenant's", body = hermes_wire::ErrorBody)))]
pub(crate) async fn set(call: TenantCall, body: Body<SsoBody>) -> Result<Json<hermes_store::admin::TenantSso>> {
    let (t, body) = call.allow_with_body(AdminOp::ConfigureSso, body).await?;
    let issuer = reqwest::Url::parse(body.issuer.trim()).map_err(|_| bad("issuer", "not a URL"))?;
    if !matches!(issuer.scheme(), "https" | "http") || issuer.host_str().is_none() {
        return Err(bad("issuer", "an http(s) URL"));
    }
    let mut domains: Vec<String> = body.email_domains.iter().map(|d| d.trim().to_ascii_lowercase()).collect();
    domains.sort();
    domains.dedup();
    if domains.is_empty() || domains.len() > 20 {
        return Err(bad("email_domains", "1 to 20 domains"));
    }
    if let Some(wrong) = domains.iter().find(|d| !valid_domain(d)) {
        return Err(bad("email_domains", format!("{wrong:?} is not a domain")));
    }
    if body.join_as == Some(MemberRole::Owner) {
        return Err(bad("join_as", "member or admin: owners are made by owners"));
    }
    if body.client_id.trim().is_empty() {
        return Err(bad("client_id", "required"));
    }
    let settings = SsoSettings {
        issuer: issuer.as_str().trim_end_matches('/').to_owned(),
        client_id: body.client_id.trim().to_owned(),
        client_secret: body.client_secret,
        scopes: body.scopes.filter(|s| !s.trim().is_empty()).unwrap_or_else(|| "openid email profile".into()),
        email_domains: domains,
        join_as: body.join_as,
        trust_unverified_email: body.trust_unverified_email,
    };
    let set = call
        .state
        .store
        .admin()
        .set_tenant_sso(t.id, &settings, call.state.secrets.as_ref(), &call.caller.audit())
        .await;
    let set = set.map_err(|e| value_conflict(e, |what| format!("{what} signs in through another tenant")))?;
    Ok(Json(set))
}

#[utoipa::path(delete, path = "/admin/v1/tenants/{tenant}/sso", tag = "admin: sign-in", params(TenantPath),
    responses((status = 204, description = "Removed: its domains sign in as before"),
        OperatorsOnly,
        NoOwnProvider))]
pub(crate) async fn remove(call: TenantCall) -> Result<StatusCode> {
    let t = call.allow(AdminOp::ConfigureSso).await?;
    if !call.state.store.admin().delete_tenant_sso(t.id, &call.caller.audit()).await.map_err(store_error)? {
        return Err(ApiError::not_found(ErrorCode::NotFound, "no such identity provider"));
    }
    Ok(StatusCode::NO_CONTENT)
}
