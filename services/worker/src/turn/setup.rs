//! The pieces a turn's plan is made of: the stable prompt on a session's first turn (with its frozen memory snapshot and project context), the per-call
//! memory nudge, and the rules for unattended runs.

use std::sync::Arc;

use hermes_agent::context_files::ContextFile;
use hermes_agent::memory::{self, Document};
use hermes_agent::prompt::{PromptInputs, render_stable_prompt};
use hermes_core::{ChatMessage, Content, ContentPart, Role, SessionSource, TenantId, ToolsetName};
use hermes_sandbox::SandboxKey;
use hermes_store::{Agent, ClaimedTurn, MemorySnapshot, StoreError};
use hermes_tools::ToolRegistry;

use crate::Runtime;
use crate::workspace::SandboxFiles;

/// Said to the model, for one call only, every `memory.nudge_interval` user turns.
pub(crate) const MEMORY_NUDGE: &str = "[System note: if this conversation taught you something durable (a preference, \
a fact about the user or their environment, a convention, a lesson), save it now with the memory tool.]";

/// Said every `skills.nudge_interval` user turns.
pub(crate) const SKILLS_NUDGE: &str = "[System note: if you just completed a non-trivial task or found a workflow \
that works, save it as a skill with skill_manage so you can reuse it.]";

/// Whether a stored toolset name is one of `set`. The store keeps an agent's toolsets as
/// unvalidated text, so a name no toolset has is in no set (and is otherwise left alone).
fn among(name: &str, set: &[ToolsetName]) -> bool {
    name.parse().is_ok_and(|t| set.contains(&t))
}

/// The stable prompt of a session's first turn. MEMORY and USER are read now and frozen with
/// it, so later writes show in the next session while this one's prompt stays byte-stable.
pub(crate) async fn render_prompt(
    rt: &Arc<Runtime>,
    tenant: TenantId,
    agent: &Agent,
    turn: &ClaimedTurn,
    tools: &ToolRegistry,
    (memory, skill_versions, cwd): (Option<MemorySnapshot>, crate::skills::Versions, &str),
) -> Result<String, StoreError> {
    // The three sources are independent: read them at once (MEMORY and USER usually came
    // with the turn's inputs).
    let (context_file, skills, memory) = tokio::join!(
        context_file(
            rt.ctx.sandboxes.clone(),
            SandboxKey { tenant, agent: agent.id, workspace: turn.workspace() },
            &agent.toolsets,
            cwd
        ),
        async {
            if !ToolsetName::Skills.enabled_in(&agent.toolsets) {
                return Ok(Vec::new());
            }
            let visible = rt.toolkit.skills.visible_at(&rt.ctx.store, agent, &tools.names(), skill_versions).await?;
            Ok::<_, StoreError>(crate::skills::prompt_entries(&visible))
        },
        async {
            if !ToolsetName::Memory.enabled_in(&agent.toolsets) {
                return Ok(None);
            }
            match memory {
                Some(snapshot) => Ok(Some(snapshot)),
                None => rt.ctx.store.agents().memory_snapshot(tenant, agent.id, &turn.session_user_key).await.map(Some),
            }
        },
    );
    let skills = skills?;
    let limits = &rt.ctx.config.memory;
    let (memory, user_profile) = match memory? {
        Some(snapshot) => (
            memory::render_block(Document::Memory, &snapshot.memory, limits.memory_char_limit),
            memory::render_block(Document::User, &snapshot.user, limits.user_char_limit),
        ),
        None => (None, None),
    };
    Ok(render_stable_prompt(&PromptInputs {
        soul: agent.soul.as_deref(),
        model: &agent.model,
        tool_names: &tools.names(),
        custom_system: agent.system_message.as_deref(),
        memory: memory.as_deref(),
        user_profile: user_profile.as_deref(),
        skills: &skills,
        context_file: context_file.as_ref(),
        today: chrono::Utc::now().date_naive(),
        source: Some(turn.session_source),
    }))
}

/// Project context from the agent's workspace, when `toolsets` reach it: found from `cwd`
/// (relative to the workspace; empty: its root) up, as upstream looks from its working folder.
pub(crate) async fn context_file(
    sandboxes: Arc<dyn hermes_sandbox::Sandboxes>,
    key: SandboxKey,
    toolsets: &[String],
    cwd: &str,
) -> Option<ContextFile> {
    if !ToolsetName::Terminal.enabled_in(toolsets) {
        return None;
    }
    let files = SandboxFiles::new(sandboxes, key);
    let found = hermes_agent::context_files::discover(&files, cwd).await;
    if let Some(f) = &found
        && !f.blocked.is_empty()
    {
        tracing::warn!(file = %f.name, blocked = ?f.blocked, "context file had injections; blocked them");
    }
    found
}

/// Adds the memory and skills nudges to this turn's user message, in the model's view only
/// (never stored, so the transcript and later prompts stay as they were), every
/// `memory.nudge_interval` / `skills.nudge_interval` user turns of the session.
pub(crate) fn nudge(rt: &Runtime, tools: &ToolRegistry, messages: &mut [ChatMessage], turn_start: usize) {
    let user_turns = messages.iter().take(turn_start + 1).filter(|m| m.role == Role::User).count();
    let names = tools.names();
    let config = &rt.ctx.config;
    let due = |interval: usize, tool: &str| {
        interval > 0 && user_turns > 0 && user_turns.is_multiple_of(interval) && names.contains(&tool)
    };
    let notes: Vec<&str> = [
        due(config.memory.nudge_interval, "memory").then_some(MEMORY_NUDGE),
        due(config.skills.nudge_interval, "skill_manage").then_some(SKILLS_NUDGE),
    ]
    .into_iter()
    .flatten()
    .collect();
    if notes.is_empty() {
        return;
    }
    let Some(input) = messages.get_mut(turn_start).filter(|m| m.role == Role::User) else { return };
    let note = notes.join("\n");
    input.content = Some(match input.content.take() {
        Some(Content::Text(text)) => Content::Text(format!("{text}\n\n{note}")),
        Some(Content::Parts(mut parts)) => {
            parts.push(ContentPart::Text { text: note });
            Content::Parts(parts)
        }
        None => Content::Text(note),
    });
}

/// Toolsets a webhook-started turn may use, because the event it reads is a stranger's text:
/// upstream's `hermes-webhook` set is web and vision (its `clarify` has nobody to answer
/// here).
const WEBHOOK_TOOLSETS: &[ToolsetName] = &[ToolsetName::Web, ToolsetName::Vision];

/// Toolsets a cron run never gets: nobody to ask, no scheduling more runs, no messaging elsewhere.
const CRON_EXCLUDED: [ToolsetName; 3] = [ToolsetName::Clarify, ToolsetName::Cronjob, ToolsetName::Messaging];

/// Who started a turn, as far as its setup cares: someone who can answer, or an unattended
/// run (a cron run or a webhook's turn) that nobody watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    Attended,
    Cron,
    Webhook,
    /// A background child's turn (see `crate::children`): nobody to ask either.
    Subagent,
}

impl Origin {
    /// Who started a session's turns, from its source.
    pub fn of(source: SessionSource) -> Self {
        match source {
            SessionSource::Cron => Self::Cron,
            SessionSource::Webhook => Self::Webhook,
            SessionSource::Subagent => Self::Subagent,
            SessionSource::Api | SessionSource::Telegram | SessionSource::Slack | SessionSource::Wecom => {
                Self::Attended
            }
        }
    }

    /// Nobody to ask: no questions, no approvals that wait, a shorter leash.
    pub fn is_unattended(self) -> bool {
        self != Self::Attended
    }

    /// Narrows an unattended run's toolsets: nobody to ask, so no `clarify`; a cron run
    /// cannot schedule more runs or message elsewhere; a webhook's turn keeps only
    /// [`WEBHOOK_TOOLSETS`].
    pub fn restrict(self, toolsets: &mut Vec<String>) {
        match self {
            // A child's are narrowed by `crate::children::ChildRun::restrict`.
            Self::Attended | Self::Subagent => {}
            Self::Cron => toolsets.retain(|t| !among(t, &CRON_EXCLUDED)),
            Self::Webhook => toolsets.retain(|t| among(t, WEBHOOK_TOOLSETS)),
        }
    }
}

/// A cron run takes its job's model (on the agent's provider) and keeps only the job's
/// toolsets of the agent's, when the job sets them; a run a webhook fired reads a stranger's
/// event, so it keeps only the webhook toolsets, as a webhook's own turn does.
pub(crate) fn apply_job_settings(settings: &hermes_store::cron::RunSettings, agent: &mut Agent) {
    if let Some(model) = &settings.model {
        agent.model = model.clone();
    }
    if let Some(only) = &settings.toolsets {
        agent.toolsets.retain(|t| only.contains(t));
    }
    if settings.fired {
        agent.toolsets.retain(|t| among(t, WEBHOOK_TOOLSETS));
    }
}
