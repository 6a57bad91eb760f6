//! Tenants: the operators' list, creating one (with an invitation for its first owner), its
//! quotas; and for anyone with standing in it, the tenant itself.

use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use serde::Deserialize;

use hermes_core::ErrorCode;
use hermes_core::access::{AdminOp, Standing};
use hermes_http::{ApiError, ApiJson};
use hermes_store::admin::Change;
use hermes_wire::admin::{NewOperatorToken, NewTenant, Quotas, QuotasView, Tenant, TenantMade, TenantView, TokenMade};
use hermes_wire::{ErrorBody, Page};

use crate::admin::caller::Caller;
use crate::admin::errors::{Result, store_error, value_conflict};
use crate::admin::state::AdminState;
use crate::admin::tenant_call::{Body, TenantCall};
use crate::documented::{NoSuchTenant, OperatorsOnly, TenantNotFound, TenantPath};

/// Paging through tenants by name.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct TenantPage {
    /// Only the tenant of this name (`hermesctl --url` finds tenants by name).
    name: Option<String>,
    /// The last name of the previous page.
    after: Option<String>,
    /// 1 to 500; default 100.
    limit: Option<u32>,
}

#[utoipa::path(get, path = "/admin/v1/tenants", tag = "admin: tenants", params(TenantPage),
    responses((status = 200, description = "Tenants by name (operators); anyone else gets their own memberships from /admin/v1/me", body = Page<Tenant>),
        OperatorsOnly))]
pub(crate) async fn list(
    State(state): State<AdminState>,
    caller: Caller,
    Query(page): Query<TenantPage>,
) -> Result<Json<Page<Tenant>>> {
    caller.installation(AdminOp::ListTenants)?;
    if let Some(name) = page.name.as_deref() {
        let found = match state.store.tenancy().tenant_by_name(name).await {
            Ok(t) => vec![t],
            Err(hermes_store::StoreError::NotFound) => vec![],
            Err(e) => return Err(store_error(e)),
        };
        return Ok(Json(Page::of(found, None)));
    }
    let limit = page.limit.unwrap_or(100).clamp(1, 500);
    let tenants = state.store.admin().tenants_page(page.after.as_deref(), limit).await.map_err(store_error)?;
    let next = (tenants.len() == limit as usize).then(|| tenants.last().map(|t| t.name.clone())).flatten();
    Ok(Json(Page::of(tenants, next)))
}

#[utoipa::path(post, path = "/admin/v1/tenants", tag = "admin: tenants", request_body = NewTenant,
    responses((status = 201, description = "The tenant, and the owner's invitation link when asked", body = TenantMade),
        (status = 400, description = "A bad name or email", body = ErrorBody),
        OperatorsOnly,
        (status = 409, description = "The name is taken", body = ErrorBody)))]
pub(crate) async fn create(
    State(state): State<AdminState>,
    caller: Caller,
    ApiJson(body): ApiJson<NewTenant>,
) -> Result<(StatusCode, Json<TenantMade>)> {
    caller.installation(AdminOp::CreateTenant)?;
    let valid_for = std::time::Duration::from_secs(state.config.admin.invitation_days.max(1) * 86_400);
    let made = hermes_ops::tenants::create(&state.store, caller.audit(), &body, valid_for).await;
    let made = made.map_err(|e| {
        crate::errors::refusal(e).unwrap_or_else(|e| value_conflict(e, |what| format!("{what} already exists")))
    })?;
    let (tenant, link) = (made.tenant, made.owner_invitation.map(|token| state.config.console_link("invite", &token)));
    Ok((StatusCode::CREATED, Json(TenantMade { tenant, owner_invitation_link: link })))
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}", tag = "admin: tenants", params(TenantPath),
    responses((status = 200, description = "The tenant, its quotas and where the caller stands", body = TenantView),
        TenantNotFound))]
pub(crate) async fn get(call: TenantCall) -> Result<Json<TenantView>> {
    let t = call.allow(AdminOp::ViewTenant).await?;
    let (tenant, rpm, turns) = call.state.store.tenancy().tenant(t.id).await.map_err(store_error)?;
    let web = call.state.store.tenancy().web_quotas(t.id).await.map_err(store_error)?;
    let files = call.state.store.tenancy().file_storage(t.id).await.map_err(store_error)?;
    let role = match t.standing {
        Standing::Operator => "operator".to_owned(),
        Standing::Member(role) => role.to_string(),
    };
    let may: Vec<String> = AdminOp::ALL
        .iter()
        // Of the installation's operations, the quotas and single sign-on are about this tenant.
        .filter(|op| {
            let about_it = !op.is_installation() || matches!(op, AdminOp::SetQuotas | AdminOp::ConfigureSso);
            about_it && hermes_core::access::allows(t.standing, **op)
        })
        .map(|op| op.as_str().to_owned())
        .collect();
    let quotas = QuotasView {
        requests_per_minute: rpm.map(i64::from),
        concurrent_turns: turns.map(i64::from),
        web_searches_per_day: web.searches_per_day.map(i64::from),
        web_extracts_per_day: web.extracts_per_day.map(i64::from),
        file_storage_mb: files.quota_mb.map(i64::from),
        file_storage_used_bytes: files.used_bytes,
    };
    Ok(Json(TenantView { tenant, quotas, standing: role, may }))
}

#[utoipa::path(put, path = "/admin/v1/tenants/{tenant}/quotas", tag = "admin: tenants", request_body = Quotas,
    params(TenantPath),
    responses((status = 204, description = "Set; they apply to the next request"),
        OperatorsOnly,
        NoSuchTenant))]
pub(crate) async fn set_quotas(call: TenantCall, body: Body<Quotas>) -> Result<StatusCode> {
    let (t, body) = call.allow_with_body(AdminOp::SetQuotas, body).await?;
    let (_, rpm, turns) = call.state.store.tenancy().tenant(t.id).await.map_err(store_error)?;
    let web = call.state.store.tenancy().web_quotas(t.id).await.map_err(store_error)?;
    let mut tx = call.begin(t.id).await?;
    tx.set_tenant_limits(body.requests_per_minute, body.concurrent_turns).await.map_err(store_error)?;
    let new_web = hermes_store::WebQuotas {
        searches_per_day: body.web_searches_per_day.unwrap_or(web.searches_per_day),
        extracts_per_day: body.web_extracts_per_day.unwrap_or(web.extracts_per_day),
    };
    tx.set_web_quotas(new_web).await.map_err(store_error)?;
    let files = call.state.store.tenancy().file_storage(t.id).await.map_err(store_error)?;
    let new_files = body.file_storage_mb.unwrap_or(files.quota_mb.and_then(|q| u32::try_from(q).ok()));
    tx.set_file_storage_quota(new_files).await.map_err(store_error)?;
    let change = Change::new("tenant.quotas_set", "tenant", t.id)
        .before(QuotaAudit {
            requests_per_minute: rpm.map(i64::from),
            concurrent_turns: turns.map(i64::from),
            web_searches_per_day: web.searches_per_day,
            web_extracts_per_day: web.extracts_per_day,
            file_storage_mb: files.quota_mb.and_then(|q| u32::try_from(q).ok()),
        })
        .after(QuotaAudit {
            requests_per_minute: body.requests_per_minute.map(i64::from),
            concurrent_turns: body.concurrent_turns.map(i64::from),
            web_searches_per_day: new_web.searches_per_day,
            web_extracts_per_day: new_web.extracts_per_day,
            file_storage_mb: new_files,
        });
    tx.commit(change).await.map_err(store_error)?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/admin/v1/tokens", tag = "admin: tenants", request_body = NewOperatorToken,
    responses((status = 201, description = "A token acting as the calling operator on every tenant, shown this once", body = TokenMade),
        (status = 403, description = "Operators only, signed in (a token does not make tokens)", body = ErrorBody)))]
pub(crate) async fn create_operator_token(
    State(state): State<AdminState>,
    caller: Caller,
    ApiJson(body): ApiJson<NewOperatorToken>,
) -> Result<(StatusCode, Json<TokenMade>)> {
    caller.installation(AdminOp::ViewCluster)?;
    let (crate::admin::caller::Credential::Session { .. }, Some(person)) = (&caller.credential, &caller.person) else {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "permission_error",
            Some(ErrorCode::PermissionDenied),
            "operator tokens are made in a signed-in session (or with hermesctl operator token)",
        ));
    };
    let days = body.expires_in_days.unwrap_or(30).clamp(1, 366);
    let lifetime = std::time::Duration::from_secs(u64::from(days) * 86_400);
    let made = state.store.admin().create_operator_token(person.id, body.name.trim(), lifetime, &caller.audit()).await;
    let (token, secret) = made.map_err(store_error)?;
    Ok((StatusCode::CREATED, Json(TokenMade { token, secret })))
}

/// What the audit trail records of a tenant's quotas.
#[derive(serde::Serialize)]
struct QuotaAudit {
    requests_per_minute: Option<i64>,
    concurrent_turns: Option<i64>,
    web_searches_per_day: Option<u32>,
    web_extracts_per_day: Option<u32>,
    file_storage_mb: Option<u32>,
}
