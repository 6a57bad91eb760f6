//! A turn's plan: everything its loop needs (agent, toolsets, tools, models, prompt, messages,
//! tool context, limits), read from Postgres and built in one place, [`plan`], before the loop
//! runs. A slash command the worker answers itself ends the turn here.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_agent::{TurnEnd, TurnLimits, TurnStart};
use hermes_core::{ChatMessage, ErrorCode, FinishReason, Role, TenantId, ToolsetName, TurnOutcome, Usage};
use hermes_llm::CallBuffer;
use hermes_sandbox::SandboxKey;
use hermes_store::{Agent, ClaimedTurn, CredentialPools, MemorySnapshot, StoreError, StoredMessage, TurnInputs};
use hermes_tools::{ApprovalMode, Interactive, Judge, Resolution, ToolCtx, ToolRegistry};

use super::outcome::failed;
use super::setup::{self, Origin};
use crate::Runtime;
use crate::children::ChildRun;
use crate::events::EventRelay;
use crate::models::{Models, TurnModel};
use crate::tools::registry::{TurnTools, registry};

/// Attempts after which a turn that keeps killing its workers is failed instead of resumed.
const MAX_ATTEMPTS: i32 = 5;

/// The iterations of an unattended run (cron, webhook): upstream's cap for cron runs.
const UNATTENDED_MAX_ITERATIONS: u32 = 90;

/// Delegated children's usage, counted toward the turn that delegated.
pub(crate) type ChildUsage = Arc<Mutex<Usage>>;

/// Everything a turn's loop runs with.
pub(crate) struct TurnPlan {
    /// The agent as this turn runs it: a cron job's model and toolsets applied, an unattended
    /// run's toolsets narrowed.
    pub agent: Agent,
    pub origin: Origin,
    pub models: Models,
    pub model: TurnModel,
    pub tools: ToolRegistry,
    pub tool_ctx: ToolCtx,
    pub limits: TurnLimits,
    /// An unattended run ends after this long without activity (a hung call must not hold the
    /// slot); `None` waits as long as the turn works.
    pub inactivity_limit: Option<Duration>,
    /// A background child stops at this age (`worker.child_timeout_seconds`).
    pub deadline: Option<Duration>,
    /// The model's view (prompt, history, this turn so far) and the steps already stored.
    pub start: TurnStart,
    pub child_usage: ChildUsage,
    /// The session had an active goal when the turn started, or this turn sets one: only then
    /// is the answer judged against a goal.
    pub goal_may_apply: bool,
}

impl TurnPlan {
    /// The loop's starting state; its messages move into the loop, so this is taken once.
    pub fn take_start(&mut self) -> TurnStart {
        TurnStart { messages: std::mem::take(&mut self.start.messages), ..self.start }
    }
}

/// What planning a turn came to.
pub(super) enum Planned {
    /// The loop runs with this plan.
    Run(Box<TurnPlan>),
    /// A slash command answered without the model (kept out of the transcript).
    Answered(TurnOutcome),
    /// `/compress`: the conversation so far is summarised now instead of running the loop.
    Compress { models: Box<Models>, prompt: Option<String>, history: Vec<ChatMessage> },
}

/// Why a turn could not be planned.
pub(super) enum PlanError {
    /// Another worker took the session over.
    Fenced,
    /// Storage failed for a moment: hand the turn back rather than fail it.
    Transient(String),
    /// The turn cannot run: it ends with this outcome.
    Fail(Box<TurnOutcome>),
}

impl PlanError {
    fn fail(outcome: TurnOutcome) -> Self {
        Self::Fail(Box::new(outcome))
    }
}

impl From<StoreError> for PlanError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Fenced => PlanError::Fenced,
            e if e.is_transient() => PlanError::Transient(e.to_string()),
            other => {
                tracing::error!(error = %other, "cannot load the turn");
                PlanError::fail(failed(ErrorCode::StorageError, "The turn could not be loaded."))
            }
        }
    }
}

impl From<PlanError> for TurnEnd {
    fn from(e: PlanError) -> Self {
        match e {
            PlanError::Fenced => TurnEnd::Superseded,
            PlanError::Transient(reason) => TurnEnd::Suspended(reason),
            PlanError::Fail(outcome) => TurnEnd::Finished(*outcome),
        }
    }
}

/// Reads what `turn` needs and builds its plan; `meter` is the journal's, where every model
/// call of the turn is reported.
pub(super) async fn plan(
    rt: &Arc<Runtime>,
    tenant: TenantId,
    turn: &ClaimedTurn,
    inputs: Result<Box<TurnInputs>, StoreError>,
    (meter, events): (Arc<CallBuffer>, EventRelay),
) -> Result<Planned, PlanError> {
    let mut planner = Planner { rt, tenant, turn, events, workdir: None };
    let input = input_of(turn)?;
    let origin = Origin::of(turn.session_source);
    // A child's task is never a command, whatever it starts with.
    if origin != Origin::Subagent
        && let Some(reply) = planner.slash_command(&input).await
    {
        return Ok(Planned::Answered(reply));
    }
    // Read with the claim, on its connection (a checkout costs more than these reads).
    let TurnInputs {
        agent,
        messages: stored,
        pools,
        resolution,
        grants: allowed,
        capped,
        goal_active,
        memory,
        skill_versions,
        limits: audience,
    } = *inputs?;
    let (job, child) = planner.unattended(origin).await?;
    // A cron job's `workdir` (checked when it was made, and again here).
    planner.workdir = job.as_ref().and_then(|j| j.workdir.as_deref()).and_then(|w| hermes_core::cron::workdir(w).ok());
    let mcp_servers = rt.ctx.store.agents().mcp_servers(tenant, turn.agent_id).await?;
    let by = (origin, &audience, child.as_ref());
    let (mut agent, loads_skills) = planner.agent(agent, by, &mcp_servers, job.as_ref()).await?;
    let input = match crate::cron_script::input_after(rt, tenant, turn, (job.as_ref(), &agent), &stored, input).await? {
        Ok(input) => input,
        Err(outcome) => return Ok(Planned::Answered(outcome)),
    };
    let goal_may_apply = goal_active || crate::goals::goal_in(&input.text()).is_some();
    let models = planner.models(&agent, meter, pools, capped)?;
    let model = crate::children::turn_model(&models, child.is_some(), &mut agent);
    let child_usage = ChildUsage::default();
    let tools = planner.tools(&agent, &models, child_usage.clone(), &mcp_servers, child.as_ref()).await?;
    let mut history = History::of(stored, turn);
    if models.images_as_text() {
        crate::tools::vision::strip_images(&mut history.messages);
    }
    if !history.resumed && input.role == Role::User && crate::commands::is_compress(&input.text()) {
        let history = history.messages;
        return Ok(Planned::Compress { models: Box::new(models), prompt: turn.system_prompt.clone(), history });
    }
    let prompt = planner.prompt(&models, &tools, loads_skills, input, &mut history, (memory, skill_versions)).await?;
    let start = planner.start(prompt, history, &tools);
    let tool_ctx = planner.tool_ctx(&agent, &models, origin, resolution, allowed);
    let (limits, inactivity_limit) = planner.limits(origin, child.as_ref());
    let limit = Duration::from_secs(rt.ctx.config.worker.child_timeout_seconds);
    let deadline = child.as_ref().map(|child| child.time_left(limit));
    let plan = TurnPlan {
        agent,
        origin,
        models,
        model,
        tools,
        tool_ctx,
        limits,
        inactivity_limit,
        deadline,
        start,
        child_usage,
        goal_may_apply,
    };
    Ok(Planned::Run(Box::new(plan)))
}

/// The turn's input message, unless the turn cannot run at all.
fn input_of(turn: &ClaimedTurn) -> Result<ChatMessage, PlanError> {
    if turn.attempt > MAX_ATTEMPTS {
        tracing::error!("turn failed on {MAX_ATTEMPTS} workers; giving up");
        return Err(PlanError::fail(failed(
            ErrorCode::TurnRetriesExhausted,
            format!("The turn failed {MAX_ATTEMPTS} times and was stopped."),
        )));
    }
    serde_json::from_value::<ChatMessage>(turn.input.clone()).map_err(|e| {
        tracing::error!(error = %e, "stored turn input is not a message");
        PlanError::fail(failed(ErrorCode::InvalidInput, "The stored input of this turn cannot be read."))
    })
}

/// The session's stored messages, seen from this turn.
struct History {
    messages: Vec<ChatMessage>,
    /// This turn ran before (its input is stored): a resumed turn.
    resumed: bool,
    /// Where this turn's messages begin (after the history of earlier turns).
    first_of_turn: usize,
    /// Steps of this turn already stored.
    completed_steps: i32,
}

impl History {
    fn of(stored: Vec<StoredMessage>, turn: &ClaimedTurn) -> Self {
        let this_turn = |m: &&StoredMessage| m.turn_id == Some(turn.turn_id);
        let resumed = stored.iter().any(|m| this_turn(&m));
        let first_of_turn = stored.iter().position(|m| this_turn(&m)).unwrap_or(stored.len());
        let completed_steps = stored.iter().filter(this_turn).filter_map(|m| m.turn_step).max().unwrap_or(0);
        let messages = stored.into_iter().map(|m| m.message).collect();
        Self { messages, resumed, first_of_turn, completed_steps }
    }
}

/// The turn being planned, with what every step of planning reads.
struct Planner<'a> {
    rt: &'a Arc<Runtime>,
    tenant: TenantId,
    turn: &'a ClaimedTurn,
    /// The turn's events, where its delegated children tell their progress.
    events: EventRelay,
    /// Where its relative paths and commands start, and its context file is found from.
    workdir: Option<String>,
}

impl Planner<'_> {
    /// The reply to a slash command the worker answers without the model.
    async fn slash_command(&self, input: &ChatMessage) -> Option<TurnOutcome> {
        if input.role != Role::User || !input.text().trim_start().starts_with('/') {
            return None;
        }
        let key = SandboxKey { tenant: self.tenant, agent: self.turn.agent_id, workspace: self.turn.workspace() };
        let reply = match crate::commands::reload_mcp(self.rt, key, input.text().trim()) {
            Some(reply) => reply,
            None => crate::commands::run(self.rt.ctx.sandboxes.as_ref(), key, input.text().trim()).await?,
        };
        Some(TurnOutcome {
            content: reply,
            finish_reason: FinishReason::Stop,
            usage: Usage::default(),
            error: None,
            error_code: None,
            session_id: None,
        })
    }

    /// What an unattended turn runs by: a cron run's job settings, a background child's task.
    async fn unattended(
        &self,
        origin: Origin,
    ) -> Result<(Option<hermes_store::cron::RunSettings>, Option<ChildRun>), StoreError> {
        let (rt, tenant, turn) = (self.rt, self.tenant, self.turn);
        Ok(match origin {
            Origin::Cron => (rt.ctx.store.automation().cron_run_settings(tenant, turn.turn_id).await?, None),
            Origin::Subagent => (None, Some(ChildRun::of(rt, tenant, turn).await?)),
            Origin::Attended | Origin::Webhook => (None, None),
        })
    }

    /// The agent as this turn runs it, and whether skills named at the start of the input
    /// load (they do wherever the agent has the skills toolset, even where this turn's
    /// restrictions then take the skills tools away).
    async fn agent(
        &self,
        mut agent: Agent,
        (origin, audience, child): (Origin, &hermes_core::audience::ToolsetLimits, Option<&ChildRun>),
        mcp_servers: &[hermes_store::StoredMcpServer],
        job: Option<&hermes_store::cron::RunSettings>,
    ) -> Result<(Agent, bool), PlanError> {
        // Configured MCP servers are the `mcp` toolset: a cron job's toolset list and the
        // unattended rules may take it away like any other.
        if mcp_servers.iter().any(|s| s.enabled) && !ToolsetName::Mcp.enabled_in(&agent.toolsets) {
            agent.toolsets.push(ToolsetName::Mcp.as_str().to_owned());
        }
        if let Some(job) = job {
            setup::apply_job_settings(job, &mut agent);
        }
        // What the conversation's commands and then the API request asked of the model, over
        // the agent's own settings, within its limits as they are now.
        let asked = agent.client_limits.clamp(&agent.model_settings, self.turn.asked_settings());
        agent.model_settings = agent.model_settings.overlaid(&asked);
        let loads_skills = ToolsetName::Skills.enabled_in(&agent.toolsets);
        origin.restrict(&mut agent.toolsets);
        // The API key's, the chat's and the webhook's limits: narrower tools for wider audiences.
        audience.apply(&mut agent.toolsets);
        if let Some(child) = child {
            child.restrict(&mut agent.toolsets, self.rt.ctx.config.worker.delegation_max_depth);
        }
        Ok((agent, loads_skills))
    }

    fn models(
        &self,
        agent: &Agent,
        meter: Arc<CallBuffer>,
        pools: CredentialPools,
        capped: bool,
    ) -> Result<Models, PlanError> {
        let api_key = agent.provider_key(self.rt.ctx.secrets.as_ref()).map_err(|e| {
            tracing::error!(error = %e, "cannot open the agent's provider key");
            PlanError::fail(failed(ErrorCode::ProviderKeyUnavailable, "The agent's provider key cannot be read."))
        })?;
        Ok(Models {
            deps: self.rt.models.clone(),
            tenant: self.tenant,
            agent: agent.clone(),
            workspace: self.turn.workspace(),
            api_key,
            meter,
            purpose: match self.turn.session_source {
                hermes_core::SessionSource::Subagent => hermes_core::CallPurpose::Subagent,
                _ => hermes_core::CallPurpose::Main,
            },
            pools: Arc::new(pools),
            ledger: crate::budget::Ledger { session: self.turn.session_id, turn: self.turn.turn_id },
            capped,
        })
    }

    /// The turn's tools (see [`crate::tools::registry::registry`]).
    async fn tools(
        &self,
        agent: &Agent,
        models: &Models,
        child_usage: ChildUsage,
        mcp_servers: &[hermes_store::StoredMcpServer],
        child: Option<&ChildRun>,
    ) -> Result<ToolRegistry, StoreError> {
        let turn = self.turn;
        let tools = TurnTools {
            tenant: self.tenant,
            agent,
            models,
            user_key: &turn.session_user_key,
            // An API client reaches the files tools make by links to the API; a chat gets them sent.
            links: crate::tools::image::FileLinks::for_turn(turn.session_source, &self.rt.ctx.config),
            turn: turn.turn_id,
            child_usage,
            // A background child is one level down.
            delegation_depth: u32::from(turn.session_source == hermes_core::SessionSource::Subagent),
            mcp_servers,
            events: self.events.clone(),
        };
        let tools = registry(&self.rt.toolkit, tools).await?;
        Ok(match child {
            Some(child) => child.narrow(tools),
            None => tools,
        })
    }

    /// The session's frozen system prompt. On the turn's first run its input is stored first
    /// (with the prompt frozen if the session has none yet: the stored one wins, so every turn
    /// sees the same bytes) and joins `history`.
    async fn prompt(
        &self,
        models: &Models,
        tools: &ToolRegistry,
        loads_skills: bool,
        mut input: ChatMessage,
        history: &mut History,
        (memory, skill_versions): (Option<MemorySnapshot>, crate::skills::Versions),
    ) -> Result<String, StoreError> {
        let (rt, tenant, turn, agent) = (self.rt, self.tenant, self.turn, &models.agent);
        if let (Some(prompt), true) = (&turn.system_prompt, history.resumed) {
            return Ok(prompt.clone());
        }
        let child = turn.session_source == hermes_core::SessionSource::Subagent;
        let rendered = match &turn.system_prompt {
            Some(p) => p.clone(),
            None if child => {
                let key = SandboxKey { tenant, agent: agent.id, workspace: models.workspace };
                crate::children::prompt(rt.ctx.sandboxes.clone(), key, &agent.toolsets, &agent.model, &tools.names())
                    .await
            }
            None => {
                let cwd = self.workdir.as_deref().map_or("", hermes_core::cron::relative_workdir);
                setup::render_prompt(rt, tenant, agent, turn, tools, (memory, skill_versions, cwd)).await?
            }
        };
        let had_files = crate::inbox::has_files(&input);
        // A child's task is taken as written: no goal, no skill loaded by its first word.
        if !history.resumed && !child {
            input = self.expand(agent, tools, loads_skills, input).await;
            // Files go into the workspace and notes take their place, before anything is stored.
            let key = hermes_sandbox::SandboxKey { tenant, agent: agent.id, workspace: models.workspace };
            input = crate::inbox::deliver(rt, key, input).await;
            // Described once, before the input is stored: a resumed turn does not look again.
            if models.images_as_text() {
                input = crate::tools::vision::describe_images(models, &rt.toolkit.image_sources(), input).await;
            }
        }
        input.role = Role::User;
        let store = &rt.ctx.store;
        let frozen = store
            .conversations()
            .begin_turn(tenant, turn.session_id, turn.fence, turn.turn_id, &input, &rendered)
            .await?;
        if had_files {
            // The transcript has the files' notes now; the turn keeps no copy of their bytes.
            if let Err(e) = store.turns().settle_input(tenant, turn.turn_id, turn.fence, &input).await {
                tracing::warn!(error = %e, "cannot drop the bytes of the files from the turn's input");
            }
        }
        history.messages.push(input);
        Ok(frozen)
    }

    /// A fresh input as it is stored: `/goal TEXT` sets the session's goal and runs TEXT as
    /// the first turn toward it; `/skill-name request` loads the skill into the message.
    async fn expand(
        &self,
        agent: &Agent,
        tools: &ToolRegistry,
        loads_skills: bool,
        mut input: ChatMessage,
    ) -> ChatMessage {
        let (rt, store) = (self.rt, &self.rt.ctx.store);
        if let Some(goal) = crate::goals::goal_in(&input.text()).map(str::to_owned) {
            crate::goals::set_from_turn(rt, self.tenant, self.turn, &goal).await;
            input = ChatMessage::user(goal);
        }
        if loads_skills
            && input.text().trim_start().starts_with('/')
            && let Some(expanded) =
                crate::skills::expand_slash(store, &rt.toolkit.skills, agent, &tools.names(), &input.text()).await
        {
            input = expanded;
        }
        input
    }

    /// The model's view: the prompt, the turn's instructions, then the history (with this
    /// turn's messages so far), nudged where due.
    fn start(&self, prompt: String, history: History, tools: &ToolRegistry) -> TurnStart {
        let mut messages = Vec::with_capacity(history.messages.len() + 2);
        messages.push(ChatMessage::system(prompt));
        if let Some(instructions) = &self.turn.instructions {
            messages.push(ChatMessage::system(instructions.clone()));
        }
        let turn_start = messages.len() + history.first_of_turn;
        messages.extend(history.messages);
        setup::nudge(self.rt, tools, &mut messages, turn_start);
        TurnStart { messages, completed_steps: history.completed_steps, turn_start }
    }

    /// What the tools are told about the turn, and what they may ask the user.
    fn tool_ctx(
        &self,
        agent: &Agent,
        models: &Models,
        origin: Origin,
        resolution: Option<(String, hermes_core::InteractionAnswer)>,
        allowed: BTreeSet<String>,
    ) -> ToolCtx {
        let (tenant, turn) = (self.tenant, self.turn);
        let approval_mode = agent.approval_mode;
        let judge = (approval_mode == ApprovalMode::Smart).then(|| {
            let (model, model_name) = models.for_task(hermes_core::AuxiliaryTask::Approval);
            let store = self.rt.ctx.store.clone();
            let session = turn.session_id;
            Judge(Arc::new(crate::judge::SmartJudge { model, model_name, store, tenant, agent: agent.id, session }))
        });
        ToolCtx {
            tenant_id: tenant,
            agent_id: agent.id,
            session_id: turn.session_id,
            turn_id: turn.turn_id,
            workspace: turn.workspace(),
            call_id: String::new(),
            interaction: Interactive {
                // An unattended run has nobody to ask: no questions, no approvals that wait.
                enabled: !origin.is_unattended(),
                approval_mode,
                allowed: Arc::new(allowed),
                resolution: resolution.map(|(call_id, answer)| Arc::new(Resolution { call_id, answer })),
                judge,
            },
            workdir: self.workdir.clone(),
        }
    }

    /// The loop's limits, and how long an unattended run may go without activity (a child's
    /// are a child's, with its deadline instead).
    fn limits(&self, origin: Origin, child: Option<&ChildRun>) -> (TurnLimits, Option<Duration>) {
        if let Some(child) = child {
            return (TurnLimits { max_iterations: child.max_iterations, ..TurnLimits::child() }, None);
        }
        let worker = &self.rt.ctx.config.worker;
        let (max_iterations, inactivity_limit) = if origin.is_unattended() {
            let inactivity = Duration::from_secs(worker.unattended_inactivity_seconds);
            (worker.max_iterations.min(UNATTENDED_MAX_ITERATIONS), Some(inactivity))
        } else {
            (worker.max_iterations, None)
        };
        (TurnLimits { stream_deltas: self.turn.stream, ..TurnLimits::main(max_iterations) }, inactivity_limit)
    }
}
