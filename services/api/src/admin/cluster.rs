//! The operators' view of the installation: work waiting and running, replies waiting, late
//! cron jobs, which workers hold turns now, and the sandboxes the workers last reported.

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use hermes_core::access::AdminOp;
use hermes_http::ApiError;

use crate::admin::caller::Caller;
use crate::admin::errors::store_error;
use crate::admin::state::AdminState;

#[utoipa::path(get, path = "/admin/v1/cluster", tag = "admin: tenants",
    responses((status = 200, description = "The backlog (turns queued and running, replies waiting, late cron jobs), the workers holding turns, and the live sandboxes as workers last reported them", body = Object),
        (status = 403, description = "Operators only", body = hermes_wire::ErrorBody)))]
pub(crate) async fn cluster(State(state): State<AdminState>, caller: Caller) -> Result<Json<Value>, ApiError> {
    caller.installation(AdminOp::ViewCluster)?;
    let backlog = state.store.backlog().await.map_err(store_error)?;
    let workers = state.store.workers_at_work().await.map_err(store_error)?;
    // Several workers may report one shared sandbox (Docker, Kubernetes): each is shown once,
    // as most recently seen. Redis down leaves the rest of the view standing.
    let mut reports = state.census.reports().await.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "cannot read the sandbox reports");
        Vec::new()
    });
    let mut sandboxes: Vec<Value> = Vec::new();
    reports.sort_by_key(|r| std::cmp::Reverse(r.at));
    for report in &reports {
        for sandbox in &report.sandboxes {
            if !sandboxes.iter().any(|s| s["name"] == sandbox.name.as_str()) {
                let mut shown = json!(sandbox);
                shown["worker"] = json!(report.worker);
                shown["seen_at"] = json!(report.at);
                sandboxes.push(shown);
            }
        }
    }
    Ok(Json(json!({
        "turns_queued": backlog.turns_queued,
        "oldest_queued_seconds": backlog.oldest_queued_seconds,
        "turns_running": backlog.turns_running,
        "outbox_waiting": backlog.outbox_waiting,
        "oldest_outbox_seconds": backlog.oldest_outbox_seconds,
        "cron_jobs_late": backlog.cron_jobs_late,
        "workers": workers,
        "sandboxes": sandboxes,
    })))
}
