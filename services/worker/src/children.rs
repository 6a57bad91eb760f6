//! Delegated children, in the foreground (inside the parent's `delegate_task` call) and in the
//! background (a queued turn of their own child session, see `hermes_store::delegations`):
//! the prompt both get, and how a background child's turn is planned and reported.
//!
//! A child gets the default identity and the workspace's context files (not the agent's soul,
//! memory or skills), no tool the parent's turn lacked, and none of upstream's blocked ones:
//! nobody to ask, no shared memory, no scripts over tools, no messages elsewhere, no
//! scheduling. Only an orchestrator may delegate again, where `worker.delegation_max_depth`
//! allows; a leaf (the default) never does.

use std::sync::Arc;

use hermes_agent::prompt::{PromptInputs, render_stable_prompt};
use hermes_core::{ChildRole, SessionSource, TenantId, ToolsetName};
use hermes_sandbox::{SandboxKey, Sandboxes};
use hermes_store::{Agent, ClaimedTurn, StoreError};
use hermes_tools::ToolRegistry;

use crate::Runtime;
use crate::models::{Models, TurnModel};

/// What a child is told it is doing.
pub(crate) const CHILD_SYSTEM: &str = "You are working on one task delegated by another agent. Do it, then reply with \
a summary: what you did, what you found, the files you changed and any problems. That summary is all the other agent \
will see.";

/// Tools a child never gets, by name (upstream's list).
pub(crate) const CHILD_EXCLUDED: [&str; 5] = ["delegate_task", "clarify", "memory", "execute_code", "send_message"];

/// The toolsets of those tools, and scheduling: a background child's turn is planned from the
/// agent's toolsets, narrowed by these.
const CHILD_EXCLUDED_TOOLSETS: [ToolsetName; 6] = [
    ToolsetName::Delegation,
    ToolsetName::Clarify,
    ToolsetName::Memory,
    ToolsetName::CodeExecution,
    ToolsetName::Messaging,
    ToolsetName::Cronjob,
];

/// Whether a child with `role` at `depth` (the main agent's children are at 1) may delegate.
pub(crate) fn may_delegate(role: ChildRole, depth: u32, max_depth: u32) -> bool {
    role == ChildRole::Orchestrator && depth < max_depth
}

/// A child's system prompt: the default identity, its tools, and the workspace's context
/// files when it can read the workspace.
pub(crate) async fn prompt(
    sandboxes: Arc<dyn Sandboxes>,
    key: SandboxKey,
    toolsets: &[String],
    model: &str,
    tool_names: &[&str],
) -> String {
    let context_file = crate::turn::setup::context_file(sandboxes, key, toolsets, "").await;
    render_stable_prompt(&PromptInputs {
        soul: None,
        model,
        tool_names,
        custom_system: Some(CHILD_SYSTEM),
        memory: None,
        user_profile: None,
        skills: &[],
        context_file: context_file.as_ref(),
        today: chrono::Utc::now().date_naive(),
        source: Some(SessionSource::Subagent),
    })
}

/// How a background child's turn runs: its role, step budget and the tools its parent handed
/// on. A turn of a sub-agent session with no task (none is queued that way) runs as a leaf
/// with no tools.
pub(crate) struct ChildRun {
    pub role: ChildRole,
    pub max_iterations: u32,
    pub tools: Vec<String>,
    pub toolsets: Vec<String>,
    /// When the parent delegated: the time limit runs from here.
    pub started_at: chrono::DateTime<chrono::Utc>,
}

impl ChildRun {
    pub async fn of(rt: &Runtime, tenant: TenantId, turn: &ClaimedTurn) -> Result<Self, StoreError> {
        let task = rt.ctx.store.turns().child_task(tenant, turn.turn_id).await?;
        Ok(match task {
            Some(task) => Self {
                role: task.role,
                max_iterations: u32::try_from(task.max_iterations).unwrap_or(1).max(1),
                tools: task.tools,
                toolsets: task.toolsets,
                started_at: task.started_at,
            },
            None => Self {
                role: ChildRole::Leaf,
                max_iterations: 1,
                tools: Vec::new(),
                toolsets: Vec::new(),
                started_at: chrono::Utc::now(),
            },
        })
    }

    /// The toolsets of the child's turn: those of the agent its parent's turn had (a chat's
    /// narrower set stays narrow), without the excluded ones; delegation only for an
    /// orchestrator that may go deeper.
    pub fn restrict(&self, toolsets: &mut Vec<String>, max_depth: u32) {
        toolsets.retain(|t| self.toolsets.contains(t));
        let delegates = may_delegate(self.role, 1, max_depth) && ToolsetName::Delegation.enabled_in(toolsets);
        toolsets.retain(|t| !t.parse().is_ok_and(|t| CHILD_EXCLUDED_TOOLSETS.contains(&t)));
        if delegates {
            toolsets.push(ToolsetName::Delegation.as_str().to_owned());
        }
    }

    /// How long the child may still work, of `limit` from its delegation (a child resumed
    /// on another worker does not start its time again).
    pub fn time_left(&self, limit: std::time::Duration) -> std::time::Duration {
        let spent = (chrono::Utc::now() - self.started_at).to_std().unwrap_or_default();
        limit.saturating_sub(spent).max(std::time::Duration::from_secs(1))
    }

    /// The child's tools: none its parent's turn lacked (`delegate_task` aside, which
    /// [`Self::restrict`] kept only where it may).
    pub fn narrow(&self, tools: ToolRegistry) -> ToolRegistry {
        let names = tools.names();
        let dropped: Vec<&str> =
            names.into_iter().filter(|n| *n != "delegate_task" && !self.tools.iter().any(|t| t == n)).collect();
        tools.without(&dropped)
    }
}

/// The turn's model: a background child may run on the `delegation` task's cheaper one (whose
/// name `agent` then carries).
pub(crate) fn turn_model(models: &Models, child: bool, agent: &mut Agent) -> TurnModel {
    if !child {
        return models.main();
    }
    let (model, name) = models.child();
    agent.model = name;
    model
}

/// After a background child's turn ended: when it was the last of its batch, its report was
/// queued with its end on the parent's conversation `report`, whose workers are signalled.
pub(crate) async fn reported(rt: &Runtime, tenant: TenantId, report: Option<hermes_core::SessionId>) {
    let Some(parent) = report else { return };
    metrics::counter!("hermes_delegation_reports_total").increment(1);
    let work = hermes_queue::SessionWork { tenant_id: tenant, session_id: parent };
    if let Err(e) = rt.ctx.broker.publish_work(&work).await {
        tracing::warn!(error = %e, "cannot signal the delegation's report; the reaper will");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_keeps_none_of_the_blocked_toolsets_and_only_an_orchestrator_may_delegate() {
        let agent = || ["terminal", "delegation", "memory", "clarify", "web", "cronjob"].map(String::from).to_vec();
        let leaf = ChildRun {
            role: ChildRole::Leaf,
            max_iterations: 50,
            tools: vec![],
            toolsets: agent(),
            started_at: chrono::Utc::now(),
        };
        let mut toolsets = agent();
        leaf.restrict(&mut toolsets, 3);
        assert_eq!(toolsets, ["terminal", "web"]);
        let orchestrator = ChildRun { role: ChildRole::Orchestrator, ..leaf };
        let mut toolsets = agent();
        orchestrator.restrict(&mut toolsets, 2);
        assert_eq!(toolsets, ["terminal", "web", "delegation"]);
        let mut toolsets = agent();
        orchestrator.restrict(&mut toolsets, 1);
        assert_eq!(toolsets, ["terminal", "web"], "depth 1: children never delegate");
        // A parent in a chat kept to the web: its child gets no terminal, whatever the agent has.
        let narrowed = ChildRun { toolsets: vec!["web".into(), "delegation".into()], ..orchestrator };
        let mut toolsets = agent();
        narrowed.restrict(&mut toolsets, 2);
        assert_eq!(toolsets, ["web", "delegation"]);
    }
}
