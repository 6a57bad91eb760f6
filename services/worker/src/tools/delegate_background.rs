//! `delegate_task(background=true)`: the children are queued as turns of their own (see
//! `hermes_store::delegations`) and the call returns a handle at once. Any worker runs them; a
//! worker that dies mid-child leaves the turn to be resumed like any other. When the last one
//! ends, one turn with every summary is queued on the parent's conversation, and the agent's
//! answer to it goes to the chat the call came from. `/agents` lists them, `/stop` cancels them.
//!
//! Only a turn a person attends and that can answer later goes to the background: a chat's.
//! An API request's turn ends with its response, so there its children run in the
//! foreground, as upstream's request/response endpoints do; so do a cron run's and a
//! webhook's (their limits would not reach the report), and a report's own (no chains).

use std::sync::Arc;

use serde_json::json;

use hermes_cache::Slots;
use hermes_store::Store;
use hermes_store::delegations::{NewChild, NewDelegation, Started};
use hermes_tools::{ToolCtx, ToolError};

/// What running children takes besides their models: where their sessions are stored, the
/// per-tenant slots (`cap` at once) and how deep delegation may go.
#[derive(Clone)]
pub(crate) struct Children {
    pub store: Store,
    pub slots: Slots,
    pub cap: u32,
    pub max_depth: u32,
    /// Where background children's sessions are signalled.
    pub broker: hermes_queue::Broker,
    /// Where children read the workspace's context files.
    pub sandboxes: Arc<dyn hermes_sandbox::Sandboxes>,
}

/// Queues `children` (with the parent turn's tools and toolsets) as background children and
/// returns the handle the model reads, or `None` when this turn cannot take a later answer or
/// is itself a report (its children run in the foreground).
pub(crate) async fn start(
    config: &Children,
    ctx: &ToolCtx,
    children: Vec<NewChild>,
    (tools, toolsets): (Vec<String>, Vec<String>),
    max_iterations: u32,
) -> Result<Option<String>, ToolError> {
    // Only a turn someone attends: a cron run's or a webhook's would hand its children, and
    // their report, past the limits its job or hook set.
    if !ctx.interaction.enabled {
        return Ok(None);
    }
    let store = &config.store;
    let unavailable = |e: hermes_store::StoreError| {
        tracing::warn!(error = %e, "cannot start background children");
        ToolError::RespondToModel("the background tasks could not be started; try again, or run them now".into())
    };
    let Some(reply_to) = store.automation().turn_reply_to(ctx.tenant_id, ctx.turn_id).await.map_err(unavailable)?
    else {
        return Ok(None);
    };
    let new = NewDelegation {
        agent: ctx.agent_id,
        parent_session: ctx.session_id,
        parent_turn: ctx.turn_id,
        call_id: &ctx.call_id,
        reply_to: Some(&reply_to),
        max_iterations: i32::try_from(max_iterations).unwrap_or(50),
        tools,
        toolsets,
        children,
        cap: i64::from(config.cap),
    };
    let count = new.children.len();
    match store.turns().start_delegation(ctx.tenant_id, &new).await.map_err(unavailable)? {
        Started::Queued { id, sessions } => {
            for session in sessions {
                let work = hermes_queue::SessionWork { tenant_id: ctx.tenant_id, session_id: session };
                if let Err(e) = config.broker.publish_work(&work).await {
                    tracing::warn!(error = %e, "cannot signal a background child; the reaper will");
                }
            }
            metrics::counter!("hermes_delegations_started_total").increment(1);
            let handle = json!({
                "status": "started",
                "delegation_id": id.to_string(),
                "tasks": count,
                "note": "The tasks run in the background. Their results come back to you as a new message when \
                         the last one ends; answer the user then. Tell them now that the work is under way \
                         (/agents lists it, /stop cancels it)."
            });
            Ok(Some(handle.to_string()))
        }
        Started::FromReport => Ok(None),
        Started::OverCap { running } => Err(ToolError::RespondToModel(format!(
            "{running} background tasks are already running for this team (at most {} at once). Wait for them, \
             or run these now without background.",
            config.cap
        ))),
    }
}
