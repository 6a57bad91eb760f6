//! An agent's MCP servers (upstream Hermes's `mcp_servers`): listed with every `env` and
//! `headers` value masked, set whole by name (the values sealed), removed. Editing them is
//! editing the agent (`agents.edit`); each change is audited without its secret values.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;

use hermes_core::ErrorCode;
use hermes_core::access::AdminOp;
use hermes_http::ApiError;
use hermes_mcp_config::{McpServerSpec, valid_server_name};
use hermes_store::admin::Change;
use hermes_wire::List;
use hermes_wire::admin::{McpServer, McpServerSet};

use crate::admin::caller::Caller;
use crate::admin::errors::store_error;
use crate::admin::state::AdminState;

type Result<T, E = ApiError> = std::result::Result<T, E>;

fn shown(server: hermes_store::StoredMcpServer) -> McpServer {
    McpServer { name: server.name, enabled: server.enabled, config: server.spec, updated_at: server.updated_at }
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/agents/{agent}/mcp-servers", tag = "admin: agents",
    params(("tenant" = String, Path, description = "Tenant id"), ("agent" = String, Path, description = "Agent id or name")),
    responses((status = 200, description = "The agent's MCP servers, secret values masked", body = List<McpServer>),
        (status = 404, description = "No such agent (or not yours)", body = hermes_wire::ErrorBody)))]
pub(crate) async fn list(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, agent_ref)): Path<(String, String)>,
) -> Result<Json<List<McpServer>>> {
    let t = caller.tenant(&state, &tenant, AdminOp::ViewAgents).await?;
    let agent = state.agent(t.id, &agent_ref).await?;
    let servers = state.store.mcp_servers(t.id, agent.id).await.map_err(store_error)?;
    Ok(Json(List::of(servers.into_iter().map(shown).collect())))
}

#[utoipa::path(put, path = "/admin/v1/tenants/{tenant}/agents/{agent}/mcp-servers/{name}", tag = "admin: agents",
    request_body(content = Object, description = "Upstream's shape: `command`, `args`, `env` (stdio) or `url`, `headers` (HTTP); `timeout`, `connect_timeout`, `enabled`, `tools` {`include`, `exclude`, `resources`, `prompts`}, `sampling` {`enabled` (off by default), `model`, `max_tokens_cap`, `timeout`, `max_rpm`, `allowed_models`, `log_level`}. `${NAME}` in `env` and `headers` values is the team's key named NAME (a credential)"),
    params(("tenant" = String, Path, description = "Tenant id"), ("agent" = String, Path, description = "Agent id or name"),
        ("name" = String, Path, description = "The server's name (letters, digits, `-`, `_`; at most 40)")),
    responses((status = 200, description = "Set; the agent's next turn uses it", body = McpServerSet),
        (status = 400, description = "A configuration that cannot work, or a URL the outbound policy refuses", body = hermes_wire::ErrorBody),
        (status = 403, description = "The caller's role may not edit agents", body = hermes_wire::ErrorBody),
        (status = 404, description = "No such agent", body = hermes_wire::ErrorBody)))]
pub(crate) async fn set(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, agent_ref, name)): Path<(String, String, String)>,
    body: std::result::Result<hermes_http::ApiJson<McpServerSpec>, ApiError>,
) -> Result<Json<McpServerSet>> {
    let t = caller.tenant(&state, &tenant, AdminOp::EditAgents).await?;
    let agent = state.agent(t.id, &agent_ref).await?;
    let hermes_http::ApiJson(spec) = body?;
    let bad = |msg: String| ApiError::invalid_request(ErrorCode::InvalidValue, msg);
    if !valid_server_name(&name) {
        return Err(bad(format!("{name:?} is not a server name: letters, digits, - and _, at most 40")));
    }
    spec.validate().map_err(|e| bad(e.0))?;
    if let Some(url) = spec.url.as_deref().and_then(|u| reqwest::Url::parse(u).ok())
        && let Some(why) = state.mcp_policy().refuse(&url)
    {
        return Err(bad(format!("the server's url is refused: {why}")).with_param("url"));
    }
    // `${NAME}` must name one of the team's keys now (the turn fills it in when it connects),
    // and in a stdio server's env a key readable by the agent's code.
    let refs = spec.secret_refs().map_err(|e| bad(e.0))?;
    let in_sandbox = spec.env_only().secret_refs().map_err(|e| bad(e.0))?;
    state.store.check_secret_refs(t.id, &refs, &in_sandbox).await.map_err(store_error)?;
    let masked = serde_json::to_value(spec.masked()).map_err(|e| bad(e.to_string()))?;
    let secrets =
        serde_json::to_value(Secrets { env: &spec.env, headers: &spec.headers }).map_err(ApiError::internal)?;
    let mut tx = caller.begin(&state, t.id).await?;
    let replaced = tx
        .set_mcp_server(agent.id, &name, (&masked, spec.enabled), &secrets, state.secrets.as_ref())
        .await
        .map_err(store_error)?;
    let action = if replaced { "mcp_server.updated" } else { "mcp_server.added" };
    let change = Change::new(action, "mcp_server", format!("{}/{name}", agent.id)).after(&masked);
    tx.commit(change).await.map_err(store_error)?;
    Ok(Json(McpServerSet { name, enabled: spec.enabled, config: masked }))
}

/// What of a server's configuration is sealed at rest.
#[derive(serde::Serialize)]
struct Secrets<'a> {
    env: &'a std::collections::BTreeMap<String, String>,
    headers: &'a std::collections::BTreeMap<String, String>,
}

#[utoipa::path(delete, path = "/admin/v1/tenants/{tenant}/agents/{agent}/mcp-servers/{name}", tag = "admin: agents",
    params(("tenant" = String, Path, description = "Tenant id"), ("agent" = String, Path, description = "Agent id or name"),
        ("name" = String, Path, description = "The server's name")),
    responses((status = 204, description = "Removed; the agent's next turn no longer has its tools"),
        (status = 403, description = "The caller's role may not edit agents", body = hermes_wire::ErrorBody),
        (status = 404, description = "No such agent or server", body = hermes_wire::ErrorBody)))]
pub(crate) async fn remove(
    State(state): State<AdminState>,
    caller: Caller,
    Path((tenant, agent_ref, name)): Path<(String, String, String)>,
) -> Result<StatusCode> {
    let t = caller.tenant(&state, &tenant, AdminOp::EditAgents).await?;
    let agent = state.agent(t.id, &agent_ref).await?;
    let mut tx = caller.begin(&state, t.id).await?;
    let gone = tx.delete_mcp_server(agent.id, &name).await.map_err(store_error)?;
    let change = Change::new("mcp_server.removed", "mcp_server", format!("{}/{name}", agent.id)).before(&gone.spec);
    tx.commit(change).await.map_err(store_error)?;
    Ok(StatusCode::NO_CONTENT)
}
