//! An agent's curated memory, as people see and correct it: the agent's MEMORY, and one end
//! user's USER profile. An edit replaces a document's entries; it is held to the same size
//! caps and the same strict injection scan as the agent's own writes, since it goes into
//! every later prompt.

use axum::Json;
use axum::extract::Query;
use serde::Deserialize;

use hermes_core::ErrorCode;
use hermes_core::access::AdminOp;
use hermes_http::ApiError;
use hermes_store::MemoryTarget;
use hermes_store::admin::Change;
use hermes_wire::admin::{Memory, MemoryWritten};

use crate::admin::errors::{Result, store_error};
use crate::admin::tenant_call::{AgentCall, Body};
use crate::documented::{AgentPath, NoSuchTenantOrAgent, TenantPath};

/// What separates entries in a prompt (as the agent's memory tool counts them).
const ENTRY_DELIMITER_CHARS: usize = 3;

/// Whose profile (the chat user's key, such as `telegram:12345`; empty: none).
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct WhichUser {
    user: Option<String>,
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/agents/{agent}/memory", tag = "admin: agents",
    params(TenantPath, AgentPath, WhichUser),
    responses((status = 200, description = "The agent's MEMORY entries and the user's USER entries, with their caps", body = Memory),
        NoSuchTenantOrAgent))]
pub(crate) async fn view(call: AgentCall, Query(q): Query<WhichUser>) -> Result<Json<Memory>> {
    let (t, found) = call.allow_agent(AdminOp::ViewMemory).await?;
    let id = found.id;
    let user = q.user.unwrap_or_default();
    let snapshot = call.state.store.agents().memory_snapshot(t.id, id, &user).await.map_err(store_error)?;
    Ok(Json(Memory {
        agent_id: id,
        // Only an agent with the memory toolset sees its memory in its prompt.
        enabled: hermes_core::ToolsetName::Memory.enabled_in(&found.toolsets),
        user,
        memory: snapshot.memory,
        user_profile: snapshot.user,
        memory_char_limit: call.state.config.memory.memory_char_limit,
        user_char_limit: call.state.config.memory.user_char_limit,
    }))
}

/// A document's new entries.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Rewrite {
    /// `memory` (the agent's notes) or `user` (one end user's profile).
    target: String,
    /// Whose profile, for `user`.
    #[serde(default)]
    user: String,
    entries: Vec<String>,
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::invalid_request(ErrorCode::InvalidValue, message).with_param("entries")
}

#[utoipa::path(put, path = "/admin/v1/tenants/{tenant}/agents/{agent}/memory", tag = "admin: agents", request_body = Rewrite,
    params(TenantPath, AgentPath),
    responses((status = 200, description = "The entries as they now are; the agent's next turn sees them", body = MemoryWritten),
        (status = 400, description = "Over the cap, or text that reads as a prompt injection", body = hermes_wire::ErrorBody),
        (status = 403, description = "The caller's role may not edit memory", body = hermes_wire::ErrorBody)))]
pub(crate) async fn rewrite(call: AgentCall, body: Body<Rewrite>) -> Result<Json<MemoryWritten>> {
    let (t, body) = call.allow_with_body(AdminOp::EditMemory, body).await?;
    let id = call.state.agent(t.id, &call.agent_ref).await?.id;
    let (target, limit) = match body.target.as_str() {
        "memory" => (MemoryTarget::Memory, call.state.config.memory.memory_char_limit),
        "user" if !body.user.is_empty() => (MemoryTarget::User, call.state.config.memory.user_char_limit),
        "user" => return Err(invalid("a USER profile needs `user`, the chat user's key").with_param("user")),
        _ => return Err(invalid("`target` is `memory` or `user`").with_param("target")),
    };
    let entries: Vec<String> = body.entries.iter().map(|e| e.trim().to_owned()).filter(|e| !e.is_empty()).collect();
    let size: usize = entries.iter().map(|e| e.chars().count()).sum::<usize>()
        + ENTRY_DELIMITER_CHARS * entries.len().saturating_sub(1);
    if size > limit {
        return Err(invalid(format!("{size} characters; this document holds at most {limit}")));
    }
    for entry in &entries {
        if let Some(finding) = hermes_threats::scan_strict(entry).first() {
            return Err(invalid(format!("an entry reads as a prompt injection ({}): {entry:.80}", finding.reason)));
        }
    }
    let mut before = Vec::new();
    let mut tx = call.begin(t.id).await?;
    let written = tx
        .update_memory(id, target, &body.user, |current| {
            before = current.to_vec();
            Ok::<_, std::convert::Infallible>(Some(entries.clone()))
        })
        .await
        .map_err(store_error)?;
    let Ok(now) = written;
    let object = if body.user.is_empty() { format!("{id}/memory") } else { format!("{id}/user/{}", body.user) };
    let change = Change::new("memory.rewritten", "memory", object).before(&before).after(&now);
    tx.commit(change).await.map_err(store_error)?;
    Ok(Json(MemoryWritten { target: body.target, entries: now }))
}
