//! `delegate_task`: the agent hands up to three self-contained tasks to children that work in
//! parallel and report back only their summaries. What a child gets is `crate::children`'s
//! (the default identity, the workspace's context files, a 50-step budget, none of the tools
//! that reach the user or the agent's own state; `delegate_task` only for an orchestrator the
//! depth allows). Their transcripts are stored as sessions linked to the parent.
//!
//! In the foreground (the default) the children run inside the call: their usage adds to the
//! parent turn's, cancelling the parent cancels them, and a per-tenant cap shared by every
//! worker through Redis bounds the children running at once. With `background: true` (the
//! main agent in a chat only) the call returns a handle at once; see `delegate_background`.

use hermes_core::ToolsetName;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use hermes_agent::{EventSink, JournalError, TurnEnd, TurnJournal};
use hermes_core::{ChatMessage, ChildRole, SessionId, TurnEventKind, TurnId, Usage};
use hermes_store::Store;
use hermes_store::delegations::NewChild;
use hermes_tools::{SimpleTool, ToolCtx, ToolError, ToolRegistry, ToolSpec, object_schema};

use crate::aside::Aside;
use crate::children::CHILD_EXCLUDED;
use crate::events::EventRelay;
use crate::models::Models;
pub(crate) use crate::tools::delegate_background::Children;
use crate::tools::vision::ImageSources;

/// Tasks one call may hand out.
pub(crate) const MAX_CHILDREN: usize = 3;
/// A child's step budget.
pub(crate) const CHILD_ITERATIONS: u32 = 50;
/// How long a child waits for a tenant slot before giving up.
const SLOT_WAIT: Duration = Duration::from_secs(60);

pub(crate) struct DelegateTool {
    pub models: Models,
    pub children: Children,
    /// Where a child's `vision_analyze` reads images (it is registered again, capped).
    pub images: ImageSources,
    /// The parent's tools, from which children's are derived.
    pub tools: ToolRegistry,
    /// This agent's depth (0 for the main agent).
    pub depth: u32,
    /// Usage of all children, added to the parent turn's.
    pub usage: Arc<Mutex<Usage>>,
    /// The parent turn's events, where children in the foreground tell the tools they start.
    pub events: EventRelay,
}

/// A foreground child's tool starts, told on its parent turn's events as task `position` of
/// `tasks` (upstream relays a child's tools to its parent's progress display).
struct ChildProgress {
    relay: EventRelay,
    position: u32,
    tasks: u32,
}

impl EventSink for ChildProgress {
    fn emit(&self, event: TurnEventKind) {
        if let TurnEventKind::ToolStarted { tool, preview, .. } = event {
            let (position, tasks) = (self.position, self.tasks);
            self.relay.emit(TurnEventKind::ChildTool { position, tasks, tool, preview });
        }
    }
}

pub(crate) struct Task {
    pub goal: String,
    pub context: Option<String>,
    pub role: ChildRole,
}

impl Task {
    /// The child's first message.
    pub fn input(&self) -> String {
        match &self.context {
            Some(c) => format!("{}\n\nContext:\n{c}", self.goal),
            None => self.goal.clone(),
        }
    }
}

/// Which of a call's children a run is, and its step budget.
#[derive(Clone, Copy)]
struct ChildOf {
    position: u32,
    tasks: u32,
    max_iterations: u32,
}

/// One call's tasks and how they run.
pub(crate) struct Call {
    pub tasks: Vec<Task>,
    pub max_iterations: u32,
    pub background: bool,
}

/// A `role` given (upstream's names), else `default`.
fn role_in(value: &Value, default: ChildRole) -> Result<ChildRole, ToolError> {
    match value.get("role").and_then(Value::as_str) {
        Some(role) => role.parse().map_err(|e: hermes_core::UnknownName| ToolError::RespondToModel(e.to_string())),
        None => Ok(default),
    }
}

fn parse_tasks(args: &Value) -> Result<Call, ToolError> {
    let shared = args.get("context").and_then(Value::as_str).map(str::to_owned);
    let role = role_in(args, ChildRole::Leaf)?;
    let mut tasks = Vec::new();
    if let Some(goal) = args.get("goal").and_then(Value::as_str) {
        tasks.push(Task { goal: goal.to_owned(), context: shared.clone(), role });
    }
    if let Some(list) = args.get("tasks").and_then(Value::as_array) {
        for t in list {
            let goal = t
                .get("goal")
                .and_then(Value::as_str)
                .or_else(|| t.as_str())
                .ok_or_else(|| ToolError::RespondToModel("each task needs a \"goal\"".into()))?;
            let own = t.get("context").and_then(Value::as_str).map(str::to_owned);
            let context = match (own, &shared) {
                (Some(a), Some(b)) => Some(format!("{b}\n\n{a}")),
                (a, b) => a.or_else(|| b.clone()),
            };
            tasks.push(Task { goal: goal.to_owned(), context, role: role_in(t, role)? });
        }
    }
    if tasks.is_empty() {
        return Err(ToolError::RespondToModel("give a \"goal\" or a \"tasks\" list".into()));
    }
    if tasks.len() > MAX_CHILDREN {
        return Err(ToolError::RespondToModel(format!(
            "at most {MAX_CHILDREN} tasks can run at once; you gave {}. Send the most important ones first.",
            tasks.len()
        )));
    }
    let max_iterations =
        args.get("max_iterations").and_then(Value::as_u64).map_or(CHILD_ITERATIONS, |m| m.clamp(1, 50) as u32);
    let background = args.get("background").and_then(Value::as_bool).unwrap_or(false);
    Ok(Call { tasks, max_iterations, background })
}

/// A child's transcript goes to its own session; its model calls and tool time are its
/// parent turn's, recorded as the child goes (the parent records nothing while it waits, and a
/// worker dying mid-delegation must not lose what the children spent).
struct ChildJournal {
    store: Store,
    tenant: hermes_core::TenantId,
    session: SessionId,
    turn: TurnId,
    /// The delegating turn, which the child's calls and tool time are metered with.
    parent: crate::budget::Ledger,
    meter: std::sync::Arc<hermes_llm::CallBuffer>,
}

impl ChildJournal {
    /// Stores the calls answered since the last step (on failure they wait for the next).
    async fn store_calls(&self) {
        let records = self.meter.drain();
        if records.is_empty() {
            return;
        }
        let calls = records.to_vec();
        let crate::budget::Ledger { session, turn } = self.parent;
        if let Err(e) = self.store.tenancy().record_model_calls(self.tenant, session, turn, &calls).await {
            tracing::warn!(error = %e, calls = calls.len(), "cannot record a child's model calls yet");
            for record in records {
                hermes_llm::CallMeter::record(self.meter.as_ref(), record);
            }
        }
    }
}

impl TurnJournal for ChildJournal {
    async fn record(&mut self, step: i32, message: &ChatMessage) -> Result<(), JournalError> {
        self.store_calls().await;
        self.store
            .conversations()
            .append_message(self.tenant, self.session, 0, self.turn, step, message)
            .await
            .map(|_| ())
            .map_err(|e| {
                if e.is_transient() {
                    JournalError::Storage(e.to_string())
                } else {
                    JournalError::Rejected(e.to_string())
                }
            })
    }

    /// A child's tool time is its parent turn's.
    async fn tool_time(&mut self, elapsed: std::time::Duration, sandboxed: bool) {
        let ms = i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX);
        if let Err(e) = self.store.tenancy().add_tool_time(self.tenant, self.parent.turn, ms, sandboxed).await {
            tracing::warn!(error = %e, "cannot record a tool call's time");
        }
    }
}

impl DelegateTool {
    /// Queues `tasks` as background children (see `delegate_background`): the handle the
    /// model reads, or `None` where the turn cannot take a later answer.
    async fn start_background(
        &self,
        ctx: &ToolCtx,
        tasks: &[Task],
        max_iterations: u32,
    ) -> Result<Option<String>, ToolError> {
        let children = tasks
            .iter()
            .map(|t| NewChild { goal: t.goal.clone(), input: ChatMessage::user(t.input()), role: t.role })
            .collect();
        // Children get none of the parent's tools they never get.
        let tools = self.tools.names().into_iter().filter(|n| !CHILD_EXCLUDED.contains(n)).map(str::to_owned).collect();
        let toolsets = self.models.agent.toolsets.clone();
        crate::tools::delegate_background::start(&self.children, ctx, children, (tools, toolsets), max_iterations).await
    }

    fn child_tools(&self, role: ChildRole) -> ToolRegistry {
        let max_depth = self.children.max_depth;
        let mut tools = self.tools.without(&CHILD_EXCLUDED);
        // A child that loads the same image again and again is stopped (upstream's cap).
        if tools.names().contains(&"vision_analyze") {
            crate::tools::vision::register(
                &self.models,
                &self.images,
                &mut tools,
                Some(crate::tools::vision::CHILD_LOADS_PER_IMAGE),
            );
        }
        if crate::children::may_delegate(role, self.depth + 1, max_depth) {
            tools.register(Arc::new(DelegateTool {
                models: self.models.clone(),
                children: self.children.clone(),
                images: self.images.clone(),
                tools: self.tools.clone(),
                depth: self.depth + 1,
                usage: self.usage.clone(),
                // A grandchild's tools are not told: its numbers would read as its parent's.
                events: EventRelay::nowhere(),
            }));
        }
        tools
    }

    async fn run_child(&self, ctx: &ToolCtx, task: &Task, run: ChildOf) -> Result<String, String> {
        let tenant = ctx.tenant_id;
        let slot = uuid::Uuid::now_v7().to_string();
        let (slots, cap) = (&self.children.slots, self.children.cap);
        let waited = tokio::time::timeout(SLOT_WAIT, async {
            loop {
                match slots.try_acquire(&tenant.to_string(), &slot, cap, Duration::from_secs(3600)).await {
                    Ok(true) => return true,
                    Ok(false) => tokio::time::sleep(Duration::from_millis(250)).await,
                    // Without Redis there is no shared cap: run rather than fail.
                    Err(e) => {
                        tracing::warn!(error = %e, "child slots unavailable; running without the tenant cap");
                        return false;
                    }
                }
            }
        })
        .await;
        if waited.is_err() {
            return Err("too many delegated tasks are running for this team; try again later".into());
        }
        let result = self.run_child_in_slot(ctx, task, run).await;
        if let Err(e) = slots.release(&tenant.to_string(), &slot).await {
            tracing::warn!(error = %e, "cannot release a child slot (it will lapse)");
        }
        result
    }

    async fn run_child_in_slot(&self, ctx: &ToolCtx, task: &Task, run: ChildOf) -> Result<String, String> {
        let store = &self.children.store;
        let session = store
            .conversations()
            .create_child_session(ctx.tenant_id, ctx.session_id, &task.goal)
            .await
            .map_err(|e| format!("cannot start the task: {e}"))?;
        let tools = self.child_tools(task.role);
        // The child's calls are metered with the parent turn's, as sub-agent work.
        let (model, model_name) = Models { purpose: hermes_core::CallPurpose::Subagent, ..self.models.clone() }.child();
        let agent = &self.models.agent;
        let key = hermes_sandbox::SandboxKey { tenant: ctx.tenant_id, agent: agent.id, workspace: ctx.workspace };
        let sandboxes = self.children.sandboxes.clone();
        let prompt = crate::children::prompt(sandboxes, key, &agent.toolsets, &model_name, &tools.names()).await;
        let input = task.input();
        let turn = TurnId::new();
        let mut journal = ChildJournal {
            store: store.clone(),
            tenant: ctx.tenant_id,
            session,
            turn,
            parent: self.models.ledger,
            meter: self.models.meter.clone(),
        };
        let input = ChatMessage::user(input);
        journal.record(0, &input).await.map_err(|e| e.to_string())?;
        // Children never wait for the user: what needs an answer is refused.
        let interaction = hermes_tools::Interactive { enabled: false, resolution: None, ..ctx.interaction.clone() };
        let tool_ctx = ToolCtx { session_id: session, turn_id: turn, interaction, ..ctx.clone() };
        let progress = ChildProgress { relay: self.events.clone(), position: run.position, tasks: run.tasks };
        let aside = Aside {
            events: &progress,
            model: &model,
            model_name: &model_name,
            settings: &self.models.agent.model_settings,
            tools: &tools,
            tool_ctx: &tool_ctx,
            journal: &mut journal,
            max_iterations: run.max_iterations,
        };
        match aside.run(prompt, input).await {
            TurnEnd::Finished(outcome) => {
                if let Ok(mut usage) = self.usage.lock() {
                    usage.add(&outcome.usage);
                }
                if outcome.content.trim().is_empty() {
                    Err(outcome.error.unwrap_or_else(|| "the task produced no summary".into()))
                } else {
                    Ok(outcome.content)
                }
            }
            TurnEnd::Superseded => Err("the task was stopped".into()),
            TurnEnd::Suspended(e) => Err(format!("the task could not be saved: {e}")),
            // Children cannot ask the user (their context is not interactive); kept exhaustive.
            TurnEnd::Parked(p) => Err(format!("the task needed the user's answer ({})", p.interaction.kind)),
        }
    }
}

impl SimpleTool for DelegateTool {
    const SPEC: ToolSpec = ToolSpec::new(
        "delegate_task",
        ToolsetName::Delegation,
        "Hand self-contained tasks to sub-agents that work in parallel (at most 3 at once) and \
                return only their summaries. Give each all the context it needs: it cannot see this conversation.",
    )
    .sequential();

    fn parameters(&self) -> Value {
        let role = json!({
            "type": "string",
            "enum": ["leaf", "orchestrator"],
            "description": "leaf (default): works alone; orchestrator: may delegate again where depth allows."
        });
        let mut properties = json!({
            "goal": { "type": "string", "description": "One task." },
            "tasks": {
                "type": "array",
                "maxItems": MAX_CHILDREN,
                "items": {
                    "type": "object",
                    "properties": { "goal": { "type": "string" }, "context": { "type": "string" }, "role": role },
                    "required": ["goal"]
                },
                "description": "Several tasks to run in parallel."
            },
            "context": { "type": "string", "description": "Background every task needs." },
            "role": role,
            "max_iterations": { "type": "integer", "description": "Step budget per task (at most 50)." }
        });
        // Only the main agent's calls may go to the background: a child waits for its own.
        if self.depth == 0 {
            properties["background"] = json!({
                "type": "boolean",
                "description": "Return at once with a handle; the results arrive later as a new message, \
                                and you answer the user then. For long work while the conversation goes on."
            });
        }
        object_schema(properties, &[])
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let Call { tasks, max_iterations, background } = parse_tasks(&args)?;
        if background
            && self.depth == 0
            && let Some(handle) = self.start_background(ctx, &tasks, max_iterations).await?
        {
            return Ok(handle);
        }
        let tasks_n = u32::try_from(tasks.len()).unwrap_or(u32::MAX);
        let runs = tasks
            .iter()
            .zip(1..)
            .map(|(t, position)| self.run_child(ctx, t, ChildOf { position, tasks: tasks_n, max_iterations }));
        let results = futures_util::future::join_all(runs).await;
        let mut out = format!("Results of {} delegated task(s):", tasks.len());
        for (i, (task, result)) in tasks.iter().zip(results).enumerate() {
            let body = match result {
                Ok(summary) => summary,
                Err(e) => format!("[failed: {e}]"),
            };
            out.push_str(&format!("\n\n### Task {}: {}\n{}", i + 1, task.goal, body));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_are_parsed_capped_and_explained() {
        let call = parse_tasks(&json!({"goal": "one", "context": "ctx", "max_iterations": 500})).unwrap();
        assert_eq!(call.tasks.len(), 1);
        assert_eq!(call.tasks[0].context.as_deref(), Some("ctx"));
        assert_eq!(call.max_iterations, 50, "never above a child's budget");
        assert!(!call.background, "the foreground unless asked");
        let call = parse_tasks(&json!({
            "tasks": [{"goal": "a", "context": "own", "role": "orchestrator"}, "b"],
            "context": "shared",
            "background": true
        }))
        .unwrap();
        let tasks = &call.tasks;
        assert_eq!(tasks[0].context.as_deref(), Some("shared\n\nown"));
        assert_eq!(tasks[1].goal, "b");
        assert_eq!((tasks[0].role, tasks[1].role), (ChildRole::Orchestrator, ChildRole::Leaf));
        assert!(call.background);
        let err = parse_tasks(&json!({"goal": "x", "role": "boss"})).err().unwrap();
        assert!(err.to_string().contains("leaf, orchestrator"), "{err}");
        let err = parse_tasks(&json!({"tasks": ["a", "b", "c", "d"]})).err().unwrap();
        assert!(err.to_string().contains("at most 3"));
        assert!(parse_tasks(&json!({})).is_err());
    }
}
