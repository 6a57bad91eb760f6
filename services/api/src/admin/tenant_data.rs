//! A tenant's whole data from the admin API: its export as one archive (its owners and the
//! operators) and its deletion (operators). `hermes_ops::tenant_data` says what each holds
//! and does; `hermesctl tenant export|delete` runs the same.

use axum::Json;
use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use hermes_core::ErrorCode;
use hermes_core::access::AdminOp;
use hermes_http::ApiError;
use hermes_store::admin::Change;
use hermes_wire::ErrorBody;
use hermes_wire::admin::TenantDeletion;

use crate::admin::errors::{Result, ops_error, store_error};
use crate::admin::tenant_call::TenantCall;
use crate::documented::{NoSuchTenant, OperatorsOnly, TenantNotFound, TenantPath};

/// Bytes of the archive in flight between the export and the response.
const PIPE_BYTES: usize = 256 * 1024;
/// Exports one API pod writes at once.
pub(crate) const EXPORTS_AT_ONCE: usize = 2;

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/export", tag = "admin: tenants", params(TenantPath),
    responses((status = 200, description = "Everything the tenant owns as one `.tar.gz`: `rows/<table>/<nnnn>.jsonl` (every table's rows, sealed secrets and credential hashes withheld), `skills/`, `memory/` and `manifest.json`. Recorded as `tenant.exported`.",
            content_type = "application/gzip"),
        TenantNotFound,
        (status = 429, description = "Two exports are being written on this server already", body = ErrorBody)))]
pub(crate) async fn export(call: TenantCall) -> Result<Response> {
    let t = call.allow(AdminOp::ExportTenant).await?;
    let (tenant, _, _) = call.state.store.tenancy().tenant(t.id).await.map_err(store_error)?;
    let permit = call.state.exports.clone().try_acquire_owned().map_err(|_| {
        ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_error",
            Some(ErrorCode::RateLimitExceeded),
            format!("{EXPORTS_AT_ONCE} exports are being written on this server; try again when one ends"),
        )
    })?;
    // A schema the export cannot walk is refused before any byte is sent.
    call.state.store.tenancy().export_tables(t.id).await.map_err(store_error)?;
    let tx = call.begin(t.id).await?;
    tx.commit(Change::new("tenant.exported", "tenant", t.id)).await.map_err(store_error)?;
    let (mut writer, reader) = tokio::io::duplex(PIPE_BYTES);
    let store = call.state.store.clone();
    let filename = format!("attachment; filename=\"tenant-{}.tar.gz\"", tenant.id);
    hermes_telemetry::tasks::spawn("tenant_export", async move {
        // A failure cuts the archive short: the client sees a truncated gzip stream, and
        // an archive without `manifest.json` (its last entry) is incomplete.
        if let Err(e) = hermes_ops::tenant_data::export(&store, &tenant, &mut writer).await {
            tracing::warn!(tenant = %tenant.id, error = %e, "tenant export failed part way");
        }
        drop(permit);
    });
    let body = Body::from_stream(tokio_util::io::ReaderStream::new(reader));
    Ok(([(header::CONTENT_TYPE, "application/gzip".to_owned()), (header::CONTENT_DISPOSITION, filename)], body)
        .into_response())
}

#[utoipa::path(delete, path = "/admin/v1/tenants/{tenant}", tag = "admin: tenants", params(TenantPath),
    responses((status = 202, description = "Every way into the tenant is gone; its rows are being deleted", body = TenantDeletion),
        OperatorsOnly,
        NoSuchTenant))]
pub(crate) async fn delete(call: TenantCall) -> Result<(StatusCode, Json<TenantDeletion>)> {
    let t = call.allow(AdminOp::DeleteTenant).await?;
    let by = call.caller.audit();
    let store = call.state.store.clone();
    let (name, _) = hermes_ops::tenant_data::begin_delete(&store, &by, t.id).await.map_err(ops_error)?;
    let cache = call.state.cache.clone();
    let id = t.id;
    hermes_telemetry::tasks::spawn("tenant_deletion", async move {
        // A pod that stops here leaves the mark; the scheduler finishes the deletion.
        match hermes_ops::tenant_data::delete(&store, &by, id).await {
            Ok(done) => {
                let keys = cache.forget_tenant(id).await;
                tracing::info!(tenant = %id, rows = done.removed.values().sum::<u64>(), ?keys, "tenant deleted");
            }
            Err(e) => tracing::warn!(tenant = %id, error = %e, "tenant deletion stopped; the scheduler resumes it"),
        }
    });
    Ok((StatusCode::ACCEPTED, Json(TenantDeletion { id, name, status: "deleting".into() })))
}
