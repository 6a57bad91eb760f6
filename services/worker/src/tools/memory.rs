//! `memory`: the agent curates its MEMORY (notes shared by everyone who talks to it) and the
//! current user's USER profile. Rules are `hermes_agent::memory`; rows are
//! `hermes_store::memory`. Writes are stored at once and concurrent sessions retry rather than
//! overwrite each other, but the session's prompt keeps the snapshot it started with, so the
//! answer shows the live entries.

use hermes_core::ToolsetName;
use serde_json::{Value, json};

use hermes_agent::memory::{self, Action, Applied, Refusal};
use hermes_store::{MemoryTarget, Store};
use hermes_tools::{Choice, SimpleTool, ToolCtx, ToolError, ToolSpec, choices, object_schema};

pub(crate) struct MemoryTool {
    pub store: Store,
    /// The session's end user, whose USER profile `target: "user"` means.
    pub user_key: String,
    pub memory_chars: usize,
    pub user_chars: usize,
}

impl MemoryTool {
    /// The tool for `user_key`'s session, with the configured caps.
    pub fn for_user(kit: &crate::tools::Toolkit, user_key: &str) -> Self {
        Self {
            store: kit.store.clone(),
            user_key: user_key.to_owned(),
            memory_chars: kit.limits.memory_chars,
            user_chars: kit.limits.user_chars,
        }
    }
}

choices! {
    enum MemoryAction {
        Add = "add",
        Replace = "replace",
        Remove = "remove",
    }
}

choices! {
    /// The `target` argument: `MemoryTarget` as the model names it.
    enum TargetArg {
        Memory = "memory",
        User = "user",
    }
}

fn text(args: &Value, key: &str) -> Option<String> {
    args.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn parse(args: &Value) -> Result<(MemoryTarget, Action), String> {
    let target = match TargetArg::read(args, "target") {
        Some(TargetArg::Memory) => MemoryTarget::Memory,
        Some(TargetArg::User) => MemoryTarget::User,
        None => return Err("`target` must be \"memory\" or \"user\"".into()),
    };
    let content = || text(args, "content").ok_or("`content` is required for this action");
    let old_text = || text(args, "old_text").ok_or("`old_text` is required for this action");
    let action = match MemoryAction::read(args, "action") {
        Some(MemoryAction::Add) => Action::Add { content: content()? },
        Some(MemoryAction::Replace) => Action::Replace { old_text: old_text()?, content: content()? },
        Some(MemoryAction::Remove) => Action::Remove { old_text: old_text()? },
        None => return Err("`action` must be \"add\", \"replace\" or \"remove\"".into()),
    };
    Ok((target, action))
}

impl SimpleTool for MemoryTool {
    const SPEC: ToolSpec = ToolSpec::new(
        "memory",
        ToolsetName::Memory,
        "Save durable knowledge that should outlive this conversation. It is shown to you at the \
                start of every later session. `target: \"user\"` is the profile of the person you are talking to \
                (name, role, preferences, habits); only they see it. `target: \"memory\"` is your own notes \
                (environment facts, conventions, lessons, completed work) and is shared by everyone who talks \
                to you, so never put anything personal there. Save proactively when you learn something \
                durable or the user asks you to remember; skip trivia, raw dumps and what is easy to look \
                up again. Keep entries compact; when a document is over 80% full, consolidate related entries \
                with `replace`. `replace` and `remove` find the entry by a short unique substring `old_text`.",
    )
    .sequential();

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "action": MemoryAction::schema(),
                "target": TargetArg::schema(),
                "content": { "type": "string", "description": "The entry's text (add, replace)." },
                "old_text": {
                    "type": "string",
                    "description": "A short substring that identifies exactly one existing entry (replace, remove)."
                }
            }),
            &["action", "target"],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let (target, action) = parse(&args).map_err(ToolError::RespondToModel)?;
        let limit = match target {
            MemoryTarget::Memory => self.memory_chars,
            MemoryTarget::User => self.user_chars,
        };
        let mut outcome = None;
        let written = self
            .store
            .agents()
            .update_memory(ctx.tenant_id, ctx.agent_id, target, &self.user_key, |current| {
                match memory::apply(current, &action, limit) {
                    Ok(Applied::Changed { entries, message }) => {
                        outcome = Some(message);
                        Ok(Some(entries))
                    }
                    Ok(Applied::Unchanged { message }) => {
                        outcome = Some(message);
                        Ok(None)
                    }
                    Err(refusal) => Err((refusal, current.to_vec())),
                }
            })
            .await
            .map_err(|e| ToolError::Unavailable(format!("memory cannot be saved right now: {e}")))?;
        let answer = match written {
            Ok(entries) => {
                let mut answer = json!({
                    "success": true,
                    "target": target.as_str(),
                    "message": outcome.unwrap_or("Done."),
                    "entries": entries,
                    "usage": memory::usage_label(&entries, limit),
                });
                if memory::should_consolidate(&entries, limit) {
                    answer["note"] = json!("Over 80% full: consolidate related entries with replace.");
                }
                answer
            }
            Err((refusal, entries)) => {
                if let Refusal::Blocked(reason) = &refusal {
                    tracing::warn!(tenant.id = %ctx.tenant_id, agent.id = %ctx.agent_id, reason, "memory write refused by the scanner");
                    metrics::counter!("hermes_memory_refused_total", "reason" => *reason).increment(1);
                }
                json!({
                    "success": false,
                    "error": refusal.to_string(),
                    "current_entries": entries,
                    "usage": memory::usage_label(&entries, limit),
                })
            }
        };
        Ok(answer.to_string())
    }
}
