//! A turn's tool registry, assembled in one place and in a fixed order: the tools
//! delegation and execute_code hand on to children and scripts come first, then those bound
//! to the turn's own state, then the late ones (MCP, messaging, scheduling) nobody inherits.

use std::sync::{Arc, Mutex};

use hermes_core::{TenantId, ToolsetName, TurnId, Usage};
use hermes_sandbox::SandboxKey;
use hermes_store::{Agent, StoreError, StoredMcpServer};
use hermes_tools::ToolRegistry;

use super::Toolkit;
use super::skill_manage::SkillManageTool;
use super::skills::{SkillViewTool, SkillsContext, SkillsListTool};
use crate::models::Models;
use crate::tools::delegate::DelegateTool;
use crate::tools::image::FileLinks;

/// What a turn's tools are bound to.
pub(crate) struct TurnTools<'a> {
    pub tenant: TenantId,
    /// The agent as this turn runs it (its toolsets narrowed for the turn).
    pub agent: &'a Agent,
    pub models: &'a Models,
    /// The session's user, whose memory and past sessions the tools read.
    pub user_key: &'a str,
    /// An API turn's links, where the files tools make are handed over (a chat gets them sent).
    pub links: Option<FileLinks>,
    pub turn: TurnId,
    /// Delegated children's usage, counted toward this turn.
    pub child_usage: Arc<Mutex<Usage>>,
    /// How deep this turn's agent is: 0 for the main agent, 1 for a background child.
    pub delegation_depth: u32,
    /// The agent's configured MCP servers.
    pub mcp_servers: &'a [StoredMcpServer],
    /// The turn's events, where its delegated children tell their progress.
    pub events: crate::events::EventRelay,
}

/// The tools of this turn: the built-ins the agent's toolsets enable, those bound to the turn
/// (delegation, todo, memory for this session's user, execute_code over the rest), then
/// messaging and scheduling where the toolsets allow, and the MCP servers' tools (added after
/// delegation and execute_code took their copies: scripts cannot call MCP tools, as
/// upstream's cannot).
pub(crate) async fn registry(kit: &Toolkit, turn: TurnTools<'_>) -> Result<ToolRegistry, StoreError> {
    let mut tools = inherited(kit, &turn);
    own_state(kit, &turn, &mut tools);
    late(kit, turn, &mut tools).await?;
    Ok(tools)
}

/// The tools children and scripts get a copy of: the enabled built-ins and the services'
/// tools. Registered before delegation and execute_code, which take that copy.
fn inherited(kit: &Toolkit, turn: &TurnTools<'_>) -> ToolRegistry {
    let (tenant, agent, models) = (turn.tenant, turn.agent, turn.models);
    if kit.limits.prewarm {
        let key = SandboxKey { tenant, agent: agent.id, workspace: models.workspace };
        hermes_toolbox::prewarm(kit.sandboxes.clone(), key, &agent.toolsets);
    }
    let mut tools = kit.builtin.restricted_to(&agent.toolsets);
    if ToolsetName::Web.enabled_in(&agent.toolsets) {
        crate::tools::web::register(kit, tenant, models, &mut tools);
    }
    if ToolsetName::Vision.enabled_in(&agent.toolsets) {
        // A background child is capped as a foreground one is (`DelegateTool::child_tools`).
        let cap = (turn.delegation_depth > 0).then_some(crate::tools::vision::CHILD_LOADS_PER_IMAGE);
        crate::tools::vision::register(models, &kit.image_sources(), &mut tools, cap);
    }
    if ToolsetName::ImageGen.enabled_in(&agent.toolsets) {
        crate::tools::image::register(kit, tenant, &models.pools, &mut tools, turn.links.clone());
    }
    if ToolsetName::Browser.enabled_in(&agent.toolsets) {
        crate::tools::browser::register(kit, models, &mut tools);
    }
    if ToolsetName::Tts.enabled_in(&agent.toolsets) {
        crate::tools::speech::register(kit, tenant, &models.pools, &mut tools, turn.links.clone());
    }
    tools
}

/// Delegation (over the inherited tools), the tools bound to the turn's own state, and
/// execute_code over all of them. The skills index sees the names registered before it,
/// as a new session's stable prompt always has.
fn own_state(kit: &Toolkit, turn: &TurnTools<'_>, tools: &mut ToolRegistry) {
    let agent = turn.agent;
    if ToolsetName::Delegation.enabled_in(&agent.toolsets) {
        tools.register(Arc::new(DelegateTool {
            models: turn.models.clone(),
            children: kit.children(),
            images: kit.image_sources(),
            tools: tools.clone(),
            depth: turn.delegation_depth,
            usage: turn.child_usage.clone(),
            events: turn.events.clone(),
        }));
    }
    if ToolsetName::Todo.enabled_in(&agent.toolsets) {
        tools.register(Arc::new(crate::tools::todo::TodoTool { store: kit.store.clone() }));
    }
    memory(kit, agent, turn.user_key, tools);
    if ToolsetName::SessionSearch.enabled_in(&agent.toolsets) {
        let user_key = turn.user_key.to_owned();
        tools.register(Arc::new(crate::tools::search::SessionSearchTool { store: kit.store.clone(), user_key }));
    }
    skills(kit, agent, tools, "agent");
    if ToolsetName::CodeExecution.enabled_in(&agent.toolsets) {
        let sandboxes = kit.sandboxes.clone();
        let terminal = Arc::new(hermes_toolbox::TerminalTool::new(sandboxes.clone(), kit.limits.exec_timeout_seconds));
        tools.register(Arc::new(hermes_toolbox::ExecuteCode::new(sandboxes, tools, Some(terminal))));
    }
}

/// The memory tool, for this session's user.
fn memory(kit: &Toolkit, agent: &Agent, user_key: &str, tools: &mut ToolRegistry) {
    if ToolsetName::Memory.enabled_in(&agent.toolsets) {
        tools.register(Arc::new(crate::tools::memory::MemoryTool::for_user(kit, user_key)));
    }
}

/// `skills_list`, `skill_view` and `skill_manage`. Their index sees the names registered so
/// far (`fixed_names`, for `requires_tools` and fallbacks), as a new session's stable prompt
/// does; changes are logged as `actor`.
fn skills(kit: &Toolkit, agent: &Agent, tools: &mut ToolRegistry, actor: &'static str) {
    if !ToolsetName::Skills.enabled_in(&agent.toolsets) {
        return;
    }
    let mut tool_names = tools.fixed_names();
    tool_names.extend(["skills_list", "skill_view", "skill_manage"]);
    let ctx = SkillsContext {
        store: kit.store.clone(),
        catalog: kit.skills.clone(),
        agent: agent.clone(),
        tool_names,
        sandboxes: kit.sandboxes.clone(),
    };
    tools.register(Arc::new(SkillsListTool(ctx.clone())));
    tools.register(Arc::new(SkillViewTool(ctx.clone())));
    tools.register(Arc::new(SkillManageTool { ctx, actor }));
}

/// The tools nobody inherits: the MCP servers', send_message and cronjob (whose origin, where
/// its jobs reply, is read now).
async fn late(kit: &Toolkit, turn: TurnTools<'_>, tools: &mut ToolRegistry) -> Result<(), StoreError> {
    let agent = turn.agent;
    if ToolsetName::Mcp.enabled_in(&agent.toolsets) {
        crate::tools::mcp::register(kit, turn.models, turn.mcp_servers, tools, turn.links).await;
    }
    if ToolsetName::Messaging.enabled_in(&agent.toolsets) {
        tools.register(Arc::new(crate::tools::send_message::SendMessageTool { store: kit.store.clone() }));
    }
    if ToolsetName::Cronjob.enabled_in(&agent.toolsets) {
        let origin = kit.store.automation().turn_reply_to(turn.tenant, turn.turn).await?;
        let ceiling = agent.toolsets.clone();
        tools.register(Arc::new(crate::tools::cron::CronjobTool { store: kit.store.clone(), origin, ceiling }));
    }
    Ok(())
}

/// The learning review's tools: the agent's memory and skills tools, nothing else.
pub(crate) fn reviewer(kit: &Toolkit, agent: &Agent, user_key: &str) -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    memory(kit, agent, user_key, &mut tools);
    skills(kit, agent, &mut tools, "review");
    tools
}
