//! The operators' view of the installation: work waiting and running, replies waiting, late
//! cron jobs, which workers hold turns now, and the sandboxes the workers last reported.

use axum::Json;
use axum::extract::State;

use hermes_core::access::AdminOp;
use hermes_http::ApiError;
use hermes_wire::admin::{Cluster, SeenSandbox};

use crate::admin::caller::Caller;
use crate::admin::errors::store_error;
use crate::admin::state::AdminState;
use crate::documented::OperatorsOnly;

#[utoipa::path(get, path = "/admin/v1/cluster", tag = "admin: tenants",
    responses((status = 200, description = "The backlog (turns queued and running, replies waiting, late cron jobs), the workers holding turns, and the live sandboxes as workers last reported them", body = Cluster),
        OperatorsOnly))]
pub(crate) async fn cluster(State(state): State<AdminState>, caller: Caller) -> Result<Json<Cluster>, ApiError> {
    caller.installation(AdminOp::ViewCluster)?;
    let backlog = state.store.system().backlog().await.map_err(store_error)?;
    let workers = state.store.system().workers_at_work().await.map_err(store_error)?;
    // Several workers may report one shared sandbox (Docker, Kubernetes): each is shown once,
    // as most recently seen. Redis down leaves the rest of the view standing.
    let mut reports = state.census.reports().await.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "cannot read the sandbox reports");
        Vec::new()
    });
    let mut sandboxes: Vec<SeenSandbox> = Vec::new();
    reports.sort_by_key(|r| std::cmp::Reverse(r.at));
    for report in reports {
        for s in report.sandboxes {
            if !sandboxes.iter().any(|seen| seen.name == s.name) {
                sandboxes.push(SeenSandbox {
                    tenant_id: s.tenant_id,
                    agent_id: s.agent_id,
                    backend: s.backend,
                    name: s.name,
                    running_execs: s.running_execs,
                    running_processes: s.running_processes,
                    idle_secs: s.idle_secs,
                    worker: report.worker.clone(),
                    seen_at: report.at,
                });
            }
        }
    }
    Ok(Json(Cluster { backlog, workers, sandboxes }))
}
