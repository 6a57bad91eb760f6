//! `delegate_task`: the agent hands up to three self-contained tasks to children that work in
//! parallel and report back only their summaries. Children get the default identity, no
//! context files, a 50-step budget and no tools that reach the user or the agent's own state
//! (`delegate_task` unless the depth allows, `clarify`, `memory`, `execute_code`,
//! `send_message`). Their transcripts are stored as sessions linked to the parent; their usage
//! adds to the parent turn's; cancelling the parent cancels them (they run inside its task).
//! A per-tenant cap, shared by every worker through Redis, bounds the children running at once.

use hermes_core::ToolsetName;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use hermes_agent::prompt::{PromptInputs, render_stable_prompt};
use hermes_agent::{JournalError, TurnEnd, TurnJournal};
use hermes_cache::Slots;
use hermes_core::{ChatMessage, SessionId, TurnId, Usage};
use hermes_store::Store;
use hermes_tools::{SimpleTool, ToolCtx, ToolError, ToolRegistry, ToolSpec, object_schema};

use crate::aside::Aside;
use crate::models::Models;
use crate::tools::vision::ImageSources;

/// Tasks one call may hand out.
pub(crate) const MAX_CHILDREN: usize = 3;
/// A child's step budget.
pub(crate) const CHILD_ITERATIONS: u32 = 50;
/// Tools a child never gets.
const CHILD_EXCLUDED: [&str; 5] = ["delegate_task", "clarify", "memory", "execute_code", "send_message"];
/// How long a child waits for a tenant slot before giving up.
const SLOT_WAIT: Duration = Duration::from_secs(60);

/// What running children takes besides their models: where their sessions are stored, the
/// per-tenant slots (`cap` at once) and how deep delegation may go.
#[derive(Clone)]
pub(crate) struct Children {
    pub store: Store,
    pub slots: Slots,
    pub cap: u32,
    pub max_depth: u32,
}

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
}

struct Task {
    goal: String,
    context: Option<String>,
}

fn parse_tasks(args: &Value) -> Result<(Vec<Task>, u32), ToolError> {
    let shared = args.get("context").and_then(Value::as_str).map(str::to_owned);
    let mut tasks = Vec::new();
    if let Some(goal) = args.get("goal").and_then(Value::as_str) {
        tasks.push(Task { goal: goal.to_owned(), context: shared.clone() });
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
            tasks.push(Task { goal: goal.to_owned(), context });
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
    let max = args.get("max_iterations").and_then(Value::as_u64).map_or(CHILD_ITERATIONS, |m| m.clamp(1, 50) as u32);
    Ok((tasks, max))
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
    fn child_tools(&self) -> ToolRegistry {
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
        if self.depth + 1 < max_depth {
            tools.register(Arc::new(DelegateTool {
                models: self.models.clone(),
                children: self.children.clone(),
                images: self.images.clone(),
                tools: self.tools.clone(),
                depth: self.depth + 1,
                usage: self.usage.clone(),
            }));
        }
        tools
    }

    async fn run_child(&self, ctx: &ToolCtx, task: &Task, max_iterations: u32) -> Result<String, String> {
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
        let result = self.run_child_in_slot(ctx, task, max_iterations).await;
        if let Err(e) = slots.release(&tenant.to_string(), &slot).await {
            tracing::warn!(error = %e, "cannot release a child slot (it will lapse)");
        }
        result
    }

    async fn run_child_in_slot(&self, ctx: &ToolCtx, task: &Task, max_iterations: u32) -> Result<String, String> {
        let store = &self.children.store;
        let session = store
            .conversations()
            .create_child_session(ctx.tenant_id, ctx.session_id, &task.goal)
            .await
            .map_err(|e| format!("cannot start the task: {e}"))?;
        let tools = self.child_tools();
        let names = tools.names();
        let prompt = render_stable_prompt(&PromptInputs {
            soul: None,
            model: &self.models.agent.model,
            tool_names: &names,
            custom_system: Some(
                "You are working on one task delegated by another agent. Do it, then reply with a \
                 concise summary of what you did and found: that summary is all the other agent will see.",
            ),
            memory: None,
            user_profile: None,
            skills: &[],
            context_file: None,
            today: chrono::Utc::now().date_naive(),
            source: Some(hermes_core::SessionSource::Subagent),
        });
        let input = match &task.context {
            Some(c) => format!("{}\n\nContext:\n{c}", task.goal),
            None => task.goal.clone(),
        };
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
        // The child's calls are metered with the parent turn's, as sub-agent work.
        let model = Models { purpose: hermes_core::CallPurpose::Subagent, ..self.models.clone() }.main();
        // Children never wait for the user: what needs an answer is refused.
        let interaction = hermes_tools::Interactive { enabled: false, resolution: None, ..ctx.interaction.clone() };
        let tool_ctx = ToolCtx { session_id: session, turn_id: turn, interaction, ..ctx.clone() };
        let aside = Aside {
            model: &model,
            model_name: &self.models.agent.model,
            settings: &self.models.agent.model_settings,
            tools: &tools,
            tool_ctx: &tool_ctx,
            journal: &mut journal,
            max_iterations,
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
        object_schema(
            json!({
                "goal": { "type": "string", "description": "One task." },
                "tasks": {
                    "type": "array",
                    "maxItems": MAX_CHILDREN,
                    "items": { "type": "object", "properties": { "goal": { "type": "string" }, "context": { "type": "string" } }, "required": ["goal"] },
                    "description": "Several tasks to run in parallel."
                },
                "context": { "type": "string", "description": "Background every task needs." },
                "max_iterations": { "type": "integer", "description": "Step budget per task (at most 50)." }
            }),
            &[],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let (tasks, max_iterations) = parse_tasks(&args)?;
        let runs = tasks.iter().map(|t| self.run_child(ctx, t, max_iterations));
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
        let (tasks, max) = parse_tasks(&json!({"goal": "one", "context": "ctx", "max_iterations": 500})).unwrap();
        assert_eq!(tasks.len(), 1);
        assert_eq!(tasks[0].context.as_deref(), Some("ctx"));
        assert_eq!(max, 50, "never above a child's budget");
        let (tasks, _) =
            parse_tasks(&json!({"tasks": [{"goal": "a", "context": "own"}, "b"], "context": "shared"})).unwrap();
        assert_eq!(tasks[0].context.as_deref(), Some("shared\n\nown"));
        assert_eq!(tasks[1].goal, "b");
        let err = parse_tasks(&json!({"tasks": ["a", "b", "c", "d"]})).err().unwrap();
        assert!(err.to_string().contains("at most 3"));
        assert!(parse_tasks(&json!({})).is_err());
    }
}
