//! The operators' view of the installation: work waiting and running, replies waiting, late
//! cron jobs, and which workers hold turns now.

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use hermes_core::access::AdminOp;
use hermes_http::ApiError;

use crate::caller::Caller;
use crate::errors::store_error;
use crate::state::AdminState;

#[utoipa::path(get, path = "/admin/v1/cluster", tag = "admin: tenants",
    responses((status = 200, description = "The backlog (turns queued and running, replies waiting, late cron jobs) and the workers holding turns", body = Object),
        (status = 403, description = "Operators only", body = crate::schemas::ErrorBody)))]
pub(crate) async fn cluster(State(state): State<AdminState>, caller: Caller) -> Result<Json<Value>, ApiError> {
    caller.installation(AdminOp::ViewCluster)?;
    let backlog = state.store.backlog().await.map_err(store_error)?;
    let workers = state.store.workers_at_work().await.map_err(store_error)?;
    Ok(Json(json!({
        "turns_queued": backlog.turns_queued,
        "oldest_queued_seconds": backlog.oldest_queued_seconds,
        "turns_running": backlog.turns_running,
        "outbox_waiting": backlog.outbox_waiting,
        "oldest_outbox_seconds": backlog.oldest_outbox_seconds,
        "cron_jobs_late": backlog.cron_jobs_late,
        "workers": workers,
    })))
}
