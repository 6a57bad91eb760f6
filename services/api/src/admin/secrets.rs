//! An agent's secret bindings (issue 39): which of the team's credentials its sandboxes may use
//! under which variable name, as placeholders only (the egress proxy adds the real value for
//! the credential's hosts). Shown without values; changing them is editing the agent.

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;

use hermes_core::access::AdminOp;
use hermes_wire::List;
use hermes_wire::admin::{SecretBind, SecretBinding};

use crate::admin::errors::{Result, ops_error};
use crate::admin::tenant_call::{AgentCall, Body};
use crate::documented::{AgentPath, MayNotEditAgents, NoSuchAgent, TenantPath};

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/agents/{agent}/secrets", tag = "admin: agents",
    params(TenantPath, AgentPath),
    responses((status = 200, description = "The agent's bindings: variable, credential, hosts; never a value", body = List<SecretBinding>),
        NoSuchAgent))]
pub(crate) async fn list(call: AgentCall) -> Result<Json<List<SecretBinding>>> {
    let (t, agent) = call.allow_agent(AdminOp::ViewAgents).await?;
    let bindings = hermes_ops::secrets::list(&call.state.store, t.id, &agent).await.map_err(ops_error)?;
    Ok(Json(List::of(bindings)))
}

#[utoipa::path(put, path = "/admin/v1/tenants/{tenant}/agents/{agent}/secrets/{name}", tag = "admin: agents",
    request_body = SecretBind,
    params(TenantPath, AgentPath,
        ("name" = String, Path, description = "The variable's name in the agent's sandboxes (`GITHUB_TOKEN`)")),
    responses((status = 200, description = "Bound; the agent's next sandbox command sees the placeholder", body = SecretBinding),
        (status = 400, description = "A name the sandbox keeps for itself, a credential the team lacks, or a bad placement", body = hermes_wire::ErrorBody),
        MayNotEditAgents,
        NoSuchAgent))]
pub(crate) async fn bind(
    call: AgentCall,
    Path((_, _, name)): Path<(String, String, String)>,
    body: Body<SecretBind>,
) -> Result<Json<SecretBinding>> {
    let (t, agent) = call.allow_agent(AdminOp::EditAgents).await?;
    let hermes_http::ApiJson(bind) = body?;
    let bound = hermes_ops::secrets::bind(&call.state.store, call.caller.audit(), (t.id, &agent), &name, &bind).await;
    Ok(Json(bound.map_err(ops_error)?))
}

#[utoipa::path(delete, path = "/admin/v1/tenants/{tenant}/agents/{agent}/secrets/{name}", tag = "admin: agents",
    params(TenantPath, AgentPath,
        ("name" = String, Path, description = "The variable's name")),
    responses((status = 204, description = "Unbound; the agent's sandboxes no longer get the variable"),
        MayNotEditAgents,
        (status = 404, description = "No such agent or binding", body = hermes_wire::ErrorBody)))]
pub(crate) async fn unbind(call: AgentCall, Path((_, _, name)): Path<(String, String, String)>) -> Result<StatusCode> {
    let (t, agent) = call.allow_agent(AdminOp::EditAgents).await?;
    let gone = hermes_ops::secrets::unbind(&call.state.store, call.caller.audit(), (t.id, &agent), &name).await;
    gone.map_err(ops_error)?;
    Ok(StatusCode::NO_CONTENT)
}
