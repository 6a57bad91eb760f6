//! Provider keys a tenant pools per provider (OpenAI, OpenRouter, Anthropic, ...): added
//! write-only (sealed at rest, never shown again), listed with their live health (ready,
//! cooling down after a rate limit, or dead), removed, and each pool's way of picking a key.

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use serde::Deserialize;

use hermes_core::ErrorCode;
use hermes_core::access::AdminOp;
use hermes_http::ApiError;
use hermes_store::NewCredential;
use hermes_store::admin::Change;
use hermes_wire::List;
use hermes_wire::admin::CredentialAdded;

use crate::admin::errors::{Result, path_id, store_error, store_error_for};
use crate::admin::tenant_call::{Body, TenantCall};
use crate::documented::{ObjectPath, TenantNotFound, TenantPath};

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/credentials", tag = "admin: credentials", params(TenantPath),
    responses((status = 200, description = "Pools by provider: their strategy and keys (never the secrets) with each key's health", body = Object),
        TenantNotFound))]
pub(crate) async fn list(call: TenantCall) -> Result<Json<List<Pool>>> {
    let t = call.allow(AdminOp::ViewCredentials).await?;
    let pools = call.state.store.tenancy().credential_pools(t.id).await.map_err(store_error)?;
    let mut out = Vec::new();
    let mut providers: Vec<&String> = pools.keys().collect();
    providers.sort();
    for provider in providers {
        let (keys, strategy) = &pools[provider];
        let ids: Vec<String> = keys.iter().map(|k| k.id.to_string()).collect();
        // Redis down: the keys are still listed, their health unknown.
        let health = call.state.pools.health(t.id, provider, &ids).await.unwrap_or_default();
        let keys = keys
            .iter()
            .map(|k| PoolKey {
                health: health.iter().find(|h| h.id == k.id.to_string()).cloned(),
                id: k.id,
                label: k.label.clone(),
                priority: k.priority,
                allowed_hosts: k.allowed_hosts.clone(),
                created_at: k.created_at,
            })
            .collect();
        out.push(Pool { provider: provider.clone(), strategy: strategy.clone(), keys });
    }
    Ok(Json(List::of(out)))
}

/// A provider's pool: how it picks a key, and its keys.
#[derive(Debug, serde::Serialize)]
pub(crate) struct Pool {
    provider: String,
    strategy: String,
    keys: Vec<PoolKey>,
}

/// A pooled key (never its secret) and its live state (`null` when unknown).
#[derive(Debug, serde::Serialize)]
pub(crate) struct PoolKey {
    id: hermes_core::CredentialId,
    label: String,
    priority: i32,
    allowed_hosts: Vec<String>,
    created_at: chrono::DateTime<chrono::Utc>,
    health: Option<hermes_cache::KeyHealth>,
}

/// A key to add to the pool of its provider.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewKey {
    /// The pool: `openai`, `openrouter`, `anthropic`, ..., or `custom:<host>`.
    provider: String,
    label: String,
    /// Write-only: sealed at rest, never shown again.
    secret: String,
    /// Lower is used first with `fill_first`.
    #[serde(default)]
    priority: i32,
    /// The hosts it may be sent to (`api.openai.com`, ...): a key never leaves for another.
    allowed_hosts: Vec<String>,
}

#[utoipa::path(post, path = "/admin/v1/tenants/{tenant}/credentials", tag = "admin: credentials", request_body = NewKey,
    params(TenantPath),
    responses((status = 201, description = "Added (its secret is not part of the answer)", body = CredentialAdded),
        (status = 400, description = "No hosts, an empty secret, or no master key to seal it with", body = hermes_wire::ErrorBody),
        (status = 403, description = "The caller's role may not manage credentials", body = hermes_wire::ErrorBody),
        (status = 409, description = "The pool has a key with that label", body = hermes_wire::ErrorBody)))]
pub(crate) async fn add(call: TenantCall, body: Body<NewKey>) -> Result<(StatusCode, Json<CredentialAdded>)> {
    let (t, body) = call.allow_with_body(AdminOp::ManageCredentials, body).await?;
    let bad =
        |param: &'static str, why: &str| ApiError::invalid_request(ErrorCode::InvalidValue, why).with_param(param);
    let secrets =
        call.state.secrets.as_ref().ok_or_else(|| bad("secret", "storing provider keys needs secrets.master_key"))?;
    if body.secret.trim().is_empty() {
        return Err(bad("secret", "the key is empty"));
    }
    let hosts: Vec<String> =
        body.allowed_hosts.iter().map(|h| h.trim().to_ascii_lowercase()).filter(|h| !h.is_empty()).collect();
    let new = NewCredential {
        provider: body.provider.trim().to_owned(),
        label: body.label.trim().to_owned(),
        secret: body.secret.trim().to_owned(),
        priority: body.priority,
        allowed_hosts: hosts,
    };
    let mut tx = call.begin(t.id).await?;
    let added = tx.add_credential(new, secrets).await.map_err(store_error)?;
    let shown = CredentialAdded {
        id: added.id,
        provider: added.provider,
        label: added.label,
        priority: added.priority,
        allowed_hosts: added.allowed_hosts,
        created_at: added.created_at,
    };
    tx.commit(Change::new("credential.added", "credential", added.id).after(&shown)).await.map_err(store_error)?;
    Ok((StatusCode::CREATED, Json(shown)))
}

#[utoipa::path(delete, path = "/admin/v1/tenants/{tenant}/credentials/{id}", tag = "admin: credentials",
    params(TenantPath, ("id" = String, Path, description = "Credential id")),
    responses((status = 204, description = "Removed from its pool"), (status = 404, description = "No such key", body = hermes_wire::ErrorBody)))]
pub(crate) async fn remove(call: TenantCall, Path(ObjectPath { id }): Path<ObjectPath>) -> Result<StatusCode> {
    let t = call.allow(AdminOp::ManageCredentials).await?;
    let id: hermes_core::CredentialId = path_id(&id, ErrorCode::NotFound, "key")?;
    let mut tx = call.begin(t.id).await?;
    let gone = tx.delete_credential(id).await.map_err(|e| store_error_for(e, ErrorCode::NotFound, "key"))?;
    let change = Change::new("credential.removed", "credential", id)
        .before(KeyAudit { provider: &gone.provider, label: &gone.label });
    tx.commit(change).await.map_err(store_error)?;
    Ok(StatusCode::NO_CONTENT)
}

/// How a pool picks a key.
#[derive(Debug, Deserialize, serde::Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Strategy {
    /// `fill_first`, `round_robin`, `random` or `least_used`.
    strategy: String,
}

#[utoipa::path(put, path = "/admin/v1/tenants/{tenant}/credentials/pools/{provider}", tag = "admin: credentials", request_body = Strategy,
    params(TenantPath, ("provider" = String, Path, description = "The pool's provider")),
    responses((status = 204, description = "Set"), (status = 400, description = "No such strategy", body = hermes_wire::ErrorBody)))]
pub(crate) async fn strategy(
    call: TenantCall,
    Path((_, provider)): Path<(String, String)>,
    body: Body<Strategy>,
) -> Result<StatusCode> {
    let (t, body) = call.allow_with_body(AdminOp::ManageCredentials, body).await?;
    let mut tx = call.begin(t.id).await?;
    tx.set_pool_strategy(&provider, &body.strategy).await.map_err(store_error)?;
    let change = Change::new("pool.strategy_set", "pool", &provider).after(&body);
    tx.commit(change).await.map_err(store_error)?;
    Ok(StatusCode::NO_CONTENT)
}

/// What the audit trail records of a removed key.
#[derive(serde::Serialize)]
struct KeyAudit<'a> {
    provider: &'a str,
    label: &'a str,
}
